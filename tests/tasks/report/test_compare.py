"""The shared comparison on hand-made scores: paired differences, scipy's paired tests, the items that
differ most, and the refusal of runs over different items."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from tasks.core.preflight import UserError
from tasks.report.compare import (
    GRADED,
    PASS_FAIL,
    STATISTIC,
    CompareSettings,
    Comparison,
    ItemScore,
    Metric,
    check_same_items,
    difference_rows,
    differences_caption,
    differing_item_rows,
)

SETTINGS = CompareSettings(n_resamples=200, seed=7)
# Per model, the graded score of items i0..i7 (threads t0..t3, two items each; i0-i3 'early', i4-i7 'late').
GRADES = {
    "a": [1.0, 1.0, 0.5, 1.0, 0.5, 1.0, 0.0, 1.0],
    "b": [0.5, 0.5, 0.0, 0.5, 0.0, 0.5, None, 0.5],  # 0.5 below a everywhere; i6 unscored
    "c": [1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 1.0, 0.5],
}


def scores(grades: dict[str, list[float | None]], metric: str = "score") -> list[ItemScore]:
    return [
        ItemScore(
            metric=metric,
            stratum="baseline",
            group="early" if i < 4 else "late",
            item=f"i{i}",
            cluster=f"t{i // 2}",
            model=model,
            score=score,
            locator=f"item=i{i}",
        )
        for model, values in grades.items()
        for i, score in enumerate(values)
    ]


def comparison(metrics: list[Metric], rows: list[ItemScore]) -> Comparison:
    return Comparison("Bench", metrics, ["a", "b", "c"], rows, {})


def test_a_constant_difference_has_a_point_interval_and_scipys_p_value() -> None:
    rows = difference_rows(comparison([Metric("score", GRADED)], scores(GRADES)), ["a", "b"], SETTINGS)
    a = np.array([1.0, 1.0, 0.5, 1.0, 0.5, 1.0, 1.0])  # the 7 items b scored (i6 is not)
    common = {"model_a": "a", "model_b": "b", "metric": "score", "stratum": "baseline", "test": "Wilcoxon"}

    def expected(group: str, scored: slice) -> dict:
        test = stats.wilcoxon(a[scored], a[scored] - 0.5)
        return {
            **common, "group": group, "n_pairs": len(a[scored]), "mean_a": pytest.approx(a[scored].mean()),
            "mean_b": pytest.approx(a[scored].mean() - 0.5), "difference": 0.5, "ci_low": 0.5, "ci_high": 0.5,
            "statistic": test.statistic, "p_value": test.pvalue,
        }  # fmt: skip

    assert rows == [
        expected("all", slice(None)),
        expected("early", slice(0, 4)),
        expected("late", slice(4, None)),
    ]
    assert rows[0]["p_value"] == pytest.approx(0.015625)  # 2 / 2**7: every one of 7 pairs in one direction


def test_pass_fail_scores_get_mcnemar_and_a_seeded_interval_over_clusters() -> None:
    passed = {"a": [1, 1, 0, 1, 1, 1, 0, 1], "c": [0, 1, 0, 0, 1, 0, 1, 1]}
    rows = difference_rows(
        comparison([Metric("pass", PASS_FAIL)], scores(passed, "pass")), ["a", "c"], SETTINGS
    )
    overall = rows[0]
    assert {key: overall[key] for key in ("group", "n_pairs", "mean_a", "mean_b", "difference", "test")} == {
        "group": "all", "n_pairs": 8, "mean_a": 0.75, "mean_b": 0.5, "difference": 0.25,
        "test": "McNemar exact",
    }  # fmt: skip
    # Three pairs only a passes (i0, i3, i5), one only c passes (i6).
    assert (overall["statistic"], overall["p_value"]) == (3.0, stats.binomtest(3, 4, 0.5).pvalue)
    assert overall["ci_low"] < 0.25 < overall["ci_high"]
    again = difference_rows(
        comparison([Metric("pass", PASS_FAIL)], scores(passed, "pass")), ["a", "c"], SETTINGS
    )
    assert again == rows


def test_the_items_that_differ_most_come_first_with_their_side_by_side_link() -> None:
    rows = differing_item_rows(comparison([Metric("score", GRADED)], scores(GRADES)), ["a", "c"], limit=3)
    assert [(row["item"], row["score_a"], row["score_b"], row["difference"]) for row in rows] == [
        ("i1", 1.0, 0.0, 1.0),
        ("i6", 0.0, 1.0, -1.0),
        ("i4", 0.5, 0.0, 0.5),
    ]
    assert rows[0]["link"] == "#compare?a=a&b=c&item=i1"


def ratio(means: np.ndarray) -> np.ndarray:
    """A statistic of two parts' means that is not a mean of per-item values: hits over tries."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(means[..., 1] > 0, means[..., 0] / means[..., 1], np.nan)


