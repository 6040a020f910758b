"""A run's batch-mode calls as a Prefect task, and the run folders a poller finds waiting on batches.

`make_batch_calls` records the run's settings beside its batches (`batches/run.json`), so that
`resume-batch-runs` can go on with a run nobody re-runs by hand, then makes the waves
(tasks/evals/batch_waves.py) with a progress artifact per wave.
"""

import json
from pathlib import Path
from typing import Any
from uuid import UUID

from prefect import get_run_logger, task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

from tasks.benchmarks.protocol import Benchmark
from tasks.core.files import write_text_atomic
from tasks.core.provenance import artifact_key
from tasks.evals.batch_waves import BatchWaves, WaveCounts, WavesOutcome
from tasks.evals.config import EvaluationSettings, RunConfig
from tasks.evals.plan import RunPlan
from tasks.llm.batches import BatchStore

AWAITING_BATCHES = "AwaitingBatches"  # the name of a run's Completed state while its batches are in flight
RUN_FILE = "run.json"


class BatchRun(BaseModel):
    """What a poller needs to go on with a run: its benchmark and settings (`batches/run.json`)."""

    benchmark: str
    settings: dict[str, Any]


@task(name="make-batch-calls", cache_policy=NO_CACHE)
def make_batch_calls(bench: Benchmark, plan: RunPlan[Any, Any], settings: EvaluationSettings) -> WavesOutcome:
    """Every batch-mode call of the run, made in waves of provider batches (or left in flight)."""
    batches_dir = plan.run_dir / "batches"
    record = BatchRun(benchmark=bench.name, settings=settings.model_dump(mode="json"))
    write_text_atomic(batches_dir / RUN_FILE, record.model_dump_json(indent=1))

    def walk(job: Any, ledger_dir: Path) -> None:
        solved = bench.solve.fn(job=job.solve, ledger_dir=ledger_dir)
        bench.score.fn(job=job.score, solved=solved, ledger_dir=ledger_dir)

    config = settings.config
    waves = BatchWaves(
        plan.jobs,
        walk,
        plan.run_dir,
        config.batch,
        config.retry,
        config.worker_count(),
        WaveArtifacts(plan.run_id).show,
        get_run_logger(),  # expiries and provider errors shown with the run's logs, in the UI too
    )
    return waves.run()


class WaveArtifacts:
    """One Prefect progress artifact per wave of a run, updated as its batches move on."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._artifacts: dict[int, tuple[UUID, WaveCounts]] = {}

    def show(self, counts: WaveCounts) -> None:
        shown = self._artifacts.get(counts.wave)
        if shown is not None and shown[1] == counts:
            return
        description = f"Run {self.run_id}, {counts.describe()}"
        if shown is None:
            artifact = create_progress_artifact(
                progress=100 * counts.done_share,
                key=artifact_key("batch-wave", self.run_id, str(counts.wave)),
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
    models = ", ".join(sorted({record.model for record in orphans}))
    return (
        f"{run_dir} has {len(orphans)} {'batch' if len(orphans) == 1 else 'batches'} in flight for {models}, "
        "which this run would call one by one "
        "(paying twice): re-run in batch mode for those roles (--batch) to collect them first"
    )


def waiting_runs(runs_dir: Path) -> list[tuple[Path, BatchRun]]:
    """The run folders under `runs_dir` (at any depth) with batches whose results are not collected."""
    waiting = []
    for run_file in sorted(Path(runs_dir).glob(f"**/batches/{RUN_FILE}")):
        if BatchStore(run_file.parent).in_flight():
            waiting.append(
                (run_file.parent.parent, BatchRun.model_validate(json.loads(run_file.read_text())))
            )
    return waiting
