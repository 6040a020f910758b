"""snomed-evaluate: every clinician interviews every sampled case's patient (each epoch), then scoring.

One Prefect task per (clinician, case, epoch) runs the interview, one scores it (flows/evaluation.py).
Re-run the same parameters to finish a run: the ledger makes only the calls still missing.
"""

from prefect import flow
from prefect.states import State

from flows.evaluation import evaluate_case_set
from flows.snomed_report import snomed_report
from tasks.benchmarks.snomed.benchmark import SNOMED
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.benchmarks.snomed.patient import Disclosure, PatientPromptForm
from tasks.core.runners import RunnerSettings
from tasks.evals.config import RunOverrides
from tasks.evals.outputs import RunSummary


@flow(name="snomed-evaluate")
def snomed_evaluate(
    cases_dir: str,
    run_dir: str,
    config: SnomedConfig | None = None,
    config_file: str | None = None,
    models: list[str] | None = None,
    patient: str | None = None,
    epochs: int | None = None,
    max_turns: int | None = None,
    disclosure: Disclosure | None = None,
    patient_prompt_form: PatientPromptForm | None = None,
    split: str | None = None,
    limit: int | None = None,
    api_base: str | None = None,
    batch: list[str] | None = None,
    batch_wait_s: float | None = None,
    runner: RunnerSettings | None = None,
    report: bool = True,
) -> RunSummary | State:
    """Write conversations, predictions and scores (.parquet), manifest.json and report/ to run_dir.

    The config is `config`, or the YAML `config_file`, or just `models` (litellm model strings as
    clinicians); the other parameters override it. The run ends Failed (after writing every output)
    when calls failed; re-running with the same run_dir finishes it.
    """
    chosen = {
        "epochs": epochs,
        "max_turns": max_turns,
        "disclosure": disclosure,
        "patient_prompt_form": patient_prompt_form,
    }
    overrides = RunOverrides(
        models=models,
        roles={"patient": patient} if patient else {},
        settings={name: value for name, value in chosen.items() if value is not None},
        split=split,
        limit=limit,
        api_base=api_base,
        batch=batch or [],
        batch_wait_s=batch_wait_s,
    )
    return evaluate_case_set(
        SNOMED,
        (cases_dir, run_dir),
        config or config_file,
        overrides,
        runner,
        snomed_report if report else None,
    )
