"""A run's outputs: its tables by contract, its summary (counts, costs, failures) and its manifest.

RUN_DIR holds `ledger/` (every call, see tasks/llm/ledger.py), one Parquet table per output contract
(ThReadMed-QA: responses, judgments; SNOMED: conversations, predictions, scores), `manifest.json`, and
`benchmark.json`, naming the one benchmark the folder belongs to (run_folder.py).
The tables are rewritten from the calls on every run, so a re-run of the same command into the same
RUN_DIR completes them without repeating any successful call.
"""

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pyarrow as pa
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture, as_completed
from pydantic import BaseModel

from tasks.core.files import write_json_atomic, write_parquet_atomic
from tasks.core.provenance import code_provenance, run_artifact_key, settings_sha256
from tasks.data.contracts import Contract
from tasks.evals.call_totals import REUSED, ModeTotals
from tasks.evals.config import EvaluationSettings
from tasks.evals.plan import RunPlan
from tasks.llm.budget import CapStop
from tasks.llm.errors import fix_for, is_permanent
from tasks.llm.ledger import CallLedger
from tasks.report.tables import Table, table_markdown

PACKAGES = ("litellm", "prefect", "pyarrow", "pydantic", "rapidfuzz", "openai", "httpx")


class RunTables(NamedTuple):
    """The contracts of a run's tables: those written from the solve steps' rows, and from the score
    steps' rows. Each contract takes its own columns from the rows, so one row can feed two tables."""

    solved: tuple[Contract, ...]
    scored: tuple[Contract, ...]


class GroupSummary(BaseModel):
    """Counts and costs of one model in one group (ThReadMed: a condition)."""

    model: str
    group: str
    counts: dict[str, int]  # by column label of the summary
    score: float | None
    cost_usd: float


class JobFailure(BaseModel):
    """A job whose solve or score step raised (a full disk, a bad case file), or whose task crashed: its rows
    are missing (its solved rows kept when scoring raised)."""

    job: str
    stage: Literal["solve", "score", "job"]  # "job": the task ended without a step raising (crashed)
    error: str  # the exception as raised, e.g. "OSError: [Errno 28] No space left on device"

    def line(self) -> str:
        return f"{self.stage} {self.job} failed: {self.error}"


