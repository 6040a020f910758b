from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.snomed.contracts import PREDICTIONS, SCORES
from tasks.benchmarks.snomed.scorer import ScoreJob, interview_result
from tasks.evals.outputs import write_table

HYPERTENSION, SINUSITIS, PHARYNGITIS, DIABETES = "59621000", "444814009", "195662009", "44054006"
SYNTHEA_ODD_CODE = "10939881000119104"  # Synthea emits it; it fails the Verhoeff check
NOT_IN_VOCABULARY = "111111111"  # a well-formed SNOMED id (its check digit holds), not a Synthea condition
MADE_UP = "123456789"  # fails the check digit too: malformed
VOCABULARY = frozenset({HYPERTENSION, SINUSITIS, PHARYNGITIS, DIABETES, SYNTHEA_ODD_CODE})
KEY = {"run_id": "run1", "model": "doc", "case_id": "t1", "epoch": 0}


def score_job(gold: tuple[str, ...]) -> ScoreJob:
    return ScoreJob(**KEY, gold_codes=gold, case_set_dir=Path("cases"))


def message(turn: int, role: str, text: str | None, status: str = "ok", leaked: tuple[str, ...] = ()):
    return {**KEY, "turn": turn, "role": role, "text": text, "status": status, "leaked_codes": list(leaked),
            "error": "429 Too Many Requests" if status == "failed" else None,
            "error_class": "rate_limit" if status == "failed" else None}  # fmt: skip


def interview(final: str) -> list[dict[str, Any]]:
    """Two questions, the first answer leaking hypertension, then `final`."""
    return [
        message(0, "patient", "Hello, doctor.", "scripted"),
        message(1, "clinician", "Any headaches?"),
        message(1, "patient", "My hypertension gives me headaches.", leaked=(HYPERTENSION,)),
        message(2, "clinician", "Any sore throat?"),
        message(2, "patient", "No."),
        message(3, "clinician", final),
    ]


COUNTS = {"questions_asked": 2, "patient_replies": 2, "leaking_replies": 1}
PREDICTED = [HYPERTENSION, DIABETES, SYNTHEA_ODD_CODE, NOT_IN_VOCABULARY, MADE_UP]
ANSWER = f"<Final Answer>: {PREDICTED}".replace("'", '"')


def test_an_answer_is_parsed_checked_and_scored_with_hits_misses_and_wrong_codes():
    gold = (PHARYNGITIS, SINUSITIS, HYPERTENSION)
    row = interview_result(score_job(gold), interview(ANSWER), VOCABULARY)
    assert row == {
        **KEY,
        **COUNTS,
        "gold_codes": list(gold),
        "n_gold": 3,
        "status": "answered",
        "final_answer": ANSWER,
        "predicted_codes": PREDICTED,
        "invalid_codes": [NOT_IN_VOCABULARY, MADE_UP],
        "malformed_codes": [MADE_UP],
        "not_codes": [],
        "hit_codes": [HYPERTENSION],
        "missed_codes": [PHARYNGITIS, SINUSITIS],
        "wrong_codes": [DIABETES, SYNTHEA_ODD_CODE, NOT_IN_VOCABULARY, MADE_UP],
        "n_predicted": 5,
        "n_correct": 1,
        "exact_match": 0.0,
        "precision": 0.2,
        "recall": pytest.approx(1 / 3),
        "f1": pytest.approx(2 * 0.2 * (1 / 3) / (0.2 + 1 / 3)),
        "empty_gold": False,
    }


def test_numbers_too_short_for_a_code_and_names_alone_are_counted_not_dropped():
    answer = '<Final Answer>: ["12345", "67890", "Hypertension"]'
    row = interview_result(score_job((HYPERTENSION,)), interview(answer), VOCABULARY)
    assert {name: row[name] for name in ("status", "predicted_codes", "invalid_codes", "malformed_codes",
                                         "not_codes", "wrong_codes", "precision")} == {
        "status": "answered",
        "predicted_codes": ["12345", "67890"],
        "invalid_codes": ["12345", "67890"],
        "malformed_codes": ["12345", "67890"],
        "not_codes": ["Hypertension"],
        "wrong_codes": ["12345", "67890"],
        "precision": 0.0,
    }  # fmt: skip


def test_a_reply_without_a_final_answer_is_no_answer_scored_as_an_empty_prediction():
    row = interview_result(score_job((HYPERTENSION,)), interview("It sounds like a cold to me."), VOCABULARY)
    assert row == {
        **KEY,
        **COUNTS,
        "gold_codes": [HYPERTENSION],
        "n_gold": 1,
        "status": "no_answer",
        "final_answer": "It sounds like a cold to me.",
        "predicted_codes": [],
        "invalid_codes": [],
        "not_codes": [],
        "malformed_codes": [],
        "hit_codes": [],
        "missed_codes": [HYPERTENSION],
        "wrong_codes": [],
        "n_predicted": 0,
        "n_correct": 0,
        "exact_match": 0.0,
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "empty_gold": False,
    }


