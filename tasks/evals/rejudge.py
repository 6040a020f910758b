"""Re-judging: grade the stored answers of a finished run again, with another judge, rubric, temperature or
epoch, into a new run folder, asking no answer again.

A re-judge is a run of the source run's benchmark with the source's config (its `manifest.json`), the judge
replaced. Its plan is the benchmark's own over the same dataset (checked by fingerprint), each job's solve
replaced by a replay of the source's solve rows for that job (`replay_answers`, their run_id the new run's):
an answer the source lacks (failed, not run) stays as recorded, never asked. The benchmark's score step then
judges them through the new folder's ledger, with batch mode and resume as in any run. The summary counts
the judge's calls, costs and failures alone: the answers were paid for by the source run. A job whose solve
step the source run's summary names as failed left no rows to replay: it fails here too (`AnswersMissing`),
so the re-judged run ends Failed and its summary names the job, never Completed without its turns.
The folder names its source in `rejudge.json` from the start, so the resume-batch-runs poller, too, goes on
with it as a re-judge (`benchmark_for_folder`), and in its manifest's `rejudge` entry.

No judge call is paid twice: the new ledger reuses the successful calls of the source's ledger and of every
run that one re-judges in turn (`earlier_runs`). A call key holds everything that makes a reply, so a
re-judge whose judge, rubric and parameters are the source's (or, through a re-judge of a re-judge, an
earlier run's) reads every grade from that ledger and makes no call; such a run is that earlier run (the
same config, the same run id), which its notes say.
"""

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow.parquet as pq
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel, Field

from tasks.core.files import write_json_atomic
from tasks.core.preflight import UserError
from tasks.core.run_folder import BENCHMARK_FILE, check_run_folder_benchmark, run_folder_benchmark
from tasks.core.strict import StrictModel
from tasks.evals.config import CostCap, EvaluationSettings, JudgedRunConfig, RunConfig, RunOverrides
from tasks.evals.estimate import EstimateTally
from tasks.evals.outputs import JobFailure, RunSummary, Summarizer
from tasks.evals.plan import Job, RunPlan
from tasks.evals.protocol import Benchmark
from tasks.llm.ledger import CallLedger

REJUDGE_FILE = "rejudge.json"
SOURCE = "RUN_DIR"  # the command-line argument naming the source run, in one-line errors


class SourceRun(BaseModel):
    """A finished run, as its folder and manifest recorded it."""

    run_dir: Path
    run_id: str
    benchmark: str
    config: dict[str, Any]
    dataset_dir: Path
    dataset_fingerprint: str
    failed_jobs: list[JobFailure] = []  # its summary's: jobs whose step raised or whose task crashed


class JudgeChoices(StrictModel):
    """The judge that grades a stored run again, and how its calls are made. Unset: as in the source run."""

    model: str = Field(
        description="litellm model string; the source judge's name or model keeps its settings."
    )
    rubric: Path | None = Field(None, description="Rubric prompt file; default: the source judge's rubric.")
    temperature: float | None = Field(None, ge=0, description="The judge's sampling temperature.")
    epoch: int = Field(0, ge=0, description="Repeat index of the grading (JudgeSpec.epoch).")
    max_tokens: int | None = Field(None, ge=1, description="Longest judge reply, sent as max_tokens.")
    api_base: str | None = Field(None, description="Send the judge to this OpenAI-compatible endpoint.")
    api_key_env: str | None = Field(None, description="Environment variable holding the key for api_base.")
    max_concurrency: int | None = Field(None, ge=1, description="Judge calls in flight at once.")
    timeout_s: float | None = Field(None, gt=0, description="Time-out of one HTTP attempt.")
    batch: bool = Field(False, description="Judge through the provider's batch API.")
    batch_wait_s: float | None = Field(None, ge=0, description="How long to wait for batches in flight.")
    batch_poll_s: float | None = Field(None, gt=0, description="Seconds between checks of batches.")
    max_cost_usd: CostCap = Field(
        None, description="Spending cap of the re-judge's own folder (the source run's does not carry)."
    )


def read_source_run(run_dir: Path) -> SourceRun:
    """The finished run in `run_dir`; UserError (one line) when the folder holds none."""
    benchmark = run_folder_benchmark(run_dir)
    if benchmark is None:
        raise UserError(
            f"{run_dir} is not a run folder (no {BENCHMARK_FILE}): pass the --out folder of an evaluation",
            SOURCE,
        )
    manifest_path = Path(run_dir) / "manifest.json"
    if not manifest_path.is_file():
        raise UserError(
            f"{run_dir} holds an unfinished run (no manifest.json): finish it first (re-run its evaluate "
            "command), then re-judge it",
            SOURCE,
        )
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    return SourceRun(
        run_dir=Path(run_dir).resolve(),
        run_id=manifest["run_id"],
        benchmark=benchmark,
        config=manifest["config"],
        dataset_dir=Path(manifest["dataset"]["dir"]),
        dataset_fingerprint=manifest["dataset"]["fingerprint"],
        failed_jobs=manifest["summary"].get("failed_jobs", []),
    )


