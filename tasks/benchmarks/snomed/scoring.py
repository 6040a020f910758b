"""Scores of the SNOMED benchmark: per case (exact match, precision, recall, F1) and per run of one model.

Pure functions. Invalid predicted codes stay in the predicted set, so they count as wrong predictions.
Cases whose status is `failed` (a provider failure) are not scored; `no_answer` and `unparseable` (a final
answer that could not be read whole) are empty predictions that never score: the model failed the task
(snomed.md), so a case with no gold code does not make them perfect.
Rates with nothing to count are None, never NaN.
"""

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np

from tasks.report.stats import N_RESAMPLES, BootstrapCI, bootstrap_mean

CaseStatus = Literal["answered", "no_answer", "unparseable", "failed"]


class CaseScore(NamedTuple):
    """One case's scores; `empty_gold` cases are perfect only when the prediction is empty too."""

    exact_match: float
    precision: float
    recall: float
    f1: float
    n_predicted: int
    n_gold: int
    n_correct: int
    empty_gold: bool


class CaseOutcome(NamedTuple):
    """What one interview of one case (one epoch) produced, as the run stores it."""

    case_id: str
    epoch: int
    status: CaseStatus
    predicted_codes: tuple[str, ...]
    gold_codes: tuple[str, ...]
    invalid_codes: tuple[str, ...] = ()
    malformed_codes: tuple[str, ...] = ()
    n_questions: int = 0
    n_patient_replies: int = 0
    n_leaking_replies: int = 0
    not_codes: tuple[str, ...] = ()  # final-answer items that offered no code
    n_unverified_replies: int = 0  # replies the leak check could not read whole and found nothing in


class ConditionRecall(NamedTuple):
    """How often one gold condition was found among the cases that have it."""

    code: str
    n_gold: int
    n_found: int
    n_missed: int
    recall: float


class F1ByGoldCount(NamedTuple):
    n_gold: int
    n_cases: int
    mean_f1: float


class RunMetrics(NamedTuple):
    """One model's metrics over one run; macro means come with bootstrap intervals over cases."""

    n_cases: int
    n_failed: int
    n_unparseable: int  # scored interviews whose final answer could not be read whole
    n_empty_gold: int
    exact_match: BootstrapCI
    precision: BootstrapCI
    recall: BootstrapCI
    f1: BootstrapCI
    micro_precision: float | None
    micro_recall: float | None
    micro_f1: float | None
    invalid_code_rate: float | None
    malformed_code_rate: float | None
    not_code_rate: float | None
    no_answer_rate: float | None
    mean_questions: float | None
    leak_rate: float | None
    n_unverified_replies: int  # patient replies left out of the leak rate: not read whole, nothing found
    condition_recall: tuple[ConditionRecall, ...]
    f1_by_gold_count: tuple[F1ByGoldCount, ...]


def f1_score(precision: float, recall: float) -> float:
    """Harmonic mean; 0 when both are 0."""
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


def score_case(predicted: Sequence[str], gold: Sequence[str]) -> CaseScore:
    """Scores of one predicted code set against one gold set.

    Precision is 0 when nothing is predicted but gold is not empty; recall is 1 when gold is empty (there
    was nothing to find), so an empty gold with an empty prediction is perfect and one with predictions
    scores precision 0, F1 0.
    """
    predicted_set, gold_set = set(predicted), set(gold)
    n_correct = len(predicted_set & gold_set)
    precision = n_correct / len(predicted_set) if predicted_set else float(not gold_set)
    recall = n_correct / len(gold_set) if gold_set else 1.0
    return CaseScore(
        exact_match=float(predicted_set == gold_set),
        precision=precision,
        recall=recall,
        f1=f1_score(precision, recall),
        n_predicted=len(predicted_set),
        n_gold=len(gold_set),
        n_correct=n_correct,
        empty_gold=not gold_set,
    )


