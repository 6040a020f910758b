"""Turn stored responses and judgments into the paper's metrics, tables, figures and a browsable page.

Reads only RUN_DIR/{responses,judgments}.parquet, RUN_DIR/manifest.json and the dataset the manifest
names; it never calls a model, so a report can be re-made at any time. Several runs that share a
dataset and a judge merge into one report; runs that grade the same answers with different judges (or
samples of one judge: other params or epochs) make a judge panel, whose grade the metrics are computed
on. Output folder:

    metrics.json            every number (evaluation.md "Metrics"), null where undefined
    stats_*.parquet         the tables the figures are drawn from
    report.md, index.html   the paper's tables; the page adds the figures and a conversation browser
    fig_*.png               turn scores, wrong rate after each score, dataset funnel

ThReadMed's statistics are in metrics.py, its tables in tables.py and its figures in figures.py (beside
this module), built on the shared bootstrap, table renderers, page and artifacts of tasks/report/; this
module loads runs, assembles metrics.json and holds the tasks.
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
from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.benchmarks.threadmed import metrics as m
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, QA_PAIRS, RESPONSES
from tasks.benchmarks.threadmed.figures import (
    plot_dataset_funnel,
    plot_judge_panel,
    plot_turn_scores,
    plot_wrong_after,
)
from tasks.benchmarks.threadmed.settings import ReportSettings
from tasks.benchmarks.threadmed.tables import (
    build_tables,
    judge_note,
    panel_name,
    render_html,
    render_markdown,
    run_summary,
)
from tasks.core.preflight import UserError
from tasks.core.provenance import artifact_key
from tasks.core.run_folder import REPORT_FIX, check_run_folder_benchmark
from tasks.evals.verdicts import JUDGE_CUT
from tasks.report.artifacts import publish_markdown, publish_tables, report_prefix
from tasks.report.files import write_stats_table
from tasks.report.panel import (
    CONSENSUS_RULE,
    Differing,
    JudgeRun,
    PanelJudge,
    consensus_grades,
    differing,
    drift,
    exact_agreement,
    grader_labels,
    group_graders,
    judge_grades,
    judge_pairs,
    panel_judges,
    sample_label,
)
from tasks.report.runs import PanelRuns, check_each_unit_once, check_one_case_set, check_same_graded
from tasks.report.stats import (
    BootstrapCI,
    Undefined,
    bootstrap_mean,
    mann_whitney,
    seeded_rng,
    spearman,
    value_columns,
)

RUN_KEY = ["run_id", "model", "condition", "thread_id", "turn"]
TURN_KEY = RUN_KEY[1:]


# --- loading -------------------------------------------------------------------------------------------


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
    return JudgeRun(
        judge=json.dumps([manifest.judge_model, setup["prompts"]], sort_keys=True),
        sample=json.dumps([setup["params"], manifest.judge_epoch], sort_keys=True),
        model=manifest.judge_model,
        name=_judge_name(manifest),
        sample_label=sample_label(setup["params"], manifest.judge_epoch),
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
    """'ok' for a parsed judgment; else the judgment's status, the response's, or 'missing' (never judged)."""
    answered = pc.if_else(pc.equal(table["status"], "ok"), "missing", table["status"])
    return pc.coalesce(table[parse_status], answered, "missing").to_numpy(zero_copy_only=False)


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
        score = consensus_grades(grades.judge)
        status = np.where(np.isnan(score), grades.status[:, 0], "ok").astype(object)
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


# --- metrics -------------------------------------------------------------------------------------------


def _points(value: float | None) -> float | None:
    """A score or a rate in [0, 1] on the report's 0-100 scale."""
    return None if value is None else 100.0 * value


def _interval(ci: BootstrapCI) -> list[float] | None:
    return None if ci.low is None else [100.0 * ci.low, 100.0 * ci.high]


def _estimate(ci: BootstrapCI) -> dict[str, Any]:
    return {"n": ci.n, "mean": _points(ci.estimate), "ci": _interval(ci)}