def rejudgeable(source: SourceRun, benchmarks: dict[str, Benchmark]) -> Benchmark:
    """The source run's benchmark; UserError when it has no judge to replace (SNOMED)."""
    bench = benchmarks[source.benchmark]
    if bench.rejudging is None:
        judged = ", ".join(name for name, other in benchmarks.items() if other.rejudging is not None)
        raise UserError(
            f"{source.run_dir} is a {bench.name} run, which has no judge to re-run; runs of {judged} can be "
            "re-judged",
            SOURCE,
        )
    return bench


def rejudge_settings(
    source: SourceRun, config_model: type[RunConfig], choices: JudgeChoices, out_dir: Path
) -> EvaluationSettings:
    """The re-judge's settings: the source's dataset and config with the judge replaced, into `out_dir`."""
    out = Path(out_dir).resolve()
    if out == source.run_dir:
        raise UserError("--out is the run being re-judged: give the re-judge a folder of its own", "--out")
    if source.run_dir in out.parents:
        raise UserError(
            f"{out_dir} is inside the run being re-judged ({source.run_dir}): give the re-judge a folder of "
            "its own, outside it",
            "--out",
        )
    if not source.dataset_dir.is_dir():
        raise UserError(
            f"{source.run_dir}: its dataset {source.dataset_dir} is not there; put it back where the run "
            "found it to re-judge its answers",
            SOURCE,
        )
    config = rejudged_config(config_model.model_validate(source.config), choices)
    return EvaluationSettings[config_model](dataset_dir=source.dataset_dir, run_dir=out_dir, config=config)  # type: ignore[valid-type]


def rejudged_config(config: RunConfig, choices: JudgeChoices) -> RunConfig:
    """`config` with the judge of `choices`; the models under test and every other setting as they were.

    A new judge keeps the source judge's rubric and re-asks, not its name, endpoint or params
    (`RunConfig.with_overrides`); naming the source judge keeps it whole. Only the judge's calls are made,
    so the endpoint, batch mode and reply length apply to it alone.
    """
    if not isinstance(config, JudgedRunConfig):
        raise TypeError(f"{type(config).__name__} has no judge")
    if choices.api_key_env is not None and choices.api_base is None:
        raise UserError(
            f"the key in {choices.api_key_env} is sent only to an api_base: name the endpoint",
            "--api-key-env",
        )
    overrides = RunOverrides(
        roles={"judge": choices.model},
        max_concurrency=choices.max_concurrency,
        timeout_s=choices.timeout_s,
        batch=["judge"] if choices.batch else [],
        batch_wait_s=choices.batch_wait_s,
        batch_poll_s=choices.batch_poll_s,
    )
    config = config.with_overrides(overrides)
    judge = config.judge
    chosen = {"temperature": choices.temperature, "max_tokens": choices.max_tokens}
    # A value the judge is sent already is left as the config wrote it: --temperature 0 (a float) over the
    # config's 0 keeps the run's params, as its manifest shows them, the source run's.
    sent = config.resolved(judge).params
    changed = {
        name: value
        for name, value in chosen.items()
        if value is not None and not (name in sent and sent[name] == value)
    }
    params = {**judge.params, **changed}
    judge = judge.model_copy(
        update={"params": params, "epoch": choices.epoch, "rubric": _absolute(choices.rubric) or judge.rubric}
    )
    if choices.api_base is not None:
        judge = judge.with_api_base(choices.api_base, choices.api_key_env)
    return config.model_validate(
        {**config.model_dump(), "judge": judge.model_dump(), "max_cost_usd": choices.max_cost_usd}
    )


def _absolute(path: Path | None) -> Path | None:
    return None if path is None else Path(path).resolve()


class ReplayedAnswers(BaseModel, frozen=True):
    """A job's solve rows from the source run: the input of `replay_answers` in place of the solve step's."""

    label: str
    task_label: str  # the source job's: the jobs a task runs are grouped as in the source run
    rows: list[dict[str, Any]]
    missing: str | None = None  # why the source holds no rows of the job: its own failure; None: it does


class AnswersMissing(Exception):
    """The source run has no answers of a job to replay: its solve step failed there."""


def replay_answers(job: ReplayedAnswers, ledger_dir: Path) -> list[dict[str, Any]]:
    """The source run's solve rows of one job, as stored (run_id the new run's); calls nothing. Raises
    AnswersMissing for a job the source failed to answer: the re-judge counts it as a failed job."""
    if job.missing is not None:
        raise AnswersMissing(job.missing)
    return job.rows


