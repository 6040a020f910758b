"""Case and run scores on tiny hand-worked outcomes."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.snomed.scoring import (
    CaseOutcome,
    CaseScore,
    ConditionRecall,
    F1ByGoldCount,
    score_case,
    score_outcome,
    summarise_run,
)
from tasks.report.stats import BootstrapCI, seeded_rng

SINUSITIS, BRONCHITIS, HYPERTENSION, ANEMIA = "444814009", "10509002", "59621000", "271737000"


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        ([SINUSITIS, BRONCHITIS], [BRONCHITIS, SINUSITIS], CaseScore(1.0, 1.0, 1.0, 1.0, 2, 2, 2, False)),
        ([SINUSITIS, ANEMIA], [SINUSITIS, BRONCHITIS], CaseScore(0.0, 0.5, 0.5, 0.5, 2, 2, 1, False)),
        ([SINUSITIS], [SINUSITIS, BRONCHITIS], CaseScore(0.0, 1.0, 0.5, 2 / 3, 1, 2, 1, False)),
        ([ANEMIA], [SINUSITIS], CaseScore(0.0, 0.0, 0.0, 0.0, 1, 1, 0, False)),
        ([], [SINUSITIS], CaseScore(0.0, 0.0, 0.0, 0.0, 0, 1, 0, False)),
        ([], [], CaseScore(1.0, 1.0, 1.0, 1.0, 0, 0, 0, True)),
        ([SINUSITIS], [], CaseScore(0.0, 0.0, 1.0, 0.0, 1, 0, 0, True)),
        # an invalid code is a wrong prediction; a repeated code counts once
        (["99999999999", SINUSITIS, SINUSITIS], [SINUSITIS], CaseScore(0.0, 0.5, 1.0, 2 / 3, 2, 1, 1, False)),
    ],
)
def test_score_case(predicted, gold, expected):
    assert score_case(predicted, gold) == pytest.approx(expected)


def test_no_answer_is_scored_as_an_empty_prediction():
    outcome = CaseOutcome("c1", 0, "no_answer", (SINUSITIS,), (SINUSITIS,))
    assert score_outcome(outcome) == CaseScore(0.0, 0.0, 0.0, 0.0, 0, 1, 0, False)


@pytest.mark.parametrize("status", ["no_answer", "unparseable"])
def test_a_case_with_no_gold_code_and_no_readable_answer_scores_nothing(status):
    """An empty gold with an empty prediction is perfect only when the model gave that answer: without a
    readable one it failed the task."""
    unanswered, answered = (CaseOutcome("c1", 0, given, (), ()) for given in (status, "answered"))
    assert score_outcome(unanswered) == CaseScore(0.0, 0.0, 0.0, 0.0, 0, 0, 0, True)
    assert score_outcome(answered) == CaseScore(1.0, 1.0, 1.0, 1.0, 0, 0, 0, True)


CODES = st.lists(st.sampled_from([SINUSITIS, BRONCHITIS, HYPERTENSION, ANEMIA]), max_size=3).map(tuple)


@given(st.sampled_from(["no_answer", "unparseable"]), CODES, CODES)
def test_an_interview_without_a_readable_answer_never_scores(status, predicted, gold):
    score = score_outcome(CaseOutcome("c1", 0, status, predicted, gold))
    assert (score.exact_match, score.precision, score.recall, score.f1, score.n_predicted) == (0, 0, 0, 0, 0)


def test_an_unparseable_final_answer_is_scored_as_an_empty_prediction_and_counted_apart():
    outcomes = [
        CaseOutcome("c1", 0, "unparseable", (), (SINUSITIS,), n_questions=4),
        CaseOutcome("c2", 0, "answered", (SINUSITIS,), (SINUSITIS,), n_questions=2),
    ]
    assert score_outcome(outcomes[0]) == CaseScore(0.0, 0.0, 0.0, 0.0, 0, 1, 0, False)
    metrics = summarise_run(outcomes, seeded_rng(0, "run"), n_resamples=10)
    assert (metrics.n_cases, metrics.n_unparseable, metrics.no_answer_rate, metrics.f1.estimate) == (
        2,
        1,
        0.0,
        0.5,
    )


OUTCOMES = [
    # c1: perfect, 3 questions, 3 replies, none leaking
    CaseOutcome("c1", 0, "answered", (SINUSITIS, BRONCHITIS), (SINUSITIS, BRONCHITIS), (), (), 3, 3, 0),
    # c2: one right, one invalid and malformed; P = R = F1 = 0.5
    CaseOutcome(
        "c2",
        0,
        "answered",
        (SINUSITIS, "44054007"),
        (SINUSITIS, HYPERTENSION),
        ("44054007",),
        ("44054007",),
        5,
        5,
        1,
    ),
    # c3: no final answer: empty prediction, all zero
    CaseOutcome("c3", 0, "no_answer", (), (HYPERTENSION,), (), (), 20, 20, 0),
    # c4: empty gold and empty prediction: perfect; its answer held a name, not a code
    CaseOutcome("c4", 0, "answered", (), (), (), (), 2, 2, 1, ("Hypertension",)),
    # c5: provider failure: counted, not scored
    CaseOutcome("c5", 0, "failed", (ANEMIA,), (ANEMIA,), (), (), 1, 1, 1),
]


def test_summarise_run_whole_value():
    metrics = summarise_run(OUTCOMES, seeded_rng(0, "run"), n_resamples=200)
    point = {name: getattr(metrics, name).estimate for name in ("exact_match", "precision", "recall", "f1")}
    assert point == pytest.approx({"exact_match": 0.5, "precision": 0.625, "recall": 0.625, "f1": 0.625})
    assert metrics.f1.n == 4 and metrics.f1.n_resamples == 200
    assert metrics.f1.low <= 0.625 <= metrics.f1.high
    assert metrics[:4] == (4, 1, 0, 1)  # n_cases, n_failed, n_unparseable, n_empty_gold
    # micro P, R, F1, invalid, malformed, not a code (1 of 4 codes + 1 item), no-answer, questions, leaks
    rates = metrics[8:17]
    assert rates == pytest.approx((3 / 4, 3 / 5, 2 / 3, 1 / 4, 1 / 4, 1 / 5, 1 / 4, 30 / 4, 2 / 30))
    assert metrics.n_unverified_replies == 0
    assert metrics.condition_recall == (
        ConditionRecall(SINUSITIS, 2, 2, 0, 1.0),  # ties: by code
        ConditionRecall(HYPERTENSION, 2, 0, 2, 0.0),
        ConditionRecall(BRONCHITIS, 1, 1, 0, 1.0),
    )
    assert metrics.f1_by_gold_count == (
        F1ByGoldCount(0, 1, 1.0),
        F1ByGoldCount(1, 1, 0.0),
        F1ByGoldCount(2, 2, 0.75),
    )


def test_the_leak_rate_is_a_share_of_the_replies_the_leak_check_read_whole_or_found_a_leak_in():
    # c3's 20 replies: 5 held letters the check cannot read and named nothing it read
    outcomes = [*OUTCOMES[:2], OUTCOMES[2]._replace(n_unverified_replies=5), *OUTCOMES[3:]]
    metrics = summarise_run(outcomes, seeded_rng(0, "run"), n_resamples=10)
    assert (metrics.leak_rate, metrics.n_unverified_replies) == (2 / 25, 5)


def test_summarise_run_is_seeded_and_resamples_cases_not_epochs():
    # Two epochs of one case agree perfectly: resampling by case gives the same interval as one epoch each.
    doubled = [o._replace(epoch=e) for o in OUTCOMES for e in (0, 1)]
    once = summarise_run(OUTCOMES, np.random.default_rng(7), n_resamples=500)
    twice = summarise_run(doubled, np.random.default_rng(7), n_resamples=500)
    assert once == summarise_run(OUTCOMES, np.random.default_rng(7), n_resamples=500)
    assert twice.f1[:3] == once.f1[:3]
    assert twice.f1.n == 8


def test_summarise_run_with_nothing_scored():
    metrics = summarise_run([OUTCOMES[-1]], np.random.default_rng(0), n_resamples=10)
    assert metrics.f1 == BootstrapCI(None, None, None, 0, 10)
    assert (metrics.n_cases, metrics.n_failed, metrics.micro_f1, metrics.leak_rate) == (0, 1, None, None)
    assert (metrics.condition_recall, metrics.f1_by_gold_count) == ((), ())
