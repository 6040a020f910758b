"""A run's batch-mode calls as a Prefect task, and the run folders a poller finds waiting on batches.

`make_batch_calls` records the run's settings beside its batches (`batches/run.json`), so that
`resume-batch-runs` can go on with a run nobody re-runs by hand, then makes the waves
(tasks/evals/batch_waves.py) with a progress artifact per wave.
"""

from pathlib import Path
from typing import Any
from uuid import UUID

from prefect import get_run_logger, task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from tasks.core.files import write_text_atomic
from tasks.core.provenance import run_artifact_key
from tasks.evals.batch_waves import BatchWaves, WaveCounts, WavesOutcome
from tasks.evals.config import EvaluationSettings, RunConfig
from tasks.evals.jobs import solve_and_score
from tasks.evals.plan import RunPlan
from tasks.evals.protocol import Benchmark
from tasks.llm.batches import BatchStore

AWAITING_BATCHES = "AwaitingBatches"  # the name of a run's Completed state while its batches are in flight
RUN_FILE = "run.json"


class BatchRun(BaseModel):
    """What a poller needs to go on with a run: its benchmark and settings (`batches/run.json`).

    The dataset and prompt files are recorded by absolute paths, and the run folder not at all: it is
    wherever run.json is found, so a run folder moved while it waits goes on where it is now, whatever
    the poller's working folder.
    """

    benchmark: str
    settings: dict[str, Any]

    @classmethod
    def of(cls, benchmark: str, settings: EvaluationSettings) -> "BatchRun":
        """The record of a run: every path in it absolute (a relative one is from the working folder)."""
        absolute = settings.model_copy(
            update={
                "dataset_dir": settings.dataset_dir.resolve(),
                "config": settings.config.with_paths_from(Path.cwd()),
            }
        )
        return cls(benchmark=benchmark, settings=absolute.model_dump(mode="json", exclude={"run_dir"}))

    def settings_in(self, run_dir: Path, config_model: type[RunConfig]) -> EvaluationSettings:
        """The run's settings in `run_dir`, waiting for no batch; ValueError if its dataset is not there."""
        settings = EvaluationSettings[config_model].model_validate({**self.settings, "run_dir": run_dir})
        dataset = settings.dataset_dir
        if not (dataset.is_absolute() and dataset.is_dir()):  # a relative one: from a file of older code
            raise ValueError(
                f"its dataset folder {dataset} (recorded in batches/{RUN_FILE}) is not there: re-run its "
                "evaluation by hand with the dataset where it is now"
            )
        batch = settings.config.batch.model_copy(update={"wait_s": 0.0})
        return settings.model_copy(update={"config": settings.config.model_copy(update={"batch": batch})})


@task(name="make-batch-calls", cache_policy=NO_CACHE)
def make_batch_calls(bench: Benchmark, plan: RunPlan[Any, Any], settings: EvaluationSettings) -> WavesOutcome:
    """Every batch-mode call of the run, made in waves of provider batches (or left in flight)."""
    batches_dir = plan.run_dir / "batches"
    write_text_atomic(batches_dir / RUN_FILE, BatchRun.of(bench.name, settings).model_dump_json(indent=1))

    def walk(job: Any, ledger_dir: Path) -> None:
        solve_and_score(bench.solve, bench.score, job, ledger_dir)

    config = settings.config
    waves = BatchWaves(
        plan.jobs,
        walk,
        plan.run_dir,
        config.batch,
        config.retry,
        config.worker_count(),
        WaveArtifacts(plan.run_id, plan.run_dir).show,
        get_run_logger(),  # expiries and provider errors shown with the run's logs, in the UI too
    )
    return waves.run()


class WaveArtifacts:
    """One Prefect progress artifact per wave of a run, updated as its batches move on."""

    def __init__(self, run_id: str, run_dir: Path) -> None:
        self.run_id = run_id
        self.run_dir = run_dir
        self._artifacts: dict[int, tuple[UUID, WaveCounts]] = {}

    def show(self, counts: WaveCounts) -> None:
        shown = self._artifacts.get(counts.wave)
        if shown is not None and shown[1] == counts:
            return
        description = f"Run {self.run_id}, {counts.describe()}"
        if shown is None:
            artifact = create_progress_artifact(
                progress=100 * counts.done_share,
                key=run_artifact_key("batch-wave", self.run_id, self.run_dir, str(counts.wave)),
                description=description,
            )
        else:
            artifact = update_progress_artifact(
                artifact_id=shown[0], progress=100 * counts.done_share, description=description
            )
        self._artifacts[counts.wave] = (artifact, counts)


def batches_left_to_single_calls(run_dir: Path, config: RunConfig) -> str | None:
    """Why the run must not start, when it has batches in flight for a model no longer in batch mode (its
    calls would be made again one by one, and paid twice); None when it may."""
    batched = {
        (spec.model, spec.api_base)
        for specs in config.roles().values()
        for spec in specs
        if spec.mode == "batch"
    }
    orphans = [r for r in BatchStore(run_dir / "batches").in_flight() if (r.model, r.api_base) not in batched]
    if not orphans:
        return None
    models = ", ".join(sorted({f"{r.model} at {r.api_base}" if r.api_base else r.model for r in orphans}))
    return (
        f"{run_dir} has {len(orphans)} {'batch' if len(orphans) == 1 else 'batches'} in flight for {models}, "
        "which this run would call one by one (paying twice): "
        "re-run in batch mode for those roles (--batch), at that endpoint, to collect them first"
    )


def waiting_runs(runs_dir: Path) -> list[Path]:
    """The run folders under `runs_dir` (at any depth) with batches whose results are not collected."""
    return [
        run_file.parent.parent
        for run_file in sorted(Path(runs_dir).glob(f"**/batches/{RUN_FILE}"))
        if BatchStore(run_file.parent).in_flight()
    ]


def read_batch_run(run_dir: Path) -> BatchRun:
    """The benchmark and settings a waiting run folder recorded."""
    return BatchRun.model_validate_json((run_dir / "batches" / RUN_FILE).read_bytes())
