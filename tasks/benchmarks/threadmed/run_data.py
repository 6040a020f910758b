"""Reading a report's runs: check a run folder, read its manifest, and merge the runs' responses,
judgments and the dataset's QA pairs into one array per column (Turns), with a judge panel's grades.
"""

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.benchmarks.threadmed import metrics as m
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, QA_PAIRS, RESPONSES
from tasks.benchmarks.threadmed.tables import panel_name
from tasks.core.preflight import UserError
from tasks.core.run_folder import REPORT_FIX, check_run_folder_benchmark
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
from tasks.report.runs import PanelRuns, check_each_unit_once, check_one_case_set, check_same_graded

RUN_KEY = ["run_id", "model", "condition", "thread_id", "turn"]
TURN_KEY = RUN_KEY[1:]


@dataclass(frozen=True)
class Turns:
    """One entry per asked turn of every (model, condition, thread), sorted; score is NaN unless judged ok."""

    model: np.ndarray
    condition: np.ndarray
    thread_id: np.ndarray
    conversation: np.ndarray
    turn: np.ndarray
    score: np.ndarray
    status: np.ndarray
    words: np.ndarray
    physician_words: np.ndarray
    input_usd: np.ndarray
    output_usd: np.ndarray
    total_usd: np.ndarray
    judge_usd: np.ndarray
    question: np.ndarray
    physician_answer: np.ndarray
    response: np.ndarray
    reason: np.ndarray
    truncated: np.ndarray  # the answer was cut at max_tokens (judged as given, or marked 'truncated')
    # With a judge panel: every grader's grades (score is then the panel's grade, reason None).
    grades: "Grades | None" = None

    @property
    def scored(self) -> np.ndarray:
        return ~np.isnan(self.score)


@dataclass(frozen=True)
class Grades:
    """A judge panel's grading of the turns: one column per grader (a judge's sample), as in Turns' rows."""

    score: np.ndarray  # NaN unless that grader's judgment parsed
    status: np.ndarray
    reason: np.ndarray
    usd: np.ndarray
    judge: np.ndarray  # per turn and judge, the judge's vote: the consensus of its samples' grades


@dataclass(frozen=True)
class RunData:
    """The merged runs of one report."""

    turns: Turns
    models: list[str]
    conditions: list[str]
    judge_model: str
    runs: list[dict[str, str]]
    dataset_fingerprint: str | None
    funnel: list[dict[str, Any]] | None
    judges: list[PanelJudge] | None = None  # a judge panel's judges, None with one judge


def _require(path: Path) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: is this a run directory written by evaluate-models?")
    return path


RUN_FILES = ("manifest.json", "responses.parquet", "judgments.parquet")


def check_run_folder(run_dir: Path) -> None:
    """Raise UserError unless `run_dir` holds what evaluate-models writes at the end of a run."""
    check_run_folder_benchmark(run_dir, "threadmed", REPORT_FIX)
    missing = next((name for name in RUN_FILES if not (run_dir / name).is_file()), None)
    if missing is None:
        return
    fix = "pass the --out folder of `threadmed evaluate`"
    if (run_dir / "ledger").is_dir():
        fix = f"finish the run: re-run `threadmed evaluate` with --out {run_dir}"
    raise UserError(f"{run_dir} is not an evaluation run (no {missing}); {fix}", "RUN_DIRS...")


def _read_contract(path: Path, columns: list[str], schema: pa.Schema) -> pa.Table:
    table = pq.read_table(_require(path), columns=columns).select(columns)
    return table.cast(pa.schema([schema.field(name) for name in columns]))


class RunManifest(NamedTuple):
    """What a report needs from a run's manifest.json (the dataset build is the run's case set)."""

    run_id: str
    run_dir: Path
    case_set_dir: Path
    fingerprint: str | None
    judge_model: str
    # What else makes a judge's grades what they are: its params as sent and its prompts' hashes.
    judge_setup: dict[str, Any]
    models: list[str]
    # The repeat index of the judge's grading (tasks/evals/config.py JudgeSpec.epoch); 0 when not recorded.
    judge_epoch: int = 0


