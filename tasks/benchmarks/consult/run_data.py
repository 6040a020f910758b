"""Reading a consultation report's runs: check a run folder, read the mined empirical reference, and merge
the runs' messages and scores (RunData), with an FQR judge panel's verdicts when several judges graded the
same episodes.
"""

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from tasks.benchmarks.consult.cases.case_set import CASES_FILE
from tasks.benchmarks.consult.composite import composite
from tasks.benchmarks.consult.contracts import MESSAGES, PRIMARY_METRICS, SCORES
from tasks.benchmarks.consult.inquiry.policy import InquiryPolicy
from tasks.core.preflight import UserError
from tasks.llm.request import canonical_params
from tasks.report.panel import (
    JudgeRun,
    PanelJudge,
    first_status_not_ok,
    group_graders,
    judge_grades,
    panel_grades,
    panel_judges,
    sample_label,
)
from tasks.report.runs import (
    PanelRuns,
    RunManifest,
    check_mergeable,
    check_one_case_set,
    check_same_graded,
    ordered_models,
    read_manifest,
    read_rows,
)
from tasks.report.runs import check_run_folder as check_run_files

RUN_FILES = ("manifest.json", "messages.parquet", "scores.parquet")
INQUIRY_DATA = Path(__file__).parent / "inquiry" / "data"


class FqrPanel(NamedTuple):
    """Several FQR judges over the same episodes: per episode, its follow-ups' verdicts (1 correct, 0 not,
    NaN ungraded) by grader column, the follow-ups' FQR weights, and every grader's SCORES rows."""

    judges: list[PanelJudge]
    verdicts: dict[tuple[str, str, int], np.ndarray]
    weights: dict[tuple[str, str, int], np.ndarray]
    rows: list[dict[str, Any]]


class RunData(NamedTuple):
    """The merged runs of one report: rows of the two run tables, and the mined empirical reference. With
    an FQR judge panel, the scores' FQR (and composite) is the panel's and `panel` holds every judge's."""

    manifests: list[RunManifest]
    models: list[str]
    messages: list[dict[str, Any]]
    scores: list[dict[str, Any]]
    reference: dict[str, Any] | None
    panel: FqrPanel | None = None


def check_run_folder(run_dir: Path) -> None:
    """Raise UserError unless `run_dir` holds what a finished consultation run writes."""
    check_run_files(run_dir, RUN_FILES, "consult", "consultation")


def read_reference(policy_version: str, data_dir: Path = INQUIRY_DATA) -> dict[str, Any] | None:
    """The mining's empirical reference (Hit@k and POVR of the real dialogues) and the policy rows it never
    mined (Hit@1 after those templates rests on the tie rule alone); None when not mined."""
    folder = data_dir / f"mined_{policy_version}"
    if not (folder / "reference.json").is_file():
        return None
    return {
        **json.loads((folder / "reference.json").read_text()),
        "policy_version": policy_version,
        "rows_never_mined": list(InquiryPolicy.from_directory(folder).unmined_rows),
    }


def _judge_run(manifest: RunManifest) -> JudgeRun:
    """A run's FQR judge as a panel sees it (a run config without one: the default): the judge is its model
    and rubric (one vote each); its params and epoch make a sample of that judge."""
    judge = manifest.config.get("judge") or {}
    params, epoch = canonical_params(judge.get("params") or {}), int(judge.get("epoch") or 0)
    return JudgeRun(
        judge=json.dumps({key: judge.get(key) for key in ("model", "rubric")}, sort_keys=True),
        sample=json.dumps([params, epoch], sort_keys=True),
        model=judge.get("model") or "",
        name=_judge_name(manifest),
        sample_label=sample_label(params, epoch),
        run_id=manifest.run_id,
    )


def _judge_name(manifest: RunManifest) -> str:
    judge = manifest.config.get("judge") or {}
    rubric = f" rubric {judge['rubric']}" if judge.get("rubric") else ""
    return f"{judge.get('model')}{rubric}"


def _judge_of(manifest: RunManifest) -> str:
    """Everything that makes a run's verdicts what they are: judge, params and epoch."""
    judge = manifest.config.get("judge") or {}
    epoch = f" epoch {judge['epoch']}" if judge.get("epoch") else ""
    return f"{_judge_name(manifest)} {json.dumps(judge.get('params') or {})}{epoch}"


def _agent_calls(messages: list[dict[str, Any]]) -> dict[tuple[str, str, int], tuple[str | None, ...]]:
    """Episode -> the call keys of its agent's messages in order: what makes two runs' episodes the same."""
    calls: defaultdict[tuple[str, str, int], list[tuple[Any, ...]]] = defaultdict(list)
    for row in messages:
        if row["role"] == "agent":
            calls[episode_key(row)].append((*message_order(row), row["call_key"]))
    return {episode: tuple(key for *_, key in sorted(rows)) for episode, rows in calls.items()}


def _follow_up_verdicts(row: dict[str, Any]) -> dict[int, float]:
    """A SCORES row's graded follow-ups: script index -> 1.0 correct, 0.0 not."""
    return {
        turn["index"]: float(turn["correct"])
        for turn in row["follow_ups"] or ()
        if turn["judge_status"] == "ok" and turn["correct"] is not None
    }


def _follow_up_statuses(row: dict[str, Any]) -> dict[int, str | None]:
    """A SCORES row's follow-ups: script index -> the judgment's status ('ok', 'unparseable', ...; None for a
    follow-up with no verdict, as `_follow_up_verdicts` reads it)."""
    turns = row["follow_ups"] or ()
    return {
        t["index"]: None if t["judge_status"] == "ok" and t["correct"] is None else t["judge_status"]
        for t in turns
    }


