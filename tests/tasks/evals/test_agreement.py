"""Agreement statistics against published and hand-computed values, and their undefined cases."""

import re

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from tasks.evals.agreement import (
    PairAgreement,
    cohen_kappa,
    drift,
    kappa_of_confusions,
    ordinal_alpha,
    pair_agreement,
    scale_positions,
)
from tasks.report.stats import MIN_INTERVAL_ITEMS, BootstrapCI, Undefined, seeded_rng

RUBRIC = (0.0, 0.5, 1.0)
NAN = np.nan


def grades_of(confusion: list[list[int]], scale=RUBRIC) -> tuple[np.ndarray, np.ndarray]:
    """Two graders' grades whose confusion matrix (rows: first grader) is `confusion`."""
    first, second = [], []
    for i, row in enumerate(confusion):
        for j, count in enumerate(row):
            first += [scale[i]] * count
            second += [scale[j]] * count
    return np.array(first), np.array(second)


def test_cohen_1960_two_by_two_example_of_wikipedia():
    """Wikipedia, "Cohen's kappa", simple example: 50 grant proposals, both yes 20, A yes B no 5, A no B
    yes 10, both no 15. p_o = 0.7, p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5, kappa = (0.7 - 0.5) / 0.5 = 0.4."""
    first, second = grades_of([[20, 5], [10, 15]], scale=(1.0, 0.0))  # yes = 1, no = 0
    assert cohen_kappa(first, second, (0.0, 1.0), None) == pytest.approx(0.4)


# rows: first grader's 0 / 0.5 / 1; columns: second's. Row and column totals 3, 3, 4 of 10 items.
HAND = [[2, 1, 0], [0, 2, 1], [1, 0, 3]]


def test_weighted_kappa_by_hand():
    """Expected counts e_ij = row_i * col_j / 10: [[.9, .9, 1.2], [.9, .9, 1.2], [1.2, 1.2, 1.6]].
    Unweighted: p_o = 0.7, p_e = (0.9 + 0.9 + 1.6) / 10 = 0.34, kappa = 0.36 / 0.66 = 6/11.
    Linear (w = |i - j|): observed 1 + 1 + 2 = 4, expected 0.9 + 2.4 + 0.9 + 1.2 + 2.4 + 1.2 = 9,
    1 - 4/9 = 5/9.
    Quadratic (w = (i - j)^2): observed 1 + 1 + 4 = 6, expected 0.9 + 4.8 + 0.9 + 1.2 + 4.8 + 1.2 = 13.8,
    1 - 6 / 13.8 = 13/23."""
    first, second = grades_of(HAND)
    assert cohen_kappa(first, second, RUBRIC, None) == pytest.approx(6 / 11)
    assert cohen_kappa(first, second, RUBRIC, "linear") == pytest.approx(5 / 9)
    assert cohen_kappa(first, second, RUBRIC, "quadratic") == pytest.approx(13 / 23)


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12 units,
# values 1-5, NaN where an observer gave none. Published: nominal 0.743, ordinal 0.815, interval 0.849.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
)