RATIO = Metric("ratio", STATISTIC, ("hits", "tries"), ratio)


def part_scores(values: dict[str, list[tuple[float | None, float | None] | None]]) -> list[ItemScore]:
    """Per model, each item's (hits, tries) (None in a pair: undefined on the item; None: no rows, as for a
    failed episode); items i0..i5 in clusters t0..t2."""
    return [
        ItemScore(metric, "", "", f"i{i}", f"t{i // 2}", model, value, f"item=i{i}")
        for model, items in values.items()
        for i, pair in enumerate(items)
        if pair is not None
        for metric, value in zip(("hits", "tries"), pair, strict=True)
    ]


RATIOS = {
    "a": [(1.0, 2.0), (3.0, 3.0), (0.0, 1.0), (None, 2.0), (2.0, 4.0), (1.0, 1.0)],
    "b": [(1.0, 4.0), (1.0, 3.0), (0.0, 1.0), (1.0, 2.0), None, (0.0, 1.0)],
}


def test_a_statistic_is_recomputed_from_the_parts_means_over_the_pairs() -> None:
    [row] = difference_rows(
        Comparison("Bench", [RATIO], ["a", "b"], part_scores(RATIOS), {}), ["a", "b"], SETTINGS
    )
    # Pairs: i0, i1, i2, i3, i5 (b has no rows of i4). a's hits are undefined on i3: left out of their mean,
    # not of the pairs. a: (1 + 3 + 0 + 1) / 4 hits over (2 + 3 + 1 + 2 + 1) / 5 tries; b: 3 / 5 over 11 / 5.
    mean_a, mean_b = (5 / 4) / (9 / 5), (3 / 5) / (11 / 5)
    assert {key: row[key] for key in ("n_pairs", "mean_a", "mean_b", "difference", "test")} == {
        "n_pairs": 5,
        "mean_a": pytest.approx(mean_a),
        "mean_b": pytest.approx(mean_b),
        "difference": pytest.approx(mean_a - mean_b),
        "test": "paired bootstrap",
    }
    # Not the mean of the items' own ratios (a: .5, 1, 0, undefined, 1 -> .625).
    assert row["mean_a"] != pytest.approx(0.625)
    assert row["ci_low"] < row["difference"] < row["ci_high"]
    assert row["statistic"] == row["difference"] and 0 < row["p_value"] <= 1
    again = difference_rows(
        Comparison("Bench", [RATIO], ["a", "b"], part_scores(RATIOS), {}), ["a", "b"], SETTINGS
    )
    assert again == [row]  # seeded


