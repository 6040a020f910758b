import numpy as np
import pytest

from tasks.report.panel import Differing, consensus_grade, consensus_grades, differing

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


def test_differing_counts_the_rows_every_grader_graded() -> None:
    assert differing(np.array([[1, 1], [1, 0.5], [NAN, 0], [0, 0]])) == Differing(3, 1, 1 / 3)
    assert differing(np.array([[1, 1, 1], [1, 1, 0]])) == Differing(2, 1, 0.5)
    assert differing(np.array([[NAN, 1.0]])) == Differing(0, 0, None)