def fqr_of(weights: np.ndarray, verdicts: np.ndarray) -> float | None:
    """FQR over graded follow-ups (verdict not NaN): their weight graded correct over their weight."""
    graded = ~np.isnan(verdicts)
    total = weights[graded].sum()
    return float((weights[graded] * verdicts[graded]).sum() / total) if total else None


def _panel_scores(
    scores_by_run: list[list[dict[str, Any]]],
    judge_runs: list[JudgeRun],
    graders: dict[tuple[str, str], list[int]],
) -> tuple[list[dict[str, Any]], FqrPanel]:
    """The first judge's SCORES rows with FQR, its counts, the follow-ups' verdicts and the composite made
    the panel's (the consensus of the judges' verdicts on each follow-up), and the panel's grades."""
    judges = panel_judges(graders, judge_runs)
    by_grader = [
        {episode_key(row): row for i in runs for row in scores_by_run[i]} for runs in graders.values()
    ]
    rows, verdicts, weights = [], {}, {}
    for episode, row in by_grader[0].items():
        if row["status"] != "completed":
            rows.append(row)
            continue
        follow_ups = list(row["follow_ups"] or ())
        graded = [_follow_up_verdicts(grader[episode]) for grader in by_grader]
        matrix = np.array([[g.get(turn["index"], np.nan) for g in graded] for turn in follow_ups]).reshape(
            len(follow_ups), len(graded)
        )
        panel = panel_grades(judge_grades(matrix, judges)) if len(follow_ups) else np.array([])
        # A follow-up some grader did not grade has no panel verdict: it counts under that grader's status.
        statuses = [_follow_up_statuses(grader[episode]) for grader in by_grader]
        status = np.array(
            [
                [by_index.get(turn["index"], turn["judge_status"]) for by_index in statuses]
                for turn in follow_ups
            ],
            dtype=object,
        ).reshape(len(follow_ups), len(graded))
        verdicts[episode] = matrix
        weights[episode] = np.array([2.0 if turn["core"] else 1.0 for turn in follow_ups])
        turns = [
            {
                **turn,
                "correct": None if np.isnan(v) else bool(v),
                "judge_status": "ok" if not np.isnan(v) else not_ok,
            }
            for turn, v, not_ok in zip(follow_ups, panel, first_status_not_ok(status), strict=True)
        ]
        fqr = fqr_of(weights[episode], panel)
        primary = {**{name: row[name] for name in PRIMARY_METRICS}, "fqr": fqr}
        usage = {
            f"judge_{name}": sum(grader[episode][f"judge_{name}"] or 0 for grader in by_grader)
            for name in ("calls", "prompt_tokens", "completion_tokens", "cost_usd")
        }
        rows.append(
            {
                **row,
                **usage,
                "follow_ups": turns,
                "fqr": fqr,
                "fqr_judged": sum(turn["judge_status"] == "ok" for turn in turns),
                "fqr_unparseable": sum(turn["judge_status"] == "unparseable" for turn in turns),
                "composite": composite(primary).score,
            }
        )
    every_row = [row for grader in by_grader for row in grader.values()]
    return rows, FqrPanel(judges, verdicts, weights, every_row)


def load_runs(run_dirs: list[Path]) -> RunData:
    """Read and merge run folders; UserError when a folder is not a run or the runs do not merge."""
    for run_dir in run_dirs:
        check_run_folder(run_dir)
    manifests = [read_manifest(run_dir, CASES_FILE) for run_dir in run_dirs]
    scores_by_run = [read_rows(d / "scores.parquet", SCORES) for d in run_dirs]
    messages_by_run = [read_rows(d / "messages.parquet", MESSAGES) for d in run_dirs]
    judge_runs = [_judge_run(manifest) for manifest in manifests]
    graders = group_graders(judge_runs)
    panel = None
    if len(graders) == 1:
        check_mergeable(manifests, [{row["model"] for row in rows} for rows in scores_by_run])
        scores = [row for rows in scores_by_run for row in rows]
        messages = [row for rows in messages_by_run for row in rows]
    else:
        check_one_case_set(manifests)
        check_same_graded(
            manifests,
            graders,
            PanelRuns(
                [{row["model"] for row in rows} for rows in scores_by_run],
                [_agent_calls(messages) for messages in messages_by_run],
                [_judge_of(manifest) for manifest in manifests],
            ),
            "by different FQR judges",
            "episodes",
        )
        scores, panel = _panel_scores(scores_by_run, judge_runs, graders)
        messages = [row for i in next(iter(graders.values())) for row in messages_by_run[i]]
    if not scores:
        raise UserError(f"no episodes in {', '.join(map(str, run_dirs))}: nothing to report", "RUN_DIRS...")
    return RunData(
        manifests=manifests,
        models=ordered_models({row["model"] for row in scores}, [n for m in manifests for n in m.models]),
        messages=messages,
        scores=scores,
        reference=read_reference(manifests[0].config.get("policy_version", "v1")),
        panel=panel,
    )


def episode_key(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["model"], row["case_id"], row["epoch"]


STAGE_ORDER = {"history": 0, "diagnosis": 1, "treatment": 2, "follow_up": 3}


def message_order(row: dict[str, Any]) -> tuple[int, int, int]:
    """Where a message sits in its episode: stage, turn, then the speaker of the turn first (the agent
    asks in the history stage; the patient raises each follow-up)."""
    first = "patient" if row["stage"] == "follow_up" else "agent"
    return STAGE_ORDER.get(row["stage"], len(STAGE_ORDER)), row["turn"], int(row["role"] != first)