class Sample(NamedTuple):
    """The judged turns of one (model, condition), with what its bootstraps need."""

    conversation: np.ndarray
    turn: np.ndarray
    score: np.ndarray
    words: np.ndarray
    settings: ReportSettings
    labels: tuple[str, ...]

    def mean(self, selected: np.ndarray, values: np.ndarray, *label: str) -> BootstrapCI:
        """Bootstrap the mean of `values[selected]`, clustered by conversation if the settings say so."""
        clusters = self.conversation[selected] if self.settings.clustered else None
        return bootstrap_mean(
            values[selected],
            seeded_rng(self.settings.seed, *self.labels, *label),
            clusters=clusters,
            n_resamples=self.settings.n_resamples,
            level=self.settings.level,
        )


def _overall(sample: Sample, n_unscored: int) -> dict[str, Any]:
    everything = np.ones(len(sample.score), dtype=bool)
    shares = {
        value: float(np.mean(sample.score == value)) if len(sample.score) else None
        for value in m.SCORE_LABELS
    }
    return {
        **_estimate(sample.mean(everything, sample.score, "overall")),
        "correct_pct": _points(shares[m.CORRECT]),
        "partial_pct": _points(shares[m.PARTIAL]),
        "wrong_pct": _points(shares[m.WRONG]),
        "avg_words": float(sample.words.mean()) if len(sample.words) else None,
        "n_unscored": n_unscored,
    }


def _in_group(turns: np.ndarray, first: int, last: int | None) -> np.ndarray:
    return turns >= first if last is None else (turns >= first) & (turns <= last)


def _turn_groups(sample: Sample) -> dict[str, dict[str, Any]]:
    wrong = (sample.score == m.WRONG).astype(float)
    t0 = sample.score[sample.turn == 0]
    groups = {}
    for name, first, last in m.TURN_GROUPS:
        selected = _in_group(sample.turn, first, last)
        test = None if first == 0 else mann_whitney(t0, sample.score[selected], alternative="greater")
        wrong_ci = sample.mean(selected, wrong, "wrong", name)
        groups[name] = {
            **_estimate(sample.mean(selected, sample.score, "group", name)),
            "wrong_pct": _points(wrong_ci.estimate),
            "wrong_ci": _interval(wrong_ci),
            "p_vs_t0": None if test is None else test.p_value,
        }
    return groups


def _per_turn(sample: Sample) -> dict[str, dict[str, Any]]:
    return {
        str(t): _estimate(sample.mean(sample.turn == t, sample.score, "turn", str(t))) for t in m.SINGLE_TURNS
    }


def _consistency(sample: Sample) -> dict[str, Any]:
    result = m.conversation_consistency(
        sample.conversation,
        sample.turn,
        sample.score,
        seeded_rng(sample.settings.seed, *sample.labels, "ccs"),
        n_resamples=sample.settings.n_resamples,
        level=sample.settings.level,
    )
    return {
        "n_conversations": result.n_conversations,
        "ccs": _points(result.ccs.estimate),
        "ci": _interval(result.ccs),
        "floor": _points(result.floor),
        "ceiling": _points(result.ceiling),
        "volatile_pct": _points(result.volatile_share),
        "degraded_pct": _points(result.degraded_share),
    }


def _propagation(sample: Sample) -> m.Propagation:
    return m.error_propagation(
        sample.conversation,
        sample.turn,
        sample.score,
        [
            seeded_rng(sample.settings.seed, *sample.labels, "after", label)
            for label in m.SCORE_LABELS.values()
        ],
        clustered=sample.settings.clustered,
        n_resamples=sample.settings.n_resamples,
        level=sample.settings.level,
    )


def _propagation_json(result: m.Propagation) -> dict[str, Any]:
    return {
        "epr": _points(result.epr.estimate),
        "ci": _interval(result.epr),
        "n_after_wrong": result.epr.n,
        "after_correct": _points(result.after_correct.estimate),
        "after_partial": _points(result.after_partial.estimate),
        "amplification": result.amplification,
    }