class EarlierRun(NamedTuple):
    """A run whose ledger a re-judge reuses: its folder and its run id (None when it has no manifest)."""

    run_dir: Path
    run_id: str | None

    @property
    def ledger_dir(self) -> Path:
        return self.run_dir / "ledger"


def earlier_runs(source: SourceRun) -> list[EarlierRun]:
    """The source run, then the run it re-judges, and so on back to the evaluation that asked the answers
    (its `rejudge.json` names each one's source); a folder seen twice ends the walk."""
    runs = [EarlierRun(source.run_dir, source.run_id)]
    marker = source.run_dir / REJUDGE_FILE
    while marker.is_file():
        run_dir = Path(json.loads(marker.read_text(encoding="utf-8"))["source_run_dir"]).resolve()
        if run_dir in {run.run_dir for run in runs}:
            break
        manifest = run_dir / "manifest.json"
        run_id = json.loads(manifest.read_text(encoding="utf-8"))["run_id"] if manifest.is_file() else None
        runs.append(EarlierRun(run_dir, run_id))
        marker = run_dir / REJUDGE_FILE
    return runs


def rejudging(bench: Benchmark, source: SourceRun) -> Benchmark:
    """`bench` as a re-judge of `source` runs it: planned over the source's answers, replaying them, its
    dry run counting the calls the earlier runs' ledgers hold as done."""
    if bench.rejudging is None:
        raise ValueError(f"{bench.name} has no judge to re-run")
    ledgers = [run.ledger_dir for run in earlier_runs(source)]
    return replace(
        bench,
        card=replace(bench.card, check_sample=partial(_check_replayable, bench, source)),
        plan=partial(replayed_plan, bench, bench.rejudging.solved_key, source),
        solve=replay_answers,
        summarize=partial(judge_summary, bench.summarize),
        estimate_job=partial(estimate_judging, bench.rejudging.estimate_scoring, ledgers),
    )


def _check_replayable(bench: Benchmark, source: SourceRun, dataset_dir: Path, config: RunConfig) -> None:
    """The re-judge's input check: its benchmark's, and the folder is the one the source run answered."""
    check_unchanged_inputs(source, bench.rejudging.fingerprint(dataset_dir))
    if bench.card.check_sample is not None:
        bench.card.check_sample(dataset_dir, config)


def check_unchanged_inputs(source: SourceRun, fingerprint: str) -> None:
    """UserError unless `fingerprint` is that of the inputs the source run answered."""
    if fingerprint != source.dataset_fingerprint:
        raise UserError(
            f"{source.dataset_dir} changed since run {source.run_id} answered it (its fingerprint differs): "
            "its answers can only be re-judged against the questions they answered",
            SOURCE,
        )


def replayed_plan(
    bench: Benchmark,
    solved_key: Callable[[Any], dict[str, Any]],
    source: SourceRun,
    settings: EvaluationSettings,
) -> RunPlan[Any, Any]:
    """The benchmark's plan of `settings`, each job's solve replaced by the source run's rows for it (found
    by `solved_key`); a job whose solve the source's summary names as failed (no rows) is replayed as
    missing, with the source's failure as the reason.

    Reads the dataset and the source's solve table; UserError when the dataset changed since the source
    run, or when the source holds answers its own plan has no job for (a run made by other code).
    """
    plan = bench.plan(settings)
    check_unchanged_inputs(source, plan.dataset_fingerprint)
    stored = pq.read_table(source.run_dir / f"{bench.tables.solved[0].name}.parquet").to_pylist()
    keys = [solved_key(job.solve) for job in plan.jobs]
    columns = list(keys[0]) if keys else []
    by_job: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in stored:
        by_job.setdefault(tuple(row[column] for column in columns), []).append({**row, "run_id": plan.run_id})
    # A job that failed at scoring kept its answers: only a failed solve (or task) left none to replay.
    unanswered = {failure.job: failure for failure in source.failed_jobs if failure.stage != "score"}
    jobs: list[Job[Any, Any]] = []
    for job, key in zip(plan.jobs, keys, strict=True):
        rows = by_job.pop(tuple(key.values()), [])
        failure = None if rows else unanswered.get(job.solve.label)
        missing = None if failure is None else _missing_answers(source, failure)
        replayed = ReplayedAnswers(
            label=job.solve.label, task_label=job.solve.task_label, rows=rows, missing=missing
        )
        jobs.append(job.model_copy(update={"solve": replayed}))
    if by_job:
        example = "/".join(map(str, next(iter(by_job))))
        raise UserError(
            f"{source.run_dir}: {len(by_job)} of its jobs (e.g. {example}) are not in the plan of its own "
            "config: it was made by other code; re-judge it with that code",
            SOURCE,
        )
    facts = rejudge_facts(source, settings.config)
    notes = [
        f"Answers replayed from run {source.run_id} ({source.run_dir}): none was asked again; the calls, "
        "costs and failures of this run are its judge's."
    ]
    same = next((run for run in earlier_runs(source) if run.run_id == plan.run_id), None)
    if same is not None:
        notes.append(
            f"Its judge, rubric and parameters are those of run {same.run_id} ({same.run_dir}): every grade "
            "that run holds is read from its ledger, not asked again, and this folder is that run (the same "
            "run id): report it in that run's place, not beside it."
        )
    return plan.model_copy(
        update={
            "jobs": jobs,
            "manifest_facts": {**plan.manifest_facts, "rejudge": facts},
            "notes": [*plan.notes, *notes],
        }
    )


