import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tasks.report.panel import (
    Differing,
    JudgeRun,
    consensus_grade,
    consensus_grades,
    differing,
    exact_agreement,
    first_status_not_ok,
    group_graders,
    judge_grades,
    panel_grades,
    panel_judges,
    sample_label,
)
from tasks.report.stats import Undefined

NAN = float("nan")


def test_consensus_is_the_median_and_the_lower_middle_of_an_even_count() -> None:
    given = ([1], [0, 1], [1, 0.5], [1, 0, 1], [0, 0.5, 1, 1], [1, 1, 0.5, 0.5], [0.5, 0, 1])
    assert [consensus_grade(grades) for grades in given] == [1, 0, 0.5, 1, 0.5, 0.5, 0.5]


@pytest.mark.parametrize(
    ("grades", "expected"),
    [([1], 1), ([0, 1, 0.5], 0.5), ([1, 0.5], 0.5), ([0, 1], 0), ([1, 1, 0, 0.5], 0.5), ([0.5, 1, 1, 1], 1)],
)
def test_consensus_is_the_median_or_the_lower_middle_grade(grades, expected):
    assert consensus_grade(grades) == expected


def test_consensus_of_no_grade_is_an_error():
    with pytest.raises(ValueError, match="no grades"):
        consensus_grade([])


def test_consensus_of_each_row_skips_the_ungraded() -> None:
    grades = consensus_grades(np.array([[1, NAN, 0], [NAN, NAN, NAN], [0.5, 1, NAN], [1, 1, 0.5]]))
    np.testing.assert_array_equal(grades, [0, NAN, 0.5, 1])


def test_a_panel_grades_only_the_answers_every_grader_graded() -> None:
    """With two judges the lower middle is the lower vote: dropping a missing one would score the answer with
    the other's grade, the top grade when it gave one."""
    grades = panel_grades(np.array([[1, NAN], [1, 0], [NAN, NAN], [0.5, 1], [NAN, 0]]))
    np.testing.assert_array_equal(grades, [NAN, 0, NAN, 0.5, NAN])


def test_an_answer_without_a_panel_grade_counts_under_its_first_grader_status_not_ok() -> None:
    status = np.array([["ok", "unparseable"], ["ok", "ok"], ["judge_cut", "unparseable"], ["ok", None]])
    assert first_status_not_ok(status).tolist() == ["unparseable", "ok", "judge_cut", None]


def test_differing_counts_the_rows_every_grader_graded() -> None:
    assert differing(np.array([[1, 1], [1, 0.5], [NAN, 0], [0, 0]])) == Differing(3, 1, 1 / 3)
    assert differing(np.array([[1, 1, 1], [1, 1, 0]])) == Differing(2, 1, 0.5)
    assert differing(np.array([[NAN, 1.0]])) == Differing(
        0, 0, Undefined("no answer graded by both graders", 0)
    )
    assert differing(np.array([[NAN, 1.0, 1.0], [1.0, NAN, 1.0]]), "turn", "samples") == Differing(
        0, 0, Undefined("no turn graded by all samples", 0)
    )


def test_exact_agreement_is_the_share_of_equal_grades_or_undefined() -> None:
    assert exact_agreement(Differing(4, 1, 0.25)) == 0.75
    assert exact_agreement(Differing(0, 0, Undefined("no turn graded by both judges", 0))) == Undefined(
        "no turn graded by both judges", 0
    )


GRADES = st.sampled_from([0.0, 0.5, 1.0, NAN])


@given(
    st.integers(2, 4).flatmap(
        lambda graders: st.lists(st.lists(GRADES, min_size=graders, max_size=graders), min_size=1, max_size=6)
    )
)
def test_a_missing_grade_never_gives_a_panel_grade(rows) -> None:
    """Total and fail-closed: an answer has a panel grade exactly when every grader graded it."""
    grades = np.array(rows)
    assert (~np.isnan(panel_grades(grades))).tolist() == (~np.isnan(grades).any(axis=1)).tolist()


# A judge's samples: (params, epoch), as a benchmark's manifest gives them.
SAMPLES = st.lists(
    st.tuples(st.fixed_dictionaries({"temperature": st.sampled_from([0, 0.3, 0.7, 1])}), st.integers(0, 3)),
    min_size=1,
    max_size=4,
    unique_by=repr,
)


def judge_run(judge: str, params: dict, epoch: int, index: int) -> JudgeRun:
    return JudgeRun(judge, repr((params, epoch)), judge, judge, sample_label(params, epoch), f"r{index}")


def lower_median(values: list[float]) -> float:
    """The lower median of grades every one of which was given; NaN when any was not."""
    if any(np.isnan(value) for value in values):
        return NAN
    graded = sorted(values)
    return graded[(len(graded) - 1) // 2]


@given(
    st.lists(SAMPLES, min_size=1, max_size=4),
    st.integers(1, 6),
    st.data(),
)
def test_a_panel_has_one_vote_per_judge_whatever_its_samples(judges_samples, n_answers, data) -> None:
    """Whatever params and epochs each judge was sampled at, and in whatever order its runs are given, the
    panel has one judge per (model, rubric), each with its samples, and an answer's panel grade is the lower
    median of the judges' votes, a vote being the lower median of the judge's samples' grades."""
    runs = [
        judge_run(f"judge-{j}", params, epoch, 0)
        for j, samples in enumerate(judges_samples)
        for params, epoch in samples
    ]
    order = data.draw(st.permutations(range(len(runs))))
    given_runs = [runs[i]._replace(run_id=f"r{i}") for i in order]
    grades = np.array(data.draw(st.lists(st.lists(GRADES, min_size=len(runs), max_size=len(runs)),
                                         min_size=n_answers, max_size=n_answers)))  # fmt: skip
    graders = group_graders(given_runs)
    judges = panel_judges(graders, given_runs)
    assert sorted((judge.label, sorted(judge.samples)) for judge in judges) == [
        (f"judge-{j}", sorted(sample_label(params, epoch) for params, epoch in samples))
        for j, samples in enumerate(judges_samples)
    ]
    # Column c of the panel holds the grades of the run(s) of grader c.
    columns = np.column_stack([grades[:, order[indices[0]]] for indices in graders.values()])
    panel = panel_grades(judge_grades(columns, judges))
    votes = [
        [lower_median([grades[answer, i] for i, run in enumerate(runs) if run.judge == f"judge-{j}"])
         for j in range(len(judges_samples))]
        for answer in range(n_answers)
    ]  # fmt: skip
    np.testing.assert_array_equal(panel, [lower_median(row) for row in votes])


@given(st.lists(st.lists(GRADES, min_size=3, max_size=3), min_size=1, max_size=5), st.data())
def test_a_higher_grade_never_lowers_the_panel_grade(grades, data) -> None:
    """Monotone: raising a grade a grader gave an answer never lowers that answer's panel grade."""
    runs = [judge_run("a", {}, 0, 0), judge_run("a", {"temperature": 0.7}, 1, 1), judge_run("b", {}, 0, 2)]
    judges = panel_judges(group_graders(runs), runs)
    before = np.array(grades)
    answer, column = data.draw(st.integers(0, len(grades) - 1)), data.draw(st.integers(0, 2))
    assume(not np.isnan(before[answer, column]))  # a grade given, not one added
    after = before.copy()
    after[answer, column] = data.draw(
        st.sampled_from([g for g in (0.0, 0.5, 1.0) if not g < before[answer, column]])
    )
    old, new = (panel_grades(judge_grades(g, judges))[answer] for g in (before, after))
    assert np.isnan(old) or new >= old
