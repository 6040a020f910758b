"""snomed-patient-eval: every patient simulator answers the bench's questions about every case (each asked
`askings` times), the answers are scored (and judged, with a judge), then the report compares the patients.

One Prefect task per case x patient asks, one scores (flows/evaluation.py). Re-run the same parameters to
finish a run: the ledger makes only the calls still missing.
"""

from pathlib import Path

from prefect import flow
from prefect.states import State

from flows.evaluation import evaluate_benchmark
from tasks.benchmarks.snomed.patient_bench.benchmark import PATIENT_BENCH
from tasks.benchmarks.snomed.patient_bench.config import PatientBenchConfig
from tasks.core.runners import RunnerSettings
from tasks.evals.config import EvaluationSettings
from tasks.evals.outputs import RunSummary


@flow(name="snomed-patient-eval")
def snomed_patient_eval(
    cases_dir: str, run_dir: str, config: PatientBenchConfig, runner: RunnerSettings | None = None
) -> RunSummary | State:
    """Write patient_answers and patient_scores (.parquet), manifest.json and report/ to run_dir.

    Ends Failed (after writing every output) when calls failed; re-running with the same run_dir finishes it.
    """
    settings = EvaluationSettings[PatientBenchConfig](
        dataset_dir=Path(cases_dir), run_dir=Path(run_dir), config=config
    )
    return evaluate_benchmark(
        PATIENT_BENCH,
        settings,
        runner,
        lambda run_dirs: PATIENT_BENCH.report(run_dirs, None, None),
        input_parameter="cases_dir",
    )