class RunSummary(BaseModel):
    run_id: str
    run_dir: Path
    groups: list[GroupSummary]
    failed_calls: dict[str, int]
    failed_jobs: list[JobFailure] = []  # jobs whose task raised; the tables hold every other job
    calls_by_mode: dict[str, ModeTotals] = {}  # every call in the run folder's ledger, by how it was made
    # The calls this invocation made (or reused) and what they cost, by mode; None in manifests written
    # before it was recorded.
    invocation_calls: dict[str, ModeTotals] | None = None
    failure_examples: dict[str, str] = {}  # per failure kind, one error as recorded (the provider's words)
    cost_cap: CapStop | None = None  # where the spending cap stopped the run (its calls past it not made)
    group_label: str = "condition"
    count_labels: list[str] = []  # the count columns in order; line breaks keep a table 80 columns wide
    score_label: str = "mean"
    score_note: str = ""  # what the score is, for the title line
    # By-epoch summaries: each model's score over the rows of all its epochs, pooled as its report pools them
    # (epochs repeat the same cases). None where the groups are not repeats (ThReadMed's conditions), and in
    # manifests written before it was recorded.
    overall: dict[str, float | None] | None = None

    def tables(self) -> list[Table]:
        """One table per model, titled with its whole name, one row per group: what the CLI prints
        and the summary artifact shows."""
        tables = []
        for model in dict.fromkeys(group.model for group in self.groups):
            rows = []
            for group in (g for g in self.groups if g.model == model):
                counts = [f"{group.counts.get(label, 0):,}" for label in self.count_labels]
                score = "—" if group.score is None else f"{group.score:.1f}"
                rows.append([group.group, *counts, score, f"{group.cost_usd:,.4f}"])
            if self.overall is not None and len(rows) > 1:
                rows.append(self._overall_row(model))
            numbers = (*self.count_labels, self.score_label, "USD")
            tables.append(
                Table(f"run-{model}", model, [self.group_label, *numbers], rows, "", right_aligned=numbers)
            )
        return tables

    def _overall_row(self, model: str) -> list[str]:
        """A model's row over all its epochs: counts and cost summed, the pooled score."""
        groups = [group for group in self.groups if group.model == model]
        counts = [f"{sum(group.counts.get(label, 0) for group in groups):,}" for label in self.count_labels]
        score = self.overall.get(model) if self.overall is not None else None
        cost = sum(group.cost_usd for group in groups)
        return ["all", *counts, "—" if score is None else f"{score:.1f}", f"{cost:,.4f}"]

    def title(self) -> str:
        return f"Run {self.run_id}: {self.score_note}" if self.score_note else f"Run {self.run_id}"

    def markdown(self) -> str:
        """The run's outcome for people: whether calls failed (an example of each kind), a table per model."""
        outcome = self.failure_message() if self.failed else "Every call succeeded."
        lines = [f"# Evaluation run {self.run_id}", "", f"**{outcome}**", ""]
        if self.calls_by_mode or self.invocation_calls is not None:
            lines += [f"- {line}" for line in self.calls_lines()] + [""]
        if self.failure_examples or self.failed_jobs:
            lines += [f"- {line}" for line in self.failure_lines()] + [""]
        if self.score_note:
            lines += [f"{self.score_label}: {self.score_note}", ""]
        lines += [table_markdown(table, None) for table in self.tables()]
        return "\n".join(lines)

    @property
    def failed(self) -> bool:
        """Whether calls or whole jobs failed (the run is then incomplete)."""
        return bool(self.failed_calls or self.failed_jobs)

    def failure_message(self) -> str:
        """What failed and what will finish the run: a re-run for transient failures, a fix for the others."""
        if not self.failed_calls:
            return self._jobs_message()
        return " ".join(filter(None, (self._calls_message(), self._jobs_message())))

    def outcome_message(self) -> str:
        """What failed, its fix, and the error of the first failure of each kind in the provider's own words:
        the message of a failed run's state, which the UI, `prefect deployment run` and the CLI show."""
        if not self.failure_examples:
            return self.failure_message()
        examples = " ".join(
            f"[{_label(kind)}] {error}" for kind, error in sorted(self.failure_examples.items())
        )
        return f"{self.failure_message().rstrip('.')}. First error of each kind: {examples}"

    def _jobs_message(self) -> str:
        if not self.failed_jobs:
            return ""
        count = len(self.failed_jobs)
        jobs = "1 job failed and is" if count == 1 else f"{count} jobs failed and are"
        others = " (and others)" if count > 1 else ""
        return (
            f"{jobs} missing from the tables: {self.failed_jobs[0].line()}{others}."
            " Fix the cause, then re-run the same command (completed calls are kept)."
        )

    def _calls_message(self) -> str:
        kinds = ", ".join(f"{_label(kind)} {n}" for kind, n in sorted(self.failed_calls.items()))
        total = sum(self.failed_calls.values())
        failed = f"{total} {'call' if total == 1 else 'calls'} failed: {kinds}"
        kept = "(completed calls are kept)"
        fixes = "; ".join(f"[{_label(k)}] {fix_for(k)}" for k in sorted(self.failed_calls) if is_permanent(k))
        transient = [_label(k) for k in sorted(self.failed_calls) if not is_permanent(k)]
        if not fixes:
            return f"{failed}; re-run the same command to finish {kept}"
        if not transient:
            advice = f"A re-run alone will not help; fix first: {fixes}. Then re-run the same command {kept}"
            return f"{failed}. {advice}"
        return (
            f"{failed}. Re-run the same command to retry the {' and '.join(transient)} failures {kept};"
            f" the others need a fix first: {fixes}"
        )

    def calls_lines(self) -> list[str]:
        """What this invocation made and paid, then the run's totals over every invocation, e.g.
        'Calls made by this invocation: 6 single (USD 0.0012)' and
        'Calls of the run, every invocation: 8 single (USD 0.0016)'."""
        run = f"Calls of the run, every invocation: {_calls(self.calls_by_mode)}"
        if self.invocation_calls is None:
            return [run]
        return [f"Calls made by this invocation: {_calls(self.invocation_calls)}", run]

    def failure_lines(self) -> list[str]:
        """One line per failure kind: its count and one of its errors; then one line per failed job."""
        return [
            f"{_label(kind)} ({self.failed_calls.get(kind, 0)}), e.g. {error}"
            for kind, error in sorted(self.failure_examples.items())
        ] + [failure.line() for failure in self.failed_jobs]