def test_a_constant_shift_of_a_statistic_has_a_point_interval_and_the_smallest_p() -> None:
    shifted = {"a": [(1.0, 1.0)] * 6, "b": [(0.5, 1.0)] * 6}
    [row] = difference_rows(
        Comparison("Bench", [RATIO], ["a", "b"], part_scores(shifted), {}), ["a", "b"], SETTINGS
    )
    # Every resample's difference is 0.5: none is as far from it as it is from 0.
    assert {key: row[key] for key in ("difference", "ci_low", "ci_high", "p_value")} == {
        "difference": 0.5,
        "ci_low": 0.5,
        "ci_high": 0.5,
        "p_value": 1 / (1 + SETTINGS.n_resamples),
    }
    same = {"a": shifted["a"], "b": shifted["a"]}
    [tie] = difference_rows(
        Comparison("Bench", [RATIO], ["a", "b"], part_scores(same), {}), ["a", "b"], SETTINGS
    )
    assert (tie["difference"], tie["statistic"], tie["p_value"]) == (0.0, None, None)  # no pair differs


def test_the_items_that_differ_most_on_a_statistic_are_scored_by_their_own_values() -> None:
    comparison = Comparison("Bench", [RATIO], ["a", "b"], part_scores(RATIOS), {})
    rows = differing_item_rows(comparison, ["a", "b"])
    # i0: .5 vs .25, i1: 1 vs 1/3, i5: 1 vs 0; i2 ties; i3 is undefined for a.
    assert [(row["item"], row["score_a"], row["score_b"]) for row in rows] == [
        ("i5", 1.0, 0.0),
        ("i1", 1.0, pytest.approx(1 / 3)),
        ("i0", 0.5, 0.25),
    ]


GRADE = st.sampled_from([0.0, 0.5, 1.0])


# Up to 8 items, the two groups' whole: scipy's Wilcoxon of n tied pairs enumerates 2**n sign flips (n <= 13),
# so each 12-item example cost 0.8 s of the test's 4-18 s.
@given(st.lists(st.tuples(GRADE, GRADE), min_size=1, max_size=8))
def test_a_statistic_of_one_mean_is_the_graded_comparison_of_its_items(pairs) -> None:
    grades = {"a": [a for a, _ in pairs], "b": [b for _, b in pairs]}
    mean = Metric("score", STATISTIC, ("score",), lambda means: means[..., 0])
    settings = CompareSettings(n_resamples=100, seed=1)
    statistic = difference_rows(comparison([mean], scores(grades)), ["a", "b"], settings)
    graded = difference_rows(comparison([Metric("score", GRADED)], scores(grades)), ["a", "b"], settings)
    keys = ("group", "n_pairs", "mean_a", "mean_b", "difference")
    assert [{key: pytest.approx(row[key]) for key in keys} for row in statistic] == [
        {key: row[key] for key in keys} for row in graded
    ]
    for row in statistic:  # the items of its group: early i0-i3, late i4-i7
        items = [
            i for i in range(len(pairs)) if row["group"] == "all" or (i < 4) == (row["group"] == "early")
        ]
        differ = any(grades["a"][i] != grades["b"][i] for i in items)
        assert (row["p_value"] is not None) == differ
        assert row["p_value"] is None or 1 / 101 <= row["p_value"] <= 1


def test_the_caption_names_the_tests_its_rows_hold() -> None:
    caption = differences_caption([{"test": "paired bootstrap"}], 0.95)
    assert "the paired bootstrap" in caption and "Wilcoxon" not in caption and "independent" not in caption
    both = differences_caption([{"test": "Wilcoxon"}, {"test": "McNemar exact"}], 0.9)
    assert "90% paired bootstrap interval" in both and "bootstrap: each resample" not in both
    assert both.endswith("Wilcoxon and McNemar exact: items treated as independent.")


def test_runs_over_different_items_are_refused_naming_the_difference() -> None:
    check_same_items([("r1", {"t1", "t2"}), ("r2", {"t2", "t1"})], "thread")
    with pytest.raises(
        UserError, match=r"^run r2 lacks 2 threads: t1, t3; compare runs over the same threads$"
    ):
        check_same_items([("r1", {"t1", "t2", "t3"}), ("r2", {"t2", "t4"})], "thread")
    with pytest.raises(UserError, match=r"^run r1 lacks 1 case: c9;"):
        check_same_items([("r1", {"c1"}), ("r2", {"c1"}), ("r3", {"c1", "c9"})], "case")