def test_a_final_answer_that_cannot_be_read_whole_is_unparseable_named_and_scored_as_an_empty_prediction():
    final = "<Final Answer>: " + "[" * 21 + f'"{HYPERTENSION}"' + "]" * 21
    row = interview_result(score_job((HYPERTENSION,)), interview(final), VOCABULARY)
    assert row == {
        **KEY,
        **COUNTS,
        "gold_codes": [HYPERTENSION],
        "n_gold": 1,
        "status": "unparseable",
        "error": "final answer not read: a JSON list nested deeper than 20 levels",
        "final_answer": final,
        "predicted_codes": [],
        "invalid_codes": [],
        "not_codes": [],
        "malformed_codes": [],
        "hit_codes": [],
        "missed_codes": [HYPERTENSION],
        "wrong_codes": [],
        "n_predicted": 0,
        "n_correct": 0,
        "exact_match": 0.0,
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "empty_gold": False,
    }


def test_a_final_answer_cut_at_max_tokens_is_unparseable_never_the_codes_it_reads_as():
    # Cut after the first code: read as given it was an exact match; the list may have gone on.
    final = f'<Final Answer>: ["{HYPERTENSION}"'
    messages = interview(final)
    messages[-1]["finish_reason"] = "length"
    row = interview_result(score_job((HYPERTENSION,)), messages, VOCABULARY)
    assert (row["status"], row["error"], row["predicted_codes"], row["exact_match"], row["f1"]) == (
        "unparseable",
        "final answer not read: the reply was cut at max_tokens, and a code may be missing",
        [],
        0.0,
        0.0,
    )
    messages[-1]["finish_reason"] = "stop"  # not cut, yet no `]` closes the list: it was an exact match
    row = interview_result(score_job((HYPERTENSION,)), messages, VOCABULARY)
    assert (row["status"], row["error"], row["exact_match"]) == (
        "unparseable",
        "final answer not read: no ] closes its list, and a code may be missing",
        0.0,
    )


def test_a_failed_call_leaves_the_interview_unscored_with_its_error():
    messages = [*interview(ANSWER)[:4], message(2, "patient", None, "failed")]
    row = interview_result(score_job((HYPERTENSION,)), messages, VOCABULARY)
    assert row == {
        **KEY,
        "questions_asked": 1,
        "patient_replies": 1,
        "leaking_replies": 1,
        "gold_codes": [HYPERTENSION],
        "n_gold": 1,
        "error": "429 Too Many Requests",
        "error_class": "rate_limit",
        "status": "failed",
    }


def test_empty_gold_and_an_empty_answer_is_perfect():
    row = interview_result(score_job(()), interview("<Final Answer>: []"), VOCABULARY)
    assert row == {
        **KEY,
        **COUNTS,
        "gold_codes": [],
        "n_gold": 0,
        "status": "answered",
        "final_answer": "<Final Answer>: []",
        "predicted_codes": [],
        "invalid_codes": [],
        "not_codes": [],
        "malformed_codes": [],
        "hit_codes": [],
        "missed_codes": [],
        "wrong_codes": [],
        "n_predicted": 0,
        "n_correct": 0,
        "exact_match": 1.0,
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
        "empty_gold": True,
    }


@pytest.mark.parametrize(
    "final", ["It sounds like a cold.", "<Final Answer>: [[[" + "[" * 20 + "]]]" + "]" * 20]
)
def test_empty_gold_without_a_readable_answer_is_stored_as_the_report_scores_it_zero(final):
    row = interview_result(score_job(()), interview(final), VOCABULARY)
    assert {
        name: row[name] for name in ("status", "exact_match", "precision", "recall", "f1", "empty_gold")
    } == {
        "status": "no_answer" if final.startswith("It") else "unparseable",
        "exact_match": 0.0,
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "empty_gold": True,
    }


def test_a_later_marker_naming_no_code_is_unparseable_never_an_empty_answer():
    # Read as the last marker alone, the answer was empty: a perfect score on an empty gold set.
    final = f'<Final Answer>: ["{HYPERTENSION}"]\nI hope this <Final Answer>: helps.'
    row = interview_result(score_job(()), interview(final), VOCABULARY)
    assert {name: row[name] for name in ("status", "error", "predicted_codes", "f1")} == {
        "status": "unparseable",
        "error": "final answer not read: its last marker names no code, and an earlier one does",
        "predicted_codes": [],
        "f1": 0.0,
    }


def test_the_rows_fit_the_predictions_and_scores_contracts(tmp_path):
    rows = [
        interview_result(score_job((HYPERTENSION,)), interview(ANSWER), VOCABULARY),
        interview_result(
            score_job(()), [*interview(ANSWER)[:2], message(1, "patient", None, "failed")], VOCABULARY
        )
        | {"epoch": 1},
    ]
    assert {name for row in rows for name in row} <= set(PREDICTIONS.columns) | set(SCORES.columns)
    for contract in (PREDICTIONS, SCORES):
        write_table(rows, contract, tmp_path / f"{contract.name}.parquet")
        table = pq.read_table(tmp_path / f"{contract.name}.parquet")
        assert table.schema.equals(contract.schema)
        assert table.to_pylist() == [{name: row.get(name) for name in contract.columns} for row in rows]