def _costs(turns: Turns, rows: np.ndarray) -> dict[str, float]:
    """Inference cost of every call of (model, condition), failed ones included."""
    return {
        "input_usd": float(turns.input_usd[rows].sum()),
        "output_usd": float(turns.output_usd[rows].sum()),
        "total_usd": float(turns.total_usd[rows].sum()),
    }


def _sample(
    turns: Turns,
    rows: np.ndarray,
    settings: ReportSettings,
    labels: tuple[str, ...],
    score: np.ndarray | None = None,
) -> Sample:
    """The judged turns among `rows`, by their score or by the given grades (one judge's of a panel)."""
    score = turns.score if score is None else score
    judged = rows & ~np.isnan(score)
    return Sample(
        turns.conversation[judged],
        turns.turn[judged],
        score[judged],
        turns.words[judged],
        settings,
        labels,
    )


def _condition_metrics(sample: Sample, propagation: m.Propagation, n_unscored: int) -> dict[str, Any]:
    length = spearman(sample.words, sample.score)
    return {
        "overall": _overall(sample, n_unscored),
        "turn_groups": _turn_groups(sample),
        "per_turn": _per_turn(sample),
        "ccs": _consistency(sample),
        "epr": _propagation_json(propagation),
        "length": {"spearman_r": length.r, "p": length.p_value},
    }


def _ablation(baseline: Sample, oracle: Sample) -> dict[str, Any]:
    result = m.oracle_ablation(baseline.turn, baseline.score, oracle.turn, oracle.score)
    return {
        "t0": _points(result.t0),
        "baseline_t2": _points(result.baseline_t2),
        "oracle_t2": _points(result.oracle_t2),
        "q_difficulty_share": result.q_difficulty_share,
        "context_effect": _points(result.context_effect),
        "p": None if result.test is None else result.test.p_value,
    }


def _coverage(turns: Turns, models: list[str]) -> dict[str, Any] | None:
    """Coverage over baseline QA pairs judged for every model; None with fewer than two models."""
    judged = turns.scored & (turns.condition == m.BASELINE)
    covered = [model for model in models if np.any(judged & (turns.model == model))]
    if len(covered) < 2:
        return None
    pair = turns.conversation.astype(np.int64) * (int(turns.turn.max()) + 1) + turns.turn
    common = None
    for model in covered:
        keys = pair[judged & (turns.model == model)]
        common = keys if common is None else np.intersect1d(common, keys)
    correct = np.column_stack(
        [
            np.isin(common, pair[judged & (turns.model == model) & (turns.score == m.CORRECT)])
            for model in covered
        ]
    )
    result = m.coverage(correct, covered)
    return {
        "n_pairs": result.n_pairs,
        "unsolved_pct": _points(result.unsolved_share),
        "unique": result.unique,
    }


def _turn_rows(model: str, condition: str, per_turn: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "model": model,
            "condition": condition,
            "turn": int(turn),
            "n": row["n"],
            "mean": row["mean"],
            "ci_low": row["ci"][0] if row["ci"] else None,
            "ci_high": row["ci"][1] if row["ci"] else None,
        }
        for turn, row in per_turn.items()
    ]


def _transition_rows(model: str, condition: str, result: m.Propagation) -> list[dict[str, Any]]:
    rates = zip(m.SCORE_LABELS.items(), (result.epr, result.after_partial, result.after_correct), strict=True)
    return [
        {
            "model": model,
            "condition": condition,
            "previous_score": value,
            "previous_label": label,
            "n": ci.n,
            "wrong_next_pct": _points(ci.estimate),
            "ci_low": _points(ci.low),
            "ci_high": _points(ci.high),
        }
        for (value, label), ci in rates
    ]


def _physician_avg_words(turns: Turns) -> float | None:
    """Mean words of the physician answers of the distinct QA pairs asked."""
    _, first = np.unique(np.column_stack([turns.conversation, turns.turn]), axis=0, return_index=True)
    return float(turns.physician_words[first].mean()) if len(first) else None


