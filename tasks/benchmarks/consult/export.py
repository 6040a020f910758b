"""A consultation run as export samples (tasks/export/): one sample per agent, case and epoch (one episode).

The conversation is the episode's MESSAGES rows in order, the patient's as `user` and the agent's as
`assistant`: history taking, differential, treatment plan, follow-ups. The benchmark's own instructions
(the system prompt, the stage prompts and re-asks) are the versioned prompt file the manifest names and
hashes; the rows do not repeat them. The reference is the gold conditions; the scores are the composite
(the headline) and the primary metrics of consult.md, explained by the FQR judge's verdict on each follow-up.
"""

from collections import defaultdict
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.cases.case_set import CASES_FILE
from tasks.benchmarks.consult.contracts import MESSAGES, PRIMARY_METRICS, SCORES
from tasks.benchmarks.consult.report import check_run_folder
from tasks.export.samples import ExportedRun, ExportSample, Message, RunFacts, exported_run_of, summed, usage
from tasks.report.runs import read_manifest, read_rows

FACTS = RunFacts(
    "consult", "Full-cycle consultation", scorer="consult", score_name="composite", roles=("judge",)
)
CHAT_ROLES = {"patient": "user", "agent": "assistant"}


def judge_explanation(score: dict[str, Any]) -> str | None:
    """The FQR judge's verdict and reason on each follow-up, one line each; None when it judged none."""
    lines = [
        f"follow-up {item['index']} ({item['kind']}): {item['judge_status']}"
        + ("" if item["correct"] is None else f", {'correct' if item['correct'] else 'not correct'}")
        + (f": {item['judge_reason']}" if item["judge_reason"] else "")
        for item in score.get("follow_ups") or []
        if item["judge_status"] is not None
    ]
    return "\n".join(lines) or None


def episode_sample(rows: list[dict[str, Any]], score: dict[str, Any], judge: str) -> ExportSample:
    """One episode's sample from its MESSAGES rows and its SCORES row."""
    # A turn's agent row comes first (its question, then the patient's answer), except in a follow-up,
    # which the patient opens (contracts.py, MESSAGES).
    rows = sorted(rows, key=lambda r: (r["turn"], (r["role"] == "agent") == (r["stage"] == "follow_up")))
    said = [r for r in rows if r["text"] is not None]
    messages = [Message(role=CHAT_ROLES[r["role"]], content=r["text"]) for r in said]  # type: ignore[arg-type]
    agent = [r for r in rows if r["role"] == "agent"]
    scores = {"composite": score["composite"], **{name: score[name] for name in PRIMARY_METRICS}}
    failed = score["status"] == "failed"
    return ExportSample(
        sample_id=score["case_id"],
        item_id=score["case_id"],
        epoch=score["epoch"],
        status=score["status"],
        input=messages[:1],
        messages=messages,
        output=agent[-1]["text"] if agent else None,
        finish_reason=agent[-1]["finish_reason"] if agent else None,
        target=[gold["title"] for gold in score["gold"] or []],
        score=score["composite"],
        scores=scores,
        explanation=judge_explanation(score),
        unscored=None
        if score["composite"] is not None
        else (f"failed: {score['error']}" if failed else "a stage score is undefined"),
        usage={
            "model": summed(score["model"], agent),
            **({"judge": usage(judge, score, prefix="judge_")} if score["judge_calls"] else {}),
        },
        error=score["error"] if failed else None,
        metadata={
            "case_id": score["case_id"],
            "epoch": score["epoch"],
            "department": score["department"],
            "difficulty": score["difficulty"],
            "diagnosis_parse": score["diagnosis_parse"],
            "plan_parse": score["plan_parse"],
            "judge_model": score["judge_model"],
            "rubric_version": score["rubric_version"],
        },
    )


def exported_run(run_dir: Path) -> ExportedRun:
    """RUN_DIR of a consultation run -> its samples; UserError when it is not a finished consultation run."""
    check_run_folder(run_dir)
    manifest = read_manifest(run_dir, CASES_FILE)
    judge = (manifest.config.get("judge") or {}).get("model", "")
    episodes: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in read_rows(run_dir / "messages.parquet", MESSAGES):
        episodes[_episode(row)].append(row)
    samples: dict[str, list[ExportSample]] = defaultdict(list)
    for score in sorted(read_rows(run_dir / "scores.parquet", SCORES), key=_episode):
        samples[score["model"]].append(episode_sample(episodes[_episode(score)], score, judge))
    return exported_run_of(manifest, FACTS, samples)


def _episode(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["model"], row["case_id"], row["epoch"]