def score_outcome(outcome: CaseOutcome) -> CaseScore:
    """Score of a non-failed outcome. One without a readable final answer is an empty prediction scored 0 on
    every measure: an empty gold would otherwise make a failed task a perfect case (`score_case`)."""
    if outcome.status == "answered":
        return score_case(outcome.predicted_codes, outcome.gold_codes)
    return score_case((), outcome.gold_codes)._replace(exact_match=0.0, precision=0.0, recall=0.0, f1=0.0)


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def _condition_recall(outcomes: Sequence[CaseOutcome]) -> tuple[ConditionRecall, ...]:
    gold_counts: Counter[str] = Counter()
    found_counts: Counter[str] = Counter()
    for outcome, predicted in zip(outcomes, _scored_predictions(outcomes), strict=True):
        for code in set(outcome.gold_codes):
            gold_counts[code] += 1
            found_counts[code] += code in predicted
    ranked = sorted(gold_counts, key=lambda code: (-gold_counts[code], code))
    return tuple(
        ConditionRecall(
            code,
            gold_counts[code],
            found_counts[code],
            gold_counts[code] - found_counts[code],
            found_counts[code] / gold_counts[code],
        )
        for code in ranked
    )


def _scored_predictions(outcomes: Sequence[CaseOutcome]) -> list[set[str]]:
    return [set(o.predicted_codes) if o.status == "answered" else set() for o in outcomes]


def _f1_by_gold_count(scores: Sequence[CaseScore]) -> tuple[F1ByGoldCount, ...]:
    groups: defaultdict[int, list[float]] = defaultdict(list)
    for score in scores:
        groups[score.n_gold].append(score.f1)
    return tuple(F1ByGoldCount(n, len(groups[n]), float(np.mean(groups[n]))) for n in sorted(groups))


def summarise_run(
    outcomes: Sequence[CaseOutcome], rng: np.random.Generator, *, n_resamples: int = N_RESAMPLES
) -> RunMetrics:
    """Metrics of one model's outcomes (all epochs); `failed` outcomes are counted, never scored.

    The intervals resample whole cases (all epochs of a case together), drawing from `rng` in the order
    exact match, precision, recall, F1. Code rates are shares of all predicted codes, the not-a-code rate a
    share of all final-answer items (codes and not), the leak rate a share of the patient replies the leak
    check read whole or found a leak in (the others are counted apart, never as replies that named nothing).
    """
    scored = [o for o in outcomes if o.status != "failed"]
    scores = [score_outcome(o) for o in scored]
    case_ids = np.array([o.case_id for o in scored], dtype=object)
    macro = {
        name: bootstrap_mean(
            np.array([getattr(s, name) for s in scores], dtype=float),
            rng,
            clusters=case_ids if scored else None,
            n_resamples=n_resamples,
        )
        for name in ("exact_match", "precision", "recall", "f1")
    }
    n_correct = sum(s.n_correct for s in scores)
    micro_precision = _ratio(n_correct, sum(s.n_predicted for s in scores))
    micro_recall = _ratio(n_correct, sum(s.n_gold for s in scores))
    micro_f1 = None
    if micro_precision is not None and micro_recall is not None:
        micro_f1 = f1_score(micro_precision, micro_recall)
    n_predicted = sum(s.n_predicted for s in scores)
    answered = [o for o in scored if o.status == "answered"]
    n_not_codes = sum(len(o.not_codes) for o in answered)
    n_patient_replies = sum(o.n_patient_replies for o in scored)
    n_unverified = sum(o.n_unverified_replies for o in scored)
    return RunMetrics(
        n_cases=len(scored),
        n_failed=len(outcomes) - len(scored),
        n_unparseable=sum(o.status == "unparseable" for o in scored),
        n_empty_gold=sum(s.empty_gold for s in scores),
        **macro,
        micro_precision=micro_precision,
        micro_recall=micro_recall,
        micro_f1=micro_f1,
        invalid_code_rate=_ratio(sum(len(set(o.invalid_codes)) for o in answered), n_predicted),
        malformed_code_rate=_ratio(sum(len(set(o.malformed_codes)) for o in answered), n_predicted),
        not_code_rate=_ratio(n_not_codes, n_predicted + n_not_codes),
        no_answer_rate=_ratio(sum(o.status == "no_answer" for o in scored), len(scored)),
        mean_questions=_ratio(sum(o.n_questions for o in scored), len(scored)),
        leak_rate=_ratio(sum(o.n_leaking_replies for o in scored), n_patient_replies - n_unverified),
        n_unverified_replies=n_unverified,
        condition_recall=_condition_recall(scored),
        f1_by_gold_count=_f1_by_gold_count(scores),
    )