def _unscored(status: np.ndarray) -> dict[str, Any]:
    """The statuses of unscored judgments -> the unparseable count, the count of those whose judge reply was
    cut at max_tokens (`n_judge_cut`, parse status 'judge_cut') and each status's count."""
    statuses, counts = np.unique(status.astype(str), return_counts=True)
    excluded = {str(status): int(count) for status, count in zip(statuses, counts, strict=True)}
    return {
        "unparseable": excluded.get("unparseable", 0),
        "n_judge_cut": excluded.get(JUDGE_CUT, 0),
        "excluded": excluded,
    }


def _judge_summary(turns: Turns, judge_model: str) -> dict[str, Any]:
    """Judge cost and the unscored turns by status (unparseable, judge_cut, failed, not_run, missing)."""
    unscored = _unscored(turns.status[~turns.scored])
    return {"model": judge_model, "cost_usd": float(turns.judge_usd.sum()), **unscored}


# The judge panel's turns where the judges differ most, listed in the report.
MAX_DISAGREEMENTS = 20


def _pct(share: float | Undefined) -> float | Undefined:
    """A share in [0, 1] on the report's 0-100 scale; an undefined share stays undefined."""
    return share if isinstance(share, Undefined) else 100.0 * share


def _differing_json(result: Differing) -> dict[str, Any]:
    return {"n": result.n, "count": result.count, **value_columns("pct", _pct(result.share))}


