"""A consultation run as export samples (tasks/export/): one sample per agent, case and epoch (one episode).

The conversation is the agent's: the episode's MESSAGES rows in order, the patient's as `user` and the
agent's as `assistant` (history taking, differential, treatment plan, follow-ups), with the benchmark's own
messages the rows do not store (the system prompt, each stage's request and re-ask) put back where the run
sent them (solver.run_episode), from the run's prompt file when it is still the one the manifest hashed.
The reference is the gold conditions; the scores are the episode's composite (the headline) and primary
metrics of consult.md, explained by the FQR judge's verdict on each follow-up. The metadata says which of the
agent's outputs did not parse (the SCORES columns the report and run summary count) and what a parser
raised, if one did. The run's scores of each model are the report's: the composite and stage scores of its
episodes (composite.py), not the mean of the episodes' composites.
"""

from collections import defaultdict
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.cases.case_set import CASES_FILE
from tasks.benchmarks.consult.composite import Composite, episodes_composite
from tasks.benchmarks.consult.config import ConsultConfig
from tasks.benchmarks.consult.contracts import MESSAGES, PRIMARY_METRICS, SCORES, STAGE_METRICS
from tasks.benchmarks.consult.run_data import check_run_folder
from tasks.benchmarks.consult.solver import EpisodePrompts
from tasks.export.samples import (
    ExportedRun,
    ExportSample,
    Message,
    RunFacts,
    RunScore,
    RunScores,
    exported_run_of,
    summed,
    usage,
)
from tasks.llm.prompts import load_prompt
from tasks.report.runs import read_manifest, read_rows

FACTS = RunFacts(
    "consult", "Full-cycle consultation", scorer="consult", score_name="composite", roles=("judge",)
)
CHAT_ROLES = {"patient": "user", "agent": "assistant"}
RUN_SCORES = (
    "consult.md's composite and stage scores of the model's episodes, as the report computes them "
    "(composite.py): each primary metric averaged over the completed episodes where it is defined, mapped "
    "higher-better, averaged within its stage, then the four stages averaged; not the mean of the samples' "
    "composites"
)


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


def conversation(rows: list[dict[str, Any]], prompts: EpisodePrompts | None) -> list[Message]:
    """The agent's view of an episode from its MESSAGES rows (in order), the benchmark's messages from
    `prompts` put back as the run sent them; without prompts, the rows' messages alone."""
    messages = [Message(role="system", content=prompts.system)] if prompts else []
    stage_requests = {}
    if prompts:
        stage_requests = {
            "diagnosis": (prompts.diagnosis, prompts.reask),
            "treatment": (prompts.treatment, prompts.treatment_reask),
            "follow_up": (None, prompts.revision_reask),  # the patient's row asks first
        }
    asked: set[tuple[str, int | None]] = set()
    for row in rows:
        if row["role"] == "agent" and row["stage"] in stage_requests:
            first, again = stage_requests[row["stage"]]
            request = again if (row["stage"], row["follow_up"]) in asked else first
            asked.add((row["stage"], row["follow_up"]))
            if request is not None:
                messages.append(Message(role="user", content=request))
        if row["text"] is not None:
            messages.append(Message(role=CHAT_ROLES[row["role"]], content=row["text"]))  # type: ignore[arg-type]
    return messages


def run_prompts(config: dict[str, Any], hashes: dict[str, Any]) -> EpisodePrompts | None:
    """The episode prompts the run sent: its config's prompt file when the manifest hashed that very file;
    None when the file is gone or changed since (its messages are then left out, not guessed)."""
    path = ConsultConfig.model_validate(config).prompt_file()
    if not path.is_file():
        return None
    prompt = load_prompt(path)
    recorded = hashes.get(prompt.version, {}).get("sha256")
    return EpisodePrompts.from_template(prompt) if recorded == prompt.sha256 else None


def episode_sample(
    rows: list[dict[str, Any]], score: dict[str, Any], judge: str, prompts: EpisodePrompts | None
) -> ExportSample:
    """One episode's sample from its MESSAGES rows and its SCORES row."""
    # A turn's agent row comes first (its question, then the patient's answer), except in a follow-up,
    # which the patient opens (contracts.py, MESSAGES).
    rows = sorted(rows, key=lambda r: (r["turn"], (r["role"] == "agent") == (r["stage"] == "follow_up")))
    messages = conversation(rows, prompts)
    opening = 2 if prompts else 1  # the system prompt and the patient's opening
    agent = [r for r in rows if r["role"] == "agent"]
    scores = {"composite": score["composite"], **{name: score[name] for name in PRIMARY_METRICS}}
    failed = score["status"] == "failed"
    return ExportSample(
        sample_id=score["case_id"],
        item_id=score["case_id"],
        epoch=score["epoch"],
        status=score["status"],
        input=messages[:opening],
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
            "revisions_unparseable": score["revisions_unparseable"],
            "parse_errors": score["parse_errors"],
            "judge_model": score["judge_model"],
            "rubric_version": score["rubric_version"],
            "prompt_version": prompts.version if prompts else None,
        },
    )


def exported_run(run_dir: Path) -> ExportedRun:
    """RUN_DIR of a consultation run -> its samples; UserError when it is not a finished consultation run."""
    check_run_folder(run_dir)
    manifest = read_manifest(run_dir, CASES_FILE)
    judge = (manifest.config.get("judge") or {}).get("model", "")
    prompts = run_prompts(manifest.config, manifest.raw.get("prompts", {}))
    episodes: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in read_rows(run_dir / "messages.parquet", MESSAGES):
        episodes[_episode(row)].append(row)
    samples: dict[str, list[ExportSample]] = defaultdict(list)
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for score in sorted(read_rows(run_dir / "scores.parquet", SCORES), key=_episode):
        samples[score["model"]].append(episode_sample(episodes[_episode(score)], score, judge, prompts))
        by_model[score["model"]].append(score)
    results = RunScores(
        note=RUN_SCORES,
        by_model={model: run_scores(episodes_composite(rows)) for model, rows in by_model.items()},
    )
    return exported_run_of(manifest, FACTS, samples, results)


def run_scores(scores: Composite) -> list[RunScore]:
    """A model's composite (first: the headline) and its four stage scores as run scores."""
    return [
        RunScore(name="composite", value=scores.score),
        *(RunScore(name=stage, value=getattr(scores, stage)) for stage in STAGE_METRICS),
    ]


def _episode(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["model"], row["case_id"], row["epoch"]