def read_manifest(run_dir: Path) -> RunManifest:
    """RUN_DIR/manifest.json → the fields a report needs.

    Accepts top-level `judge`/`models` with `dataset.path`, or evaluate-models' `config` block with
    `dataset.dir`; a relative dataset path may be relative to the run directory.
    """
    raw = json.loads(_require(run_dir / "manifest.json").read_text())
    config = raw.get("config", {})
    models = raw.get("models") or config.get("models", [])
    declared = Path(raw["dataset"].get("path") or raw["dataset"]["dir"])
    dataset_dir = next((d for d in (declared, run_dir / declared) if (d / "dataset").exists()), declared)
    judge = raw.get("judge") or config["judge"]
    sent = next(iter(raw.get("sent", {}).get("judge", {}).values()), judge)
    return RunManifest(
        run_id=raw["run_id"],
        run_dir=run_dir,
        case_set_dir=dataset_dir,
        fingerprint=raw["dataset"].get("fingerprint"),
        judge_model=judge["model"],
        judge_setup={
            "params": sent.get("params") or {},
            # ThReadMed's prompts are the judge's: its rubric and its re-ask.
            "prompts": {version: p["sha256"] for version, p in raw.get("prompts", {}).items()},
        },
        models=[spec if isinstance(spec, str) else spec.get("name") or spec["model"] for spec in models],
        judge_epoch=int(judge.get("epoch") or 0),
    )


def _read_funnel(dataset_dir: Path) -> list[dict[str, Any]] | None:
    """funnel.json's rows as a list, whether stored bare or under a single key; None when absent."""
    path = dataset_dir / "funnel.json"
    if not path.exists():
        return None
    content = json.loads(path.read_text())
    if isinstance(content, dict):
        content = next((value for value in content.values() if isinstance(value, list)), [])
    return [row for row in content if isinstance(row, dict)]


def _judge_name(manifest: RunManifest) -> str:
    """The judge's model and prompts (its rubric and re-ask) by version and hash."""
    prompts = manifest.judge_setup["prompts"]
    versions = ", ".join(f"{version} {sha256[:12]}" for version, sha256 in sorted(prompts.items()))
    return f"{manifest.judge_model} [{versions or 'prompts not recorded'}]"


def _judge_of(manifest: RunManifest) -> str:
    """Everything that makes a run's grades what they are: judge, params as sent and epoch."""
    epoch = f" epoch {manifest.judge_epoch}" if manifest.judge_epoch else ""
    return f"{_judge_name(manifest)} {json.dumps(manifest.judge_setup['params'])}{epoch}"


def _judge_run(manifest: RunManifest) -> JudgeRun:
    """A run's judge as a panel sees it: the judge is its model and prompts' hashes (a rubric file changes the
    grades as much as the model does: one vote each); its params as sent and its epoch make a sample of
    that judge (a temperature or a repeat samples the same judge again)."""
    setup = manifest.judge_setup
    params = canonical_params(setup["params"])
    return JudgeRun(
        judge=json.dumps([manifest.judge_model, setup["prompts"]], sort_keys=True),
        sample=json.dumps([params, manifest.judge_epoch], sort_keys=True),
        model=manifest.judge_model,
        name=_judge_name(manifest),
        sample_label=sample_label(params, manifest.judge_epoch),
        run_id=manifest.run_id,
    )


def _answers(responses: pa.Table) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """(model, condition, thread_id, turn) -> (call_key, response): the answers a run's judge graded."""
    names = [*TURN_KEY, "call_key", "response"]
    return {row[:4]: row[4:] for row in zip(*(responses[name].to_pylist() for name in names), strict=True)}


