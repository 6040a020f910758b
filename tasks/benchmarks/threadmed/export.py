"""A ThReadMed-QA run as export samples (tasks/export/): one sample per model, condition, thread and turn.

A turn's input is rebuilt as the run sent it, by the same dialogue rule (tasks/evals/dialogue.py): the
thread's questions from the dataset build, with the model's own earlier answers (baseline) or the physician's
(oracle) as history. The reference is the physician's answer to the turn; the score is the judge's grade
(0, 0.5, 1) with its reason.
"""

from collections import defaultdict
from pathlib import Path
from typing import Any

from tasks.benchmarks.threadmed.cases import answered_dir
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, QA_PAIRS, RESPONSES
from tasks.benchmarks.threadmed.run_data import RUN_KEY, check_run_folder, read_manifest
from tasks.core.preflight import UserError
from tasks.evals.dialogue import run_dialogue, scripted
from tasks.export.samples import (
    ExportedRun,
    ExportSample,
    Message,
    chat,
    model_roles,
    read_run_manifest,
    sample_means,
    usage,
    written_at,
)
from tasks.report.runs import read_rows

SCORER = "judge"


def sent_messages(questions: list[str], replies: list[str], first_turn: int) -> list[list[Message]]:
    """The messages of each turn from `first_turn` on, with `replies` as the assistant's history."""
    sent: list[list[dict[str, str]]] = []
    run_dialogue(
        range(first_turn, len(questions)),
        scripted(questions),
        lambda m: sent.append(m),
        given_replies=replies,
    )
    return [chat(messages) for messages in sent]


def turn_samples(
    thread: list[dict[str, Any]],
    responses: list[dict[str, Any]],
    judgments: dict[tuple, dict[str, Any]],
    judge: str,
) -> list[ExportSample]:
    """The samples of one model's thread in one condition (`responses` in turn order; `thread`: its QA
    pairs)."""
    condition = responses[0]["condition"]
    questions = [pair["question"] for pair in thread]
    if condition == "oracle":
        history = [pair["answer"] for pair in thread]
    else:
        # A failed turn ends the thread (solver.py): the "" it leaves is history only to turns never asked.
        answered = {row["turn"]: row["response"] or "" for row in responses}
        history = [answered.get(turn, "") for turn in range(len(thread))]
    first = responses[0]["turn"]
    inputs = dict(zip(range(first, len(thread)), sent_messages(questions, history, first), strict=True))
    return [
        _sample(row, thread, inputs, judgments.get(tuple(row[k] for k in RUN_KEY)), judge)
        for row in responses
    ]


def _sample(
    row: dict[str, Any],
    thread: list[dict[str, Any]],
    inputs: dict[int, list[Message]],
    judged: dict | None,
    judge: str,
) -> ExportSample:
    turn = row["turn"]
    asked = row["status"] != "not_run"
    sent = inputs[turn] if asked else [Message(role="user", content=thread[turn]["question"])]
    reply = [Message(role="assistant", content=row["response"])] if row["response"] is not None else []
    score = judged["score"] if judged else None
    unscored = None
    if score is None:
        unscored = judged["parse_status"] if judged else "not judged"
        if judged and judged.get("error"):
            unscored = f"{unscored}: {judged['error']}"
    return ExportSample(
        sample_id=f"{row['thread_id']}/{row['condition']}/turn-{turn}",
        item_id=row["thread_id"],
        turn=turn,
        condition=row["condition"],
        status=row["status"],
        input=sent,
        messages=[*sent, *reply],
        output=row["response"],
        finish_reason=row["finish_reason"],
        target=thread[turn]["answer"],
        score=score,
        scores={SCORER: score},
        explanation=judged["reason"] if judged else None,
        unscored=unscored,
        usage={
            "model": usage(row["model"], row),
            **({"judge": usage(judge, judged)} if judged else {}),
        },
        error=None if row["status"] == "ok" else row["error"] or f"answer {row['status']}",
        started_at=row["started_at"],
        completed_at=row["finished_at"],
        metadata={
            "thread_id": row["thread_id"],
            "turn": turn,
            "condition": row["condition"],
            "epoch": 0,
            "call_key": row["call_key"],
            **({f"judge_{k}": judged[k] for k in ("call_key", "parse_status")} if judged else {}),
            **({k: judged[k] for k in ("judge_model", "rubric_version")} if judged else {}),
        },
    )


def exported_run(run_dir: Path) -> ExportedRun:
    """RUN_DIR of a ThReadMed-QA run -> its samples; UserError when it is not a finished run or its dataset
    build is gone."""
    check_run_folder(run_dir)
    manifest = read_manifest(run_dir)
    raw = read_run_manifest(run_dir)
    qa_path = answered_dir(manifest.case_set_dir) / "qa_pairs.parquet"
    if not qa_path.is_file():
        raise UserError(
            f"{run_dir}: its dataset build {manifest.case_set_dir} is not there (no {qa_path.name}); put it "
            "back where the run found it to export the questions",
            "RUN_DIR",
        )
    threads: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pair in sorted(read_rows(qa_path, QA_PAIRS), key=lambda p: (p["thread_id"], p["turn"])):
        threads[pair["thread_id"]].append(pair)
    judgments = {tuple(r[k] for k in RUN_KEY): r for r in read_rows(run_dir / "judgments.parquet", JUDGMENTS)}
    by_thread: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in sorted(read_rows(run_dir / "responses.parquet", RESPONSES), key=lambda r: r["turn"]):
        by_thread[(row["model"], row["condition"], row["thread_id"])].append(row)
    config = raw.get("config", {})
    sent = raw.get("sent", {})
    judge = model_roles(
        [config.get("judge") or raw.get("judge") or manifest.judge_model], sent.get("judge", {})
    )[0]
    samples: dict[str, list[ExportSample]] = {name: [] for name in manifest.models}
    for (model, _, thread_id), rows in sorted(by_thread.items()):
        samples.setdefault(model, []).extend(turn_samples(threads[thread_id], rows, judgments, judge.model))
    return ExportedRun(
        benchmark="threadmed",
        title="ThReadMed-QA",
        run_id=manifest.run_id,
        run_dir=Path(run_dir).resolve(),
        created=written_at(raw, run_dir),
        dataset_dir=manifest.case_set_dir,
        dataset_fingerprint=manifest.fingerprint,
        scorer=SCORER,
        score_name=SCORER,
        models=model_roles(config.get("models") or raw.get("models") or [], sent.get("models", {})),
        roles={"judge": judge},
        samples=samples,
        results=sample_means(samples),
        summary=raw.get("summary", {}),
        manifest=raw,
    )
