"""The shared comparison on hand-made scores: paired differences, scipy's paired tests, the items that
differ most, and the refusal of runs over different items."""

import numpy as np
import pytest
from scipy import stats

from tasks.core.preflight import UserError
from tasks.report.compare import (
    GRADED,
    PASS_FAIL,
    CompareSettings,
    Comparison,
    ItemScore,
    Metric,
    check_same_items,
    difference_rows,
    differing_item_rows,
    mcnemar_test,
    wilcoxon_test,
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


def test_wilcoxon_is_scipys_signed_rank_test_and_undefined_without_a_difference() -> None:
    a, b = np.array([1, 0.5, 1, 0, 1, 0.5]), np.array([0, 0.5, 0.5, 0, 0, 0])
    expected = stats.wilcoxon(a, b, alternative="two-sided")
    assert wilcoxon_test(a, b) == ("Wilcoxon", expected.statistic, expected.pvalue, 6)
    assert wilcoxon_test(a, a) is None


def test_mcnemar_is_the_exact_binomial_test_of_the_discordant_pairs() -> None:
    a = np.array([1, 1, 1, 1, 1, 0, 0, 1, 0])
    b = np.array([0, 0, 0, 0, 1, 1, 0, 1, 0])
    # Discordant: four pairs only a passes, one only b passes.
    assert mcnemar_test(a, b) == ("McNemar exact", 4.0, stats.binomtest(4, 5, 0.5).pvalue, 9)
    assert mcnemar_test(a, b).p_value == pytest.approx(0.375)
    assert mcnemar_test(a, a) is None


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


def test_runs_over_different_items_are_refused_naming_the_difference() -> None:
    check_same_items([("r1", {"t1", "t2"}), ("r2", {"t2", "t1"})], "thread")
    with pytest.raises(
        UserError, match=r"^run r2 lacks 2 threads: t1, t3; compare runs over the same threads$"
    ):
        check_same_items([("r1", {"t1", "t2", "t3"}), ("r2", {"t2", "t4"})], "thread")
    with pytest.raises(UserError, match=r"^run r1 lacks 1 case: c9;"):
        check_same_items([("r1", {"c1"}), ("r2", {"c1"}), ("r3", {"c1", "c9"})], "case")
