"""A SNOMED run as export samples (tasks/export/): one sample per model, case and epoch (one interview).

The conversation is the clinician's view of the stored interview (interview.messages_for, the rule the run
sent it by): its system prompt and the patient's opening as input, then every question, answer, request
for the final answer and re-ask. The reference is the gold code set; the scores are the interview's F1
(the headline), precision, recall and exact match, explained by the codes hit, missed and wrong.
"""

from collections import defaultdict
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.contracts import CONVERSATIONS, PREDICTIONS, SCORES
from tasks.benchmarks.snomed.interview import Turn, messages_for
from tasks.benchmarks.snomed.run_data import check_run_folder
from tasks.export.samples import (
    ExportedRun,
    ExportSample,
    RunFacts,
    chat,
    exported_run_of,
    sample_means,
    summed,
)
from tasks.report.runs import read_manifest, read_rows

FACTS = RunFacts("snomed", "SNOMED diagnosis", scorer="codes", score_name="f1", roles=("patient",))
SCORE_NAMES = ("f1", "precision", "recall", "exact_match")


def interview_sample(
    rows: list[dict[str, Any]], prediction: dict[str, Any], score: dict[str, Any], patient: str
) -> ExportSample:
    """One interview's sample from its CONVERSATIONS rows, its PREDICTIONS row and its SCORES row."""
    rows = sorted(rows, key=lambda row: row["message"])
    turns = [
        Turn(row["turn"], row["role"], row["text"] or "", row["call_key"] or "", sent_to=row["sent_to"])
        for row in rows
    ]
    first_call = next((i for i, row in enumerate(rows) if row["role"] == "clinician"), len(rows))
    model = prediction["model"]
    scores = {name: score.get(name) for name in SCORE_NAMES}
    explained = (
        f"hit {score['hit_codes']}, missed {score['missed_codes']}, wrong {score['wrong_codes']}; "
        f"not in the vocabulary {prediction['invalid_codes']}"
        if scores["f1"] is not None
        else None
    )
    return ExportSample(
        sample_id=prediction["case_id"],
        item_id=prediction["case_id"],
        epoch=prediction["epoch"],
        status=prediction["status"],
        input=chat(messages_for("clinician", turns[:first_call])),
        messages=chat(messages_for("clinician", turns)),
        output=prediction["final_answer"],
        finish_reason=next((r["finish_reason"] for r in reversed(rows) if r["role"] == "clinician"), None),
        target=list(score["gold_codes"] or []),
        score=scores["f1"],
        scores=scores,
        explanation=explained,
        unscored=None if scores["f1"] is not None else f"{prediction['status']}: {prediction['error']}",
        usage={
            "model": summed(model, [r for r in rows if r["role"] == "clinician"]),
            "patient": summed(
                patient, [r for r in rows if r["role"] == "patient" and r["status"] != "scripted"]
            ),
        },
        error=prediction["error"] if prediction["status"] == "failed" else None,
        metadata={
            "case_id": prediction["case_id"],
            "epoch": prediction["epoch"],
            "predicted_codes": prediction["predicted_codes"],
            "invalid_codes": prediction["invalid_codes"],
            "questions_asked": prediction["questions_asked"],
            "leaking_replies": prediction["leaking_replies"],
        },
    )


def exported_run(run_dir: Path) -> ExportedRun:
    """RUN_DIR of a SNOMED run -> its samples; UserError when it is not a finished SNOMED run."""
    check_run_folder(run_dir)
    manifest = read_manifest(run_dir, "cases.parquet")
    patient = manifest.config.get("patient") or {}
    conversations: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in read_rows(run_dir / "conversations.parquet", CONVERSATIONS):
        conversations[_interview(row)].append(row)
    scores = {_interview(row): row for row in read_rows(run_dir / "scores.parquet", SCORES)}
    samples: dict[str, list[ExportSample]] = defaultdict(list)
    for prediction in sorted(read_rows(run_dir / "predictions.parquet", PREDICTIONS), key=_interview):
        key = _interview(prediction)
        samples[prediction["model"]].append(
            interview_sample(conversations[key], prediction, scores[key], patient.get("model", ""))
        )
    return exported_run_of(manifest, FACTS, samples, sample_means(samples))


def _interview(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["model"], row["case_id"], row["epoch"]