def _units(responses: pa.Table) -> set[str]:
    """A run's (model, condition) pairs: what may come from one run only."""
    pairs = zip(responses["model"].to_pylist(), responses["condition"].to_pylist(), strict=True)
    return {f"{model} ({condition})" for model, condition in set(pairs)}


def _word_counts(texts: Iterable[str | None]) -> np.ndarray:
    return np.array([len(text.split()) if text else 0 for text in texts], dtype=np.int64)


def _turn_status(table: pa.Table, parse_status: str = "parse_status") -> np.ndarray:
    """'ok' for a parsed judgment of an answer; else why the turn is unscored: 'answer_failed' or 'not_run'
    when the model's answer failed or was not run (its judgment says only that it was not judged, as
    'not_run'), the judgment's status (its own call 'failed', 'unparseable', ...), or 'missing'."""
    response = table["status"]
    unanswered = pc.if_else(pc.equal(response, "failed"), "answer_failed", response)
    judged = pc.coalesce(table[parse_status], "missing")
    status = pc.if_else(pc.equal(response, "ok"), judged, unanswered)
    return pc.coalesce(status, "missing").to_numpy(zero_copy_only=False)


def _column(table: pa.Table, name: str, fill: float | None = None) -> np.ndarray:
    values = table[name]
    if fill is not None:
        values = pc.fill_null(values, fill)
    return values.to_numpy(zero_copy_only=False)


def _grades(table: pa.Table, judges: list[PanelJudge]) -> Grades:
    """The graders' columns score_<c>, reason_<c>, parse_status_<c>, judge_cost_usd_<c> as Grades."""
    columns = range(sum(len(judge.columns) for judge in judges))
    status = np.column_stack([_turn_status(table, f"parse_status_{c}") for c in columns])
    score = np.column_stack(
        [np.where(status[:, c] == "ok", _column(table, f"score_{c}", np.nan), np.nan) for c in columns]
    ).astype(float)
    return Grades(
        score=score,
        status=status,
        reason=np.column_stack([_column(table, f"reason_{c}") for c in columns]),
        usd=np.column_stack([_column(table, f"judge_cost_usd_{c}", 0.0) for c in columns]),
        judge=judge_grades(score, judges),
    )


def _turns_from_table(table: pa.Table, judges: list[PanelJudge] | None) -> Turns:
    """The turns of the joined table; with a judge panel, scored by the panel: the consensus of its
    judges' votes, each judge's vote being the consensus of its samples' (so samples do not outvote)."""
    if judges is None:
        grades = None
        status = _turn_status(table)
        score = np.where(status == "ok", _column(table, "score", np.nan), np.nan).astype(float)
        reason, judge_usd = _column(table, "reason"), _column(table, "judge_cost_usd", 0.0)
    else:
        grades = _grades(table, judges)
        score = panel_grades(grades.judge)
        status = np.where(np.isnan(score), first_status_not_ok(grades.status), "ok").astype(object)
        reason, judge_usd = np.full(len(score), None, dtype=object), grades.usd.sum(axis=1)
    thread_id = _column(table, "thread_id")
    response = _column(table, "response")
    return Turns(
        model=_column(table, "model"),
        condition=_column(table, "condition"),
        thread_id=thread_id,
        conversation=np.unique(thread_id, return_inverse=True)[1],
        turn=_column(table, "turn"),
        score=score,
        status=status,
        words=_word_counts(response),
        physician_words=_word_counts(_column(table, "answer")),
        input_usd=_column(table, "input_cost_usd", 0.0),
        output_usd=_column(table, "output_cost_usd", 0.0),
        total_usd=_column(table, "cost_usd", 0.0),
        judge_usd=judge_usd,
        question=_column(table, "question"),
        physician_answer=_column(table, "answer"),
        response=response,
        reason=reason,
        truncated=pc.fill_null(pc.equal(table["finish_reason"], "length"), False).to_numpy(
            zero_copy_only=False
        ),
        grades=grades,
    )