_MODE_WORDS = {REUSED: "reused from earlier runs' ledgers"}  # how a summary line names a mode, if not as is


def _calls(by_mode: dict[str, ModeTotals]) -> str:
    """Calls by how they were made, e.g. '120 single (USD 0.0100), 84 reused from earlier runs' ledgers
    (USD 0.0000)': a reused call was paid where it was made."""
    if not by_mode:
        return "none (USD 0.0000)"
    return ", ".join(
        f"{totals.calls:,} {_MODE_WORDS.get(mode, mode)} (USD {totals.cost_usd:,.4f})"
        for mode, totals in by_mode.items()
    )


def failure_counts(failures: list[tuple[str, str]]) -> dict[str, Any]:
    """(kind, error) of each failed call -> the summary's `failed_calls` and `failure_examples`."""
    examples: dict[str, str] = {}
    for kind, error in failures:
        examples.setdefault(kind, error)
    return {"failed_calls": dict(Counter(kind for kind, _ in failures)), "failure_examples": examples}


# A group's score rows -> its score in [0, 1] as the benchmark's report computes it; None when undefined.
GroupScore = Callable[[list[dict[str, Any]]], float | None]


def column_mean(column: str) -> GroupScore:
    """The score of a benchmark whose report averages one column: its mean over the rows where it is not
    null."""

    def mean(rows: list[dict[str, Any]]) -> float | None:
        values = [row[column] for row in rows if row.get(column) is not None]
        return sum(values) / len(values) if values else None

    return mean


class EpisodeCounts(NamedTuple):
    """How a benchmark whose score rows are one per (model, case, epoch) is summarised per model and epoch:
    the count columns (label -> (column, value) of a score row), the score of a group's rows (x 100 in the
    summary), how the summary names it, and the total columns after the counts (label -> a score row's
    column of counts, summed; null counts nothing)."""

    counts: dict[str, tuple[str, Any]]
    score: GroupScore
    score_label: str
    score_note: str
    totals: tuple[tuple[str, str], ...] = ()


def summarize_by_epoch(
    run_id: str,
    run_dir: Path,
    messages: list[dict[str, Any]],
    results: list[dict[str, Any]],
    how: EpisodeCounts,
) -> RunSummary:
    """Per model and epoch: score rows counted, the score of the epoch's rows (`how.score`), the cost of
    every call (any role), the replies cut at max_tokens ('cut', any role: scored as given); the failed
    calls among the message rows, one example per kind; and each model's score over all its epochs' rows
    (`overall`), as the benchmark's report pools them."""
    by_group: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in results:
        by_group[(row["model"], row["epoch"])].append(row)
        by_model[row["model"]].append(row)
    cost: Counter[tuple[str, int]] = Counter()
    cut: Counter[tuple[str, int]] = Counter()
    for row in messages:
        cost[(row["model"], row["epoch"])] += row.get("cost_usd") or 0.0
        cut[(row["model"], row["epoch"])] += row.get("finish_reason") == "length"
    groups = []
    for (model, epoch), rows in sorted(by_group.items()):
        groups.append(
            GroupSummary(
                model=model,
                group=str(epoch),
                counts={
                    **{label: sum(row.get(c) == v for row in rows) for label, (c, v) in how.counts.items()},
                    **{label: sum(row.get(column) or 0 for row in rows) for label, column in how.totals},
                    "cut": cut[(model, epoch)],
                },
                score=_percent(how.score(rows)),
                cost_usd=cost[(model, epoch)],
            )
        )
    failures = [(row["error_class"], row["error"]) for row in messages if row["status"] == "failed"]
    return RunSummary(
        run_id=run_id,
        run_dir=run_dir,
        groups=groups,
        **failure_counts(failures),
        group_label="epoch",
        count_labels=[*how.counts, *(label for label, _ in how.totals), "cut"],
        score_label=how.score_label,
        score_note=how.score_note,
        overall={model: _percent(how.score(rows)) for model, rows in sorted(by_model.items())},
    )


def _percent(score: float | None) -> float | None:
    return None if score is None else 100 * score


# A benchmark's summary of a run: (run id, run folder, solve rows, score rows) -> RunSummary.
Summarizer = Callable[[str, Path, list[dict[str, Any]], list[dict[str, Any]]], RunSummary]


def _label(kind: str) -> str:
    return kind.replace("_", " ")