def _missing_answers(source: SourceRun, failure: JobFailure) -> str:
    return (
        f"run {source.run_id} holds no answers of this job to re-judge ({failure.line()}): finish that run "
        f"(re-run its evaluate command into {source.run_dir}), then re-judge it"
    )


def rejudge_facts(source: SourceRun, config: RunConfig) -> dict[str, Any]:
    """What a re-judged run records of its source: the manifest's `rejudge` entry, and `rejudge.json`."""
    epoch = config.judge.epoch if isinstance(config, JudgedRunConfig) else 0
    return {"source_run_id": source.run_id, "source_run_dir": str(source.run_dir), "judge_epoch": epoch}


def judge_summary(
    summarize: Summarizer,
    run_id: str,
    run_dir: Path,
    solved: list[dict[str, Any]],
    scored: list[dict[str, Any]],
) -> RunSummary:
    """The benchmark's summary of a re-judged run, its costs and failed calls the judge's alone: the
    replayed answers cost this run nothing, and the failed ones are the source's, which no re-run asks."""
    replayed = [{**row, "cost_usd": None} for row in solved]
    summary = summarize(run_id, run_dir, replayed, scored)
    failed = Counter(summary.failed_calls) - Counter(summarize(run_id, run_dir, replayed, []).failed_calls)
    return summary.model_copy(
        update={
            "failed_calls": dict(failed),
            "failure_examples": {
                kind: text for kind, text in summary.failure_examples.items() if kind in failed
            },
        }
    )


def estimate_judging(
    estimate_scoring: Callable[[Any, list[dict[str, Any]], CallLedger, EstimateTally], None],
    sources: list[Path],
    job: Job[Any, Any],
    ledger: CallLedger,
    tally: EstimateTally,
) -> None:
    """The dry run's walk of a re-judge's job: its judge calls over the replayed answers (free), those the
    `sources` ledgers hold counted as done, as the run will read them (before it names its sources)."""
    estimate_scoring(job.score, job.solve.rows, CallLedger(ledger.root, sources), tally)


@task(name="record-rejudge-source", cache_policy=NO_CACHE)
def record_rejudge_source(settings: EvaluationSettings, source: SourceRun, benchmark: str) -> Path:
    """RUN_DIR/rejudge.json naming the source run, before any call (the batch poller reads it), and the
    earlier runs' ledgers as the new ledger's sources: a call they hold is never made again."""
    check_run_folder_benchmark(settings.run_dir, benchmark)
    CallLedger(settings.run_dir / "ledger").reuse_calls_of([run.ledger_dir for run in earlier_runs(source)])
    return write_json_atomic(settings.run_dir / REJUDGE_FILE, rejudge_facts(source, settings.config))


def benchmark_for_folder(bench: Benchmark, run_dir: Path) -> Benchmark:
    """`bench` as `run_dir` is evaluated: re-judging its source run when the folder is a re-judge's."""
    marker = Path(run_dir) / REJUDGE_FILE
    if not marker.is_file():
        return bench
    facts = json.loads(marker.read_text(encoding="utf-8"))
    return rejudging(bench, read_source_run(Path(facts["source_run_dir"])))


def rejudge_refusal(run_dir: Path, bench: Benchmark) -> str | None:
    """Why `bench` must not run in `run_dir`: the folder re-judges a run and `bench` would ask its answers
    again (a plain evaluation into it); None when it may."""
    marker = Path(run_dir) / REJUDGE_FILE
    if bench.solve is replay_answers or not marker.is_file():
        return None
    source_run_id = json.loads(marker.read_text(encoding="utf-8"))["source_run_id"]
    return (
        f"{run_dir} re-judges run {source_run_id}, whose answers are replayed, never asked again: finish it "
        "with `threadmed judge rerun` (the rejudge-run flow), or give this evaluation another folder"
    )
