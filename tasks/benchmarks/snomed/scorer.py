"""The score step of the SNOMED benchmark: an interview's messages -> its prediction and its scores.

Pure but for the vocabulary, which is read once per process from the case set and the installed Synthea
modules. No model is called: the prediction is the clinician's last reply, parsed.
"""

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tasks.benchmarks.snomed.cases.loading import vocabulary_codes
from tasks.benchmarks.snomed.codes import AnswerItems, UnparseableAnswer, check_codes, read_final_answer
from tasks.benchmarks.snomed.scoring import CaseOutcome, CaseStatus, score_outcome


class ScoreJob(BaseModel, frozen=True):
    """What scoring an interview needs besides its messages: its key, gold set and vocabulary source."""

    run_id: str
    model: str
    case_id: str
    epoch: int
    gold_codes: tuple[str, ...]
    case_set_dir: Path


def score_interview(job: ScoreJob, solved: list[dict[str, Any]], ledger_dir: Path) -> list[dict[str, Any]]:
    """The interview's messages → one row holding both its PREDICTIONS and its SCORES columns."""
    return [interview_result(job, solved, vocabulary_codes(job.case_set_dir))]


def interview_result(
    job: ScoreJob, messages: Sequence[dict[str, Any]], vocabulary: Collection[str]
) -> dict[str, Any]:
    """The prediction read from the messages (in turn order) and its scores against the gold set.

    `failed` when a call failed (no scores: a re-run finishes it); else `answered` when the clinician's last
    reply holds a final answer, `no_answer` (scored as an empty prediction) when it does not, and
    `unparseable` (scored as an empty prediction too, `error` saying what could not be read) when its final
    answer cannot be read whole, or its reply was cut at max_tokens (`finish_reason` 'length'; a run folder
    written before the column has none).
    """
    key = {"run_id": job.run_id, "model": job.model, "case_id": job.case_id, "epoch": job.epoch}
    patient_replies = [m for m in messages if m["role"] == "patient" and m["status"] == "ok"]
    counts = {
        "questions_asked": len(patient_replies),
        "patient_replies": len(patient_replies),
        "leaking_replies": sum(bool(m["leaked_codes"]) for m in patient_replies),
        "gold_codes": list(job.gold_codes),
        "n_gold": len(set(job.gold_codes)),
    }
    failed = next((m for m in messages if m["status"] == "failed"), None)
    if failed is not None:
        error = {"error": failed["error"], "error_class": failed["error_class"]}
        return {**key, **counts, **error, "status": "failed"}
    last = [m for m in messages if m["role"] == "clinician"][-1]
    final_answer = last["text"]
    read = read_final_answer(final_answer, cut=last.get("finish_reason") == "length")
    status: CaseStatus = (
        "no_answer" if read is None else "unparseable" if isinstance(read, UnparseableAnswer) else "answered"
    )
    items = read if isinstance(read, AnswerItems) else AnswerItems((), ())
    predicted = items.codes
    check = check_codes(predicted, vocabulary)
    # The report's score (scoring.score_outcome): no readable answer scores 0, an empty gold set too.
    score = score_outcome(CaseOutcome(job.case_id, job.epoch, status, predicted, tuple(job.gold_codes)))
    gold, predicted_set = set(job.gold_codes), set(predicted)
    return {
        **key,
        **counts,
        "status": status,
        "final_answer": final_answer,
        "predicted_codes": list(predicted),
        "invalid_codes": list(check.invalid),
        "malformed_codes": list(check.malformed),
        "not_codes": list(items.not_codes),
        "hit_codes": [code for code in predicted if code in gold],
        "missed_codes": [code for code in job.gold_codes if code not in predicted_set],
        "wrong_codes": [code for code in predicted if code not in gold],
        "n_predicted": score.n_predicted,
        "n_correct": score.n_correct,
        "exact_match": score.exact_match,
        "precision": score.precision,
        "recall": score.recall,
        "f1": score.f1,
        "empty_gold": score.empty_gold,
        **({"error": read.describe()} if isinstance(read, UnparseableAnswer) else {}),
    }
