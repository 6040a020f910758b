import csv
import io

from tasks.benchmarks.threadmed.labels.folder import CSV_COLUMNS
from tasks.benchmarks.threadmed.labels.simulate import (
    content_f1,
    heuristic_grade,
    simulated_csv,
    simulated_rating,
)

PHYSICIAN = "Rest the knee, ice it twice daily and take ibuprofen."


def item(item_id: str, answer: str) -> dict:
    return {"item_id": item_id, "physician_answer": PHYSICIAN, "answer": answer}


def test_the_heuristic_grades_content_word_f1_at_its_own_thresholds() -> None:
    assert content_f1(PHYSICIAN, "Rest the knee and ice it.") == 2 * 3 / (7 + 3)  # shared: rest, knee, ice
    assert content_f1(PHYSICIAN, None) == 0.0
    assert [heuristic_grade(f1) for f1 in (0.0, 0.11, 0.12, 0.24, 0.25, 1.0)] == [
        0.0,
        0.0,
        0.5,
        0.5,
        1.0,
        1.0,
    ]


def test_without_errors_the_grade_is_the_heuristics_and_the_note_says_simulated() -> None:
    assert simulated_rating(item("i1", "Rest the knee and ice it."), "sim", 0.0, seed=0) == (
        1.0,
        "simulated rater, not a clinician: content-word F1 0.60",
    )


def test_an_error_replaces_the_grade_by_another_and_says_so() -> None:
    items = [item(f"i{i}", "Rest the knee and ice it.") for i in range(30)]
    ratings = [simulated_rating(x, "sim", 1.0, seed=0) for x in items]
    assert {grade for grade, _ in ratings} == {0.0, 0.5}  # both other grades, never the heuristic's
    assert all(note.endswith("; grade replaced by a simulated error (error rate 1)") for _, note in ratings)


def test_errors_are_seeded_by_seed_and_rater() -> None:
    items = [item(f"i{i}", "Rest the knee and ice it.") for i in range(40)]

    def grades(rater: str, seed: int) -> list[float]:
        return [simulated_rating(x, rater, 0.5, seed)[0] for x in items]

    assert grades("a", 1) == grades("a", 1)
    assert grades("a", 1) != grades("b", 1)
    assert grades("a", 1) != grades("a", 2)


def test_the_csv_is_the_pages_export_with_rater_kind_simulated() -> None:
    text = simulated_csv(
        [item("i1", "Rest the knee and ice it."), item("i2", "Drink water.")], "sim", 0.0, 0, "T"
    )
    assert list(csv.reader(io.StringIO(text))) == [
        list(CSV_COLUMNS),
        ["i1", "sim", "simulated", "1", "simulated rater, not a clinician: content-word F1 0.60", "T"],
        ["i2", "sim", "simulated", "0", "simulated rater, not a clinician: content-word F1 0.00", "T"],
    ]