def _panel_condition(
    turns: Turns, rows: np.ndarray, judges: list[PanelJudge], overall: dict[str, Any], sample: Sample
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """One (model, condition)'s panel entry: each judge's mean and drift, the panel's mean (the overall
    one), how often the judges differ, and pairwise exact agreement; with its stats rows."""
    grades = turns.grades
    assert grades is not None
    model, condition = sample.labels
    entry: dict[str, Any] = {"judges": {}}
    panel_rows, pair_rows = [], []
    for index, judge in enumerate(judges):
        mean = _sample(turns, rows, sample.settings, sample.labels, grades.judge[:, index])
        estimate = _estimate(
            mean.mean(np.ones(len(mean.score), dtype=bool), mean.score, "judge", judge.label)
        )
        drifted = drift(grades.score[rows], judge, "turn")
        entry["judges"][judge.label] = {
            **estimate,
            "drift": None if drifted is None else _differing_json(drifted),
        }
        panel_rows.append(_panel_row(model, condition, judge.label, estimate, len(judge.columns), drifted))
    entry["panel"] = {key: overall[key] for key in ("n", "mean", "ci")}
    everyone = differing(grades.judge[rows], "turn", "judges")
    entry["disagreement"] = _differing_json(everyone)
    panel_rows.append(_panel_row(model, condition, "panel", entry["panel"], None, None, everyone))
    entry["pairs"] = []
    for first, second, pair in judge_pairs(grades.judge[rows], judges, "turn"):
        exact = value_columns("exact_pct", _pct(exact_agreement(pair)))
        entry["pairs"].append({"judges": [first, second], "n": pair.n, **exact})
        pair_rows.append(
            {
                "model": model,
                "condition": condition,
                "judge_a": first,
                "judge_b": second,
                "n": pair.n,
                **exact,
            }
        )
    return entry, panel_rows, pair_rows


def _panel_row(
    model: str,
    condition: str,
    judge: str,
    estimate: dict[str, Any],
    samples: int | None,
    drifted: Differing | None,
    judges_differ: Differing | None = None,
) -> dict[str, Any]:
    """A row of stats_judge_panel: a judge's (or the panel's) mean, its drift, or the judges' disagreement."""
    ci = estimate["ci"] or [None, None]
    return {
        "model": model,
        "condition": condition,
        "judge": judge,
        "n": estimate["n"],
        "mean": estimate["mean"],
        "ci_low": ci[0],
        "ci_high": ci[1],
        "n_samples": samples,
        "drift_n": None if drifted is None else drifted.n,
        "drift_changed": None if drifted is None else drifted.count,
        **value_columns("drift_pct", None if drifted is None else _pct(drifted.share)),
        "differ_n": None if judges_differ is None else judges_differ.n,
        "differ_count": None if judges_differ is None else judges_differ.count,
        **value_columns("differ_pct", None if judges_differ is None else _pct(judges_differ.share)),
    }


def _disagreements(turns: Turns, judges: list[PanelJudge]) -> list[dict[str, Any]]:
    """The turns every judge graded where they differ most (widest spread of grades), at most
    MAX_DISAGREEMENTS, in report order among equal spreads."""
    grades = turns.grades
    assert grades is not None
    spread = np.ptp(grades.judge, axis=1)  # NaN unless every judge graded the turn
    differ = np.flatnonzero(spread > 0)
    top = differ[np.argsort(-spread[differ], kind="stable")][:MAX_DISAGREEMENTS]
    return [
        {
            "model": str(turns.model[i]),
            "condition": str(turns.condition[i]),
            "thread_id": str(turns.thread_id[i]),
            "turn": int(turns.turn[i]),
            "grades": {judge.label: float(grades.judge[i, j]) for j, judge in enumerate(judges)},
            "panel": float(turns.score[i]),
        }
        for i in top
    ]


def _panel_judges_json(turns: Turns, judges: list[PanelJudge]) -> list[dict[str, Any]]:
    """Each judge over the whole report: its samples and runs, cost, unscored turns and drift."""
    grades = turns.grades
    assert grades is not None
    entries = []
    for index, judge in enumerate(judges):
        drifted = drift(grades.score, judge, "turn")
        entries.append(
            {
                "label": judge.label,
                "model": judge.model,
                "samples": judge.samples,
                "n_samples": len(judge.samples),
                "runs": judge.runs,
                "cost_usd": float(grades.usd[:, judge.columns].sum()),
                # judgments of all its samples
                **_unscored(grades.status[:, judge.columns][np.isnan(grades.score[:, judge.columns])]),
                "unscored_turns": int(np.isnan(grades.judge[:, index]).sum()),
                "drift": None if drifted is None else _differing_json(drifted),
            }
        )
    return entries


PANEL_RULE = f"{CONSENSUS_RULE} Every other table is computed on this panel grade."


PANEL_STATS = pa.schema(
    [
        *((name, pa.string()) for name in ("model", "condition", "judge")),
        ("n", pa.int64()),
        *((name, pa.float64()) for name in ("mean", "ci_low", "ci_high")),
        *((name, pa.int64()) for name in ("n_samples", "drift_n", "drift_changed")),
        ("drift_pct", pa.float64()),
        ("drift_pct_undefined", pa.string()),
        *((name, pa.int64()) for name in ("differ_n", "differ_count")),
        ("differ_pct", pa.float64()),
        ("differ_pct_undefined", pa.string()),
    ]
)
PAIR_STATS = pa.schema(
    [
        *((name, pa.string()) for name in ("model", "condition", "judge_a", "judge_b")),
        ("n", pa.int64()),
        ("exact_pct", pa.float64()),
        ("exact_pct_undefined", pa.string()),
    ]
)


class StatsTables(NamedTuple):
    turns: list[dict[str, Any]]
    transitions: list[dict[str, Any]]
    panel: list[dict[str, Any]]
    pairs: list[dict[str, Any]]


def compute_metrics(run: RunData, settings: ReportSettings) -> tuple[dict[str, Any], StatsTables]:
    """metrics.json's content and the rows of the stats tables. Pure: numbers depend only on the inputs."""
    turns = run.turns
    models: dict[str, dict[str, Any]] = {}
    panel: dict[str, dict[str, Any]] = {}
    stats = StatsTables([], [], [], [])
    for model in run.models:
        samples = {}
        for condition in run.conditions:
            rows = (turns.model == model) & (turns.condition == condition)
            if not rows.any():
                continue
            sample = samples[condition] = _sample(turns, rows, settings, (model, condition))
            propagation = _propagation(sample)
            entry = _condition_metrics(sample, propagation, int((rows & ~turns.scored).sum()))
            entry["overall"]["n_truncated"] = int((rows & turns.truncated).sum())
            models.setdefault(model, {})[condition] = {**entry, "cost": _costs(turns, rows)}
            stats.turns.extend(_turn_rows(model, condition, entry["per_turn"]))
            stats.transitions.extend(_transition_rows(model, condition, propagation))
            if run.judges:
                panel_entry, panel_rows, pair_rows = _panel_condition(
                    turns, rows, run.judges, entry["overall"], sample
                )
                panel.setdefault(model, {})[condition] = panel_entry
                stats.panel.extend(panel_rows)
                stats.pairs.extend(pair_rows)
        both = m.BASELINE in samples and m.ORACLE in samples
        models[model]["ablation"] = _ablation(samples[m.BASELINE], samples[m.ORACLE]) if both else None
    metrics = {
        "models": models,
        "physician_avg_words": _physician_avg_words(turns),
        "coverage": _coverage(turns, run.models),
        "judge": _judge_summary(turns, run.judge_model),
        **(
            {
                "judge_panel": {
                    "rule": PANEL_RULE,
                    "judges": _panel_judges_json(turns, run.judges),
                    "models": panel,
                    "disagreements": _disagreements(turns, run.judges),
                }
            }
            if run.judges
            else {}
        ),
        "bootstrap": {
            "resamples": settings.n_resamples,
            "seed": settings.seed,
            "level": settings.level,
            "method": "percentile, clustered by conversation" if settings.clustered else "percentile",
        },
        "runs": run.runs,
        "dataset_fingerprint": run.dataset_fingerprint,
    }
    return metrics, stats


def funnel_rows(funnel: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stage totals of funnel.json (rows whose reason is null), in stage order."""
    totals = [row for row in funnel if row.get("reason") is None and row.get("count_rows") is not None]
    totals.sort(key=lambda row: (row.get("stage_order") is None, row.get("stage_order")))
    return [
        {
            "stage_order": row.get("stage_order"),
            "stage": str(row.get("stage")),
            "count_rows": int(row["count_rows"]),
        }
        for row in totals
    ]


# --- HTML page -----------------------------------------------------------------------------------------


# About 450 KB of answers per chunk: a conversation opens after a few ms of decoding, and gzip, which
# restarts with each chunk, loses about 1% to the split.
CONVERSATIONS_PER_CHUNK = 50


class BrowserData(NamedTuple):
    """The conversation browser's data: an index read when the page opens, and chunks read on demand."""

    index: dict[str, Any]
    chunks: list[list[list[list[str | None]]]]


def _graded_turn(turns: Turns, i: int) -> tuple[list[Any], list[str | None]]:
    """A turn's [turn, score, status] and [answer, judge reason]; with a panel, the panel's grade and status
    followed by every grader's grade, and the answer followed by every grader's reason."""
    score = None if np.isnan(turns.score[i]) else float(turns.score[i])
    row: list[Any] = [int(turns.turn[i]), score, turns.status[i]]
    if turns.grades is None:
        return row, [turns.response[i], turns.reason[i]]
    grades = [None if np.isnan(grade) else float(grade) for grade in turns.grades.score[i]]
    return [*row, *grades], [turns.response[i], *turns.grades.reason[i]]


def browser_data(
    turns: Turns, models: list[str], conditions: list[str], judges: list[PanelJudge] | None = None
) -> BrowserData:
    """The index holds what filters and summaries need (conversations as index lists of turn, score and
    status) and each QA pair's texts once; chunk i holds the [answer, judge reason] of every turn of
    conversations i * CONVERSATIONS_PER_CHUNK onwards, read when one of them is opened. With a judge
    panel, the index names its graders ("judges") and each turn adds their grades, its texts their reasons."""
    thread_ids = list(dict.fromkeys(turns.thread_id))
    thread_index = {thread_id: i for i, thread_id in enumerate(thread_ids)}
    pairs: list[dict[str, list[str | None]]] = [{} for _ in thread_ids]
    conversations: dict[tuple[int, int, int], list[tuple[list[Any], list[str | None]]]] = {}
    for i in range(len(turns.turn)):
        thread, turn = thread_index[turns.thread_id[i]], int(turns.turn[i])
        pairs[thread].setdefault(str(turn), [turns.question[i], turns.physician_answer[i]])
        key = (models.index(turns.model[i]), conditions.index(turns.condition[i]), thread)
        conversations.setdefault(key, []).append(_graded_turn(turns, i))
    ordered = sorted(conversations.items())
    texts = [[text for _, text in rows] for _, rows in ordered]
    index = {
        "models": models,
        "conditions": conditions,
        "max_turn": int(turns.turn.max(initial=0)),
        "threads": [[thread_id, pairs[i]] for i, thread_id in enumerate(thread_ids)],
        "conversations": [[*key, [row for row, _ in rows]] for key, rows in ordered],
        "conversations_per_chunk": CONVERSATIONS_PER_CHUNK,
        **({"judges": grader_labels(judges)} if judges else {}),
    }
    chunks = [texts[i : i + CONVERSATIONS_PER_CHUNK] for i in range(0, len(texts), CONVERSATIONS_PER_CHUNK)]
    return BrowserData(index, chunks)


# --- tasks ---------------------------------------------------------------------------------------------


def _write_stats_and_figures(
    run: RunData, stats: StatsTables, out_dir: Path, note: str | None
) -> dict[str, bytes]:
    """Store the stats tables, draw each figure from its table, and return the PNGs by figure id."""
    turns = write_stats_table(stats.turns, out_dir / "stats_turns.parquet")
    plot_turn_scores(turns, out_dir / "fig_turn_scores.png", note)
    transitions = write_stats_table(stats.transitions, out_dir / "stats_transitions.parquet")
    plot_wrong_after(transitions, out_dir / "fig_wrong_after.png", note)
    drawn = ["fig_turn_scores", "fig_wrong_after"]
    if stats.panel:
        panel = write_stats_table(stats.panel, out_dir / "stats_judge_panel.parquet", PANEL_STATS)
        plot_judge_panel(panel, out_dir / "fig_judge_panel.png", note)
        drawn.append("fig_judge_panel")
        write_stats_table(stats.pairs, out_dir / "stats_judge_pairs.parquet", PAIR_STATS)
    funnel = funnel_rows(run.funnel or [])
    if funnel:
        plot_dataset_funnel(
            write_stats_table(funnel, out_dir / "stats_funnel.parquet"), out_dir / "fig_dataset_funnel.png"
        )
        drawn.append("fig_dataset_funnel")
    return {name: (out_dir / f"{name}.png").read_bytes() for name in drawn}


@task(name="build-report", cache_policy=NO_CACHE)
def build_report(run_dirs: list[str], out_dir: str, settings: ReportSettings) -> str:
    """Run directories → out_dir with metrics.json, stats_*.parquet, report.md, fig_*.png, index.html."""
    run = load_runs([Path(run_dir) for run_dir in run_dirs])
    metrics, stats = compute_metrics(run, settings)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: an undefined value must be null, and a NaN reaching here is a bug to surface.
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, allow_nan=False))
    figures = _write_stats_and_figures(run, stats, out, judge_note(run.judge_model))
    tables = build_tables(metrics)
    (out / "report.md").write_text(render_markdown(metrics, tables, list(figures)))
    data = browser_data(run.turns, run.models, run.conditions, run.judges)
    (out / "index.html").write_text(render_html(metrics, tables, figures, data.index, data.chunks))
    return str(out)


@task(name="publish-report-artifacts", cache_policy=NO_CACHE)
def publish_report_artifacts(report_dir: str) -> list[str]:
    """A stored report → one Prefect table artifact per table and a Markdown summary; returns their keys."""
    out = Path(report_dir)
    metrics = json.loads((out / "metrics.json").read_text())
    prefix = report_prefix("report", [run["run_id"] for run in metrics["runs"]], out)
    keys = publish_tables(build_tables(metrics), prefix)
    summary_key = publish_markdown(
        (out / "report.md").read_text(), artifact_key(prefix, "summary"), run_summary(metrics)
    )
    return [*keys, summary_key]