def test_krippendorff_2011_published_values():
    for level, published in (("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)):
        value = krippendorff.alpha(reliability_data=KRIPPENDORFF_2011, level_of_measurement=level)
        assert round(value, 3) == published
    result = ordinal_alpha(KRIPPENDORFF_2011, (1, 2, 3, 4, 5), seeded_rng(0, "alpha"), n_resamples=200)
    # Unit 12 has one value only: 11 units are pairable.
    assert (round(result.estimate, 3), result.n, result.n_resamples) == (0.815, 11, 200)
    assert result.low <= result.estimate <= result.high


def test_the_bootstrap_kappa_formula_is_scikit_learns():
    rng = np.random.default_rng(3)
    first = rng.choice(RUBRIC, 40)
    second = np.where(rng.random(40) < 0.6, first, rng.choice(RUBRIC, 40))
    confusion = np.zeros((1, 3, 3))
    np.add.at(confusion[0], (scale_positions(first, RUBRIC), scale_positions(second, RUBRIC)), 1)
    for weights in (None, "linear", "quadratic"):
        library = cohen_kappa_score(
            scale_positions(first, RUBRIC), scale_positions(second, RUBRIC), weights=weights
        )
        assert kappa_of_confusions(confusion, weights)[0] == pytest.approx(library)


def test_pair_agreement_on_the_hand_example():
    first, second = grades_of(HAND)
    result = pair_agreement(first, second, RUBRIC, seeded_rng(0, "pair"), n_resamples=300)
    assert result.n == 10 and result.confusion == HAND
    assert result.exact.estimate == pytest.approx(0.7)
    assert (result.kappa.estimate, result.kappa_linear.estimate, result.kappa_quadratic.estimate) == (
        pytest.approx(6 / 11),
        pytest.approx(5 / 9),
        pytest.approx(13 / 23),
    )
    for ci in result[1:6]:
        assert ci.low <= ci.estimate <= ci.high and (ci.n, ci.n_resamples) == (10, 300)
    assert result == pair_agreement(first, second, RUBRIC, seeded_rng(0, "pair"), n_resamples=300)


def test_pair_agreement_ignores_items_one_grader_left_ungraded():
    result = pair_agreement(
        np.array([0, 1, NAN, 0.5]), np.array([0, 1, 1, NAN]), RUBRIC, seeded_rng(0, "x"), n_resamples=100
    )
    assert result.n == 2 and result.confusion == [[1, 0, 0], [0, 0, 0], [0, 0, 1]]
    assert result.exact.estimate == 1.0 and result.kappa.estimate == pytest.approx(1.0)


def test_graders_who_never_graded_the_same_item_have_no_agreement_at_all():
    nobody = Undefined("no item graded by both", 0)
    result = pair_agreement(
        np.array([1, NAN]), np.array([NAN, 0]), RUBRIC, seeded_rng(0, "x"), n_resamples=100
    )
    assert result == PairAgreement(
        0, nobody, nobody, nobody, nobody, nobody, [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
    )


def test_a_grader_who_gives_one_grade_only_has_no_chance_corrected_agreement():
    """Raters who grade everything 1: scikit-learn's kappa is 0 (every kappa is, whatever the judge does) and
    krippendorff's alpha -0.16 here; neither measures agreement, so both are undefined, with the reason."""
    judge = np.array([1, 0.5, 1, 0, 1, 1, 1, 0.5, 1, 1, 1, 1])
    raters = np.ones(12)
    result = pair_agreement(judge, raters, RUBRIC, seeded_rng(0, "x"), n_resamples=100, names=("J1", "R1"))
    constant = Undefined(
        "R1 gave only 1 on the 12 items, so there is no agreement beyond chance to measure", 12
    )
    assert result[2:6] == (constant, constant, constant, constant)
    assert (result.exact.estimate, result.exact.n) == (9 / 12, 12) and result.exact.low is not None
    both = pair_agreement(raters, raters, RUBRIC, seeded_rng(0, "x"), n_resamples=100, names=("J1", "R1"))
    assert both.kappa == Undefined(
        "J1 and R1 gave only 1 on the 12 items, so there is no agreement beyond chance to measure", 12
    )


def test_fewer_items_than_the_minimum_give_no_interval():
    one = pair_agreement(np.array([1.0]), np.array([1.0]), RUBRIC, seeded_rng(0, "x"), n_resamples=100)
    assert one.exact == BootstrapCI(1.0, None, None, 1, 100, "1 item, fewer than 10")
    assert one.kappa == one.alpha_ordinal == Undefined("1 item graded by both, fewer than 2", 1)
    first, second = grades_of([[3, 1, 0], [0, 2, 0], [1, 0, 2]])  # 9 items
    nine = pair_agreement(first, second, RUBRIC, seeded_rng(0, "x"), n_resamples=100)
    assert nine.kappa == BootstrapCI(nine.kappa.estimate, None, None, 9, 100, "9 items, fewer than 10")
    first, second = grades_of(HAND)  # 10 items
    ten = pair_agreement(first, second, RUBRIC, seeded_rng(0, "x"), n_resamples=100)
    assert all(ci.low is not None and ci.no_interval is None for ci in ten[1:6])


def test_alpha_over_raters_who_all_give_one_grade_is_undefined():
    assert ordinal_alpha(np.ones((3, 12)), RUBRIC, seeded_rng(0, "x"), n_resamples=100) == Undefined(
        "every grade given was 1, so there is no disagreement to expect", 12
    )
    assert ordinal_alpha(np.array([[1, NAN], [NAN, 0]]), RUBRIC, seeded_rng(0, "x")) == Undefined(
        "no item graded twice or more", 0
    )


PAIRS = st.integers(0, 30).flatmap(
    lambda n: st.tuples(*(st.lists(st.sampled_from([0.0, 0.5, 1.0, NAN]), min_size=n, max_size=n),) * 2)
)


@settings(max_examples=40)
@given(PAIRS)
def test_every_statistic_is_defined_with_a_bounded_interval_or_undefined_with_a_reason(pair):
    """Total: whatever two graders gave, each statistic is Undefined with a reason, or an estimate whose
    interval exists exactly when at least MIN_INTERVAL_ITEMS items were graded by both (and it holds the
    estimate); a grader who gave one grade only leaves every kappa and alpha undefined."""
    first, second = (np.array(grades, dtype=float) for grades in pair)
    result = pair_agreement(first, second, RUBRIC, seeded_rng(0, "p"), n_resamples=100)
    both = ~np.isnan(first) & ~np.isnan(second)
    assert result.n == int(both.sum())
    constant = result.n and min(len(set(first[both])), len(set(second[both]))) == 1
    for name, value in zip(PairAgreement._fields[1:6], result[1:6], strict=True):
        if isinstance(value, Undefined):
            assert value.reason and value.n == result.n
            assert result.n == 0 or (name != "exact" and (constant or result.n < 2)), name
            continue
        assert value.estimate is not None and np.isfinite(value.estimate) and value.n == result.n
        assert not (name != "exact" and constant)
        if value.low is None:
            assert value.no_interval
        else:
            assert result.n >= MIN_INTERVAL_ITEMS and value.low <= value.high


@pytest.mark.parametrize(
    "statistic",
    [
        lambda first, second: cohen_kappa(first, second, RUBRIC, None),
        lambda first, second: pair_agreement(first, second, RUBRIC, seeded_rng(0, "p"), n_resamples=100),
        lambda first, second: ordinal_alpha(np.vstack([first, second]), RUBRIC, seeded_rng(0, "a")),
    ],
    ids=["kappa", "pair", "alpha"],
)
def test_a_grade_off_the_scale_is_refused(statistic):
    """Alpha counted it as not graded: its estimate came from the other four items, the 0.7 dropped."""
    first, second = np.array([0, 1, 0.5, 1, 0.7]), np.array([0, 1, 0.5, 0, 1])
    with pytest.raises(ValueError, match=r"^grade 0.7 is not on the scale \[0.0, 0.5, 1.0\]$"):
        statistic(first, second)


OFF_SCALE = st.floats(allow_nan=False).filter(lambda grade: grade not in RUBRIC)


@given(grades=st.lists(st.sampled_from([0.0, 0.5, 1.0, NAN]), min_size=6, max_size=6), off=OFF_SCALE,
       at=st.integers(0, 5))  # fmt: skip
def test_any_grade_off_the_scale_is_refused_wherever_it_is(grades, off, at):
    """Even beside a NaN of the other grader, where the pair has no item to compare."""
    graded = np.array(grades, dtype=float)
    graded[at] = off
    first, second = graded[:3], graded[3:]
    message = rf"^grade {re.escape(str(off))} is not on the scale \[0.0, 0.5, 1.0\]$"
    with pytest.raises(ValueError, match=message):
        ordinal_alpha(np.vstack([first, second]), RUBRIC, seeded_rng(0, "a"), n_resamples=100)
    with pytest.raises(ValueError, match=message):
        pair_agreement(first, second, RUBRIC, seeded_rng(0, "p"), n_resamples=100)


def test_drift_is_the_share_of_items_whose_grade_changes():
    # Items x repeated gradings: item 2 changes, item 4 was graded once (left out), item 5 changes.
    gradings = np.array([[1, 1, 1], [0, 0.5, 0], [0, 0, NAN], [1, NAN, NAN], [0.5, 0.5, 1]])
    result = drift(gradings, seeded_rng(0, "drift"), n_resamples=200)
    assert result == BootstrapCI(0.5, None, None, 4, 200, "4 items, fewer than 10")
    ten = drift(np.vstack([gradings] * 3), seeded_rng(0, "drift"), n_resamples=200)
    assert (ten.estimate, ten.n, ten.low is not None) == (0.5, 12, True)
    assert drift(np.array([[1, NAN]]), seeded_rng(0, "drift"), n_resamples=200) == Undefined(
        "no item graded twice or more", 0
    )
