"""consult-evaluate: every agent runs a consultation episode with every sampled case's simulated patient
(each epoch), then the episodes are scored.

One Prefect task per (agent, case, epoch) runs the episode, one scores it (flows/evaluation.py). Re-run the
same parameters to finish a run: the ledger makes only the calls still missing.
"""

from prefect import flow
from prefect.states import State

from flows.consult_report import consult_report
from flows.evaluation import evaluate_case_set
from tasks.benchmarks.consult.benchmark import CONSULT
from tasks.benchmarks.consult.config import ConsultConfig
from tasks.core.runners import RunnerSettings
from tasks.evals.config import RunOverrides
from tasks.evals.outputs import RunSummary


@flow(name="consult-evaluate")
def consult_evaluate(
    cases_dir: str,
    run_dir: str,
    config: ConsultConfig | None = None,
    config_file: str | None = None,
    models: list[str] | None = None,
    judge: str | None = None,
    epochs: int | None = None,
    max_questions: int | None = None,
    split: str | None = None,
    limit: int | None = None,
    api_base: str | None = None,
    batch: list[str] | None = None,
    batch_wait_s: float | None = None,
    runner: RunnerSettings | None = None,
    report: bool = True,
) -> RunSummary | State:
    """Write messages.parquet, scores.parquet, manifest.json and report/ to run_dir.

    The config is `config`, or the YAML `config_file`, or just `models` (litellm model strings as
    agents); the other parameters override it. The run ends Failed (after writing every output) when
    calls failed; re-running with the same run_dir finishes it.
    """
    chosen = {"epochs": epochs, "max_questions": max_questions}
    overrides = RunOverrides(
        models=models,
        roles={"judge": judge} if judge else {},
        settings={name: value for name, value in chosen.items() if value is not None},
        split=split,
        limit=limit,
        api_base=api_base,
        batch=batch or [],
        batch_wait_s=batch_wait_s,
    )
    return evaluate_case_set(
        CONSULT,
        (cases_dir, run_dir),
        config or config_file,
        overrides,
        runner,
        consult_report if report else None,
    )
