"""A simulated rater: an offline stand-in for a clinician in the demo and the tests. It is NOT a clinician,
and its ratings say so (rater_kind 'simulated', and a note on every row).

Its grade of an item comes from its own heuristic on the item's physician and model answers: the F1 of
their content words (baselines.content_words), 1 at or above 0.25, 0.5 at or above 0.12, else 0. The
thresholds are below the overlap judge's (0.30 / 0.15), so the two offline graders disagree at the margin
as two readers would. Then, with probability `error_rate`, the grade is replaced by one of the two other
grades drawn uniformly: an error rate known by construction, against which agreement statistics can be
read. Each item's draw is seeded by (seed, rater, item id): the same rater gives the same CSV, and two
raters of one seed err independently.
"""

from typing import Any

from tasks.benchmarks.threadmed.baselines import content_words
from tasks.benchmarks.threadmed.labels.folder import CSV_COLUMNS, GRADE_TEXTS, SIMULATED, grade_text
from tasks.core.safe_text import csv_text
from tasks.report.stats import seeded_rng

FULL_CREDIT_F1 = 0.25
HALF_CREDIT_F1 = 0.12
STREAM = "simulated rater"


def content_f1(physician_answer: str | None, model_answer: str | None) -> float:
    """F1 of the content words two answers share (0 when either has none)."""
    reference, candidate = content_words(physician_answer or ""), content_words(model_answer or "")
    shared = len(reference & candidate)
    return 2 * shared / (len(reference) + len(candidate)) if shared else 0.0


def heuristic_grade(f1: float) -> float:
    return 1.0 if f1 >= FULL_CREDIT_F1 else 0.5 if f1 >= HALF_CREDIT_F1 else 0.0


def simulated_rating(item: dict[str, Any], rater: str, error_rate: float, seed: int) -> tuple[float, str]:
    """The simulated rater's grade of one item (its item_id, physician_answer and answer), and its note."""
    f1 = content_f1(item["physician_answer"], item["answer"])
    grade = heuristic_grade(f1)
    note = f"simulated rater, not a clinician: content-word F1 {f1:.2f}"
    rng = seeded_rng(seed, STREAM, rater, item["item_id"])
    if rng.random() < error_rate:
        grade = float(rng.choice([other for other in GRADE_TEXTS if other != grade]))
        note += f"; grade replaced by a simulated error (error rate {error_rate:g})"
    return grade, note


def simulated_csv(
    items: list[dict[str, Any]], rater: str, error_rate: float, seed: int, rated_at: str
) -> str:
    """The CSV the rating page would export had the simulated rater graded every item, in page order."""
    rows = []
    for item in items:
        grade, note = simulated_rating(item, rater, error_rate, seed)
        rows.append([item["item_id"], rater, SIMULATED, grade_text(grade), note, rated_at])
    return csv_text(CSV_COLUMNS, rows)