def _ordered(values: Iterable[str], preferred: Iterable[str]) -> list[str]:
    present = set(values)
    head = [value for value in dict.fromkeys(preferred) if value in present]
    return head + sorted(present - set(head))


def _judgments(run_dirs: list[Path], runs: list[int], suffix: str) -> pa.Table:
    """The judgments of the given runs, their judge's columns named with `suffix`."""
    columns = [*RUN_KEY, "score", "reason", "parse_status", "cost_usd"]
    table = pa.concat_tables(
        _read_contract(run_dirs[i] / "judgments.parquet", columns, JUDGMENTS.schema) for i in runs
    )
    return table.rename_columns(
        [*RUN_KEY, *(f"{name}{suffix}" for name in ("score", "reason", "parse_status", "judge_cost_usd"))]
    )


def load_runs(run_dirs: list[Path]) -> RunData:
    """Read and merge run directories (responses ⟕ judgments ⟕ the dataset's QA pairs). Runs that grade the
    same answers with several judges (or samples of one) join one column of judgments per grader (a
    judge's sample)."""
    manifests = [read_manifest(run_dir) for run_dir in run_dirs]
    response_columns = [
        *RUN_KEY, "status", "response", "finish_reason", "input_cost_usd", "output_cost_usd", "cost_usd",
        "call_key",
    ]  # fmt: skip
    responses_by_run = [
        _read_contract(run_dir / "responses.parquet", response_columns, RESPONSES.schema)
        for run_dir in run_dirs
    ]
    check_one_case_set(manifests)
    judge_runs = [_judge_run(manifest) for manifest in manifests]
    graders = group_graders(judge_runs)
    judges = None
    if len(graders) == 1:
        check_each_unit_once(manifests, [_units(responses) for responses in responses_by_run])
        responses = pa.concat_tables(responses_by_run)
        responses = responses.join(
            _judgments(run_dirs, list(range(len(run_dirs))), ""), RUN_KEY, join_type="left outer"
        )
    else:
        check_same_graded(
            manifests,
            graders,
            PanelRuns(
                [_units(responses) for responses in responses_by_run],
                [_answers(responses) for responses in responses_by_run],
                [_judge_of(manifest) for manifest in manifests],
            ),
            "differently",
            "answers",
        )
        judges = panel_judges(graders, judge_runs)
        responses = pa.concat_tables(responses_by_run[i] for i in next(iter(graders.values())))
        for column, runs in enumerate(graders.values()):
            judged = _judgments(run_dirs, runs, f"_{column}").drop_columns(["run_id"])
            responses = responses.join(judged, TURN_KEY, join_type="left outer")
    dataset_dir = manifests[0].case_set_dir
    qa_pairs = _read_contract(
        dataset_dir / "dataset" / "answered" / "qa_pairs.parquet",
        ["thread_id", "turn", "question", "answer"],
        QA_PAIRS.schema,
    )
    if responses.num_rows == 0:
        raise ValueError(f"no responses in {', '.join(map(str, run_dirs))}: nothing to report")
    table = responses.join(qa_pairs, ["thread_id", "turn"], join_type="left outer").sort_by(
        [(name, "ascending") for name in ("model", "condition", "thread_id", "turn")]
    )
    return RunData(
        turns=_turns_from_table(table, judges),
        models=_ordered(table["model"].to_pylist(), (name for x in manifests for name in x.models)),
        conditions=_ordered(table["condition"].to_pylist(), (m.BASELINE, m.ORACLE)),
        judge_model=manifests[0].judge_model if judges is None else panel_name([j.label for j in judges]),
        runs=[{"run_id": x.run_id, "path": str(x.run_dir)} for x in manifests],
        dataset_fingerprint=manifests[0].fingerprint,
        funnel=_read_funnel(dataset_dir),
        judges=judges,
    )