def any_call_succeeded(ledger_dir: Path) -> bool:
    """Whether a call of the run folder (of this run or an earlier one) has succeeded: without one, the run
    has no result to report."""
    return CallLedger(ledger_dir).count_succeeded() > 0


def follow_progress(futures: list[PrefectFuture], run_id: str, run_dir: Path) -> Iterator[PrefectFuture]:
    """The job tasks' futures as their tasks end, in batches of about a fiftieth, keeping a progress artifact
    of the share done (one update a batch)."""
    artifact = create_progress_artifact(
        progress=0.0,
        key=run_artifact_key("evaluation-progress", run_id, run_dir),
        description=f"Run {run_id}: job tasks done",
    )
    step = max(1, len(futures) // 50)
    batch: list[PrefectFuture] = []
    for done, future in enumerate(as_completed(futures), start=1):
        batch.append(future)
        if done % step == 0 or done == len(futures):
            # Done already: on Dask, waiting fetches the final states of every job done so far in one gather
            # (tasks/core/dask_runner.py), so the batch's states are here for `job_outcomes` to read.
            future.wait()
            update_progress_artifact(artifact_id=artifact, progress=100 * done / len(futures))
            yield from batch
            batch = []


@task(name="publish-run-summary", cache_policy=NO_CACHE)
def publish_run_summary(summary: RunSummary) -> None:
    """The run's counts, costs and failures -> a Markdown artifact (its key names the run and its folder)."""
    create_markdown_artifact(
        key=run_artifact_key("evaluation-summary", summary.run_id, summary.run_dir),
        markdown=summary.markdown(),
        description="Calls answered, failed and judged per model and condition",
    )


class JobOutcomes(NamedTuple):
    """What the job tasks of a run returned (tasks/evals/jobs.py): the rows of the jobs that finished, the
    solved rows of those whose scoring raised, and the failure of each job that raised."""

    solved_rows: list[dict[str, Any]]
    scored_rows: list[dict[str, Any]]
    failures: list[JobFailure]


@task(name="write-run-outputs", cache_policy=NO_CACHE)
def write_run_outputs(
    plan: RunPlan[Any, Any], outcomes: JobOutcomes, tables: RunTables, summarize: Summarizer
) -> RunSummary:
    """The jobs' rows → RUN_DIR/<contract name>.parquet for every table (atomic); returns the summary."""
    solved_rows, scored_rows = outcomes.solved_rows, outcomes.scored_rows
    for rows, contracts in ((solved_rows, tables.solved), (scored_rows, tables.scored)):
        for contract in contracts:
            write_table(rows, contract, plan.run_dir / f"{contract.name}.parquet")
    summary = summarize(plan.run_id, plan.run_dir, solved_rows, scored_rows)
    return summary.model_copy(update={"failed_jobs": outcomes.failures})


def write_table(rows: list[dict[str, Any]], contract: Contract, path: Path) -> None:
    """Rows → a Parquet file with the contract's schema, sorted by its key."""
    table = pa.Table.from_pylist(rows, schema=contract.schema)
    write_parquet_atomic(path, table.sort_by([(k, "ascending") for k in contract.key]))


@task(name="write-manifest", cache_policy=NO_CACHE)
def write_manifest(settings: EvaluationSettings, plan: RunPlan[Any, Any], summary: RunSummary) -> Path:
    """Settings, dataset fingerprint, prompt hashes, versions, commit, summary → RUN_DIR/manifest.json."""
    return write_json_atomic(plan.run_dir / "manifest.json", run_manifest(settings, plan, summary))


def run_manifest(
    settings: EvaluationSettings, plan: RunPlan[Any, Any], summary: RunSummary
) -> dict[str, Any]:
    """The manifest's content: what ran (settings, dataset, prompts, code) and how it went."""
    config = settings.config.model_dump(mode="json")
    rubric = plan.judge_rubric
    return {
        "run_id": plan.run_id,
        "written_at": datetime.now(UTC).isoformat(),
        "dataset": {"dir": str(plan.dataset_dir.resolve()), "fingerprint": plan.dataset_fingerprint},
        "config": config,
        "config_sha256": settings_sha256(config),
        **plan.manifest_facts,
        "prompts": {version: {"sha256": sha256} for version, sha256 in plan.prompts.items()},
        "judge_rubric": None if rubric is None else {"version": rubric, "sha256": plan.prompts[rubric]},
        **code_provenance(PACKAGES),
        "summary": summary.model_dump(mode="json"),
        "notes": plan.notes,
    }
