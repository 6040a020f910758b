"""snomed-oracle-data: a teacher writes the patient oracle's training pairs for every case, validated, then
the oracle data folder (chat and alpaca JSONL per split, dataset card, manifest).

One Prefect task per case writes its pairs (every call through the ledger), one validates them
(flows/evaluation.py). Re-run the same parameters to finish: the ledger makes only the calls still missing.
"""

from pathlib import Path

from prefect import flow
from prefect.states import State

from flows.evaluation import evaluate_benchmark
from tasks.benchmarks.snomed.oracle.benchmark import ORACLE_DATA
from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
from tasks.benchmarks.snomed.oracle.dataset import write_oracle_dataset
from tasks.core.runners import RunnerSettings
from tasks.evals.config import EvaluationSettings
from tasks.evals.outputs import RunSummary


@flow(name="snomed-oracle-data")
def snomed_oracle_data(
    cases_dir: str, out_dir: str, config: OracleDataConfig, runner: RunnerSettings | None = None
) -> RunSummary | State:
    """Write teacher_replies, oracle_pairs (.parquet), chat/, alpaca/, README.md, manifest.json to out_dir.

    Ends Failed (after writing every output) when teacher calls failed; re-running finishes it.
    """
    settings = EvaluationSettings[OracleDataConfig](
        dataset_dir=Path(cases_dir), run_dir=Path(out_dir), config=config
    )
    return evaluate_benchmark(
        ORACLE_DATA,
        settings,
        runner,
        lambda run_dirs: str(
            write_oracle_dataset(run_dir=Path(run_dirs[0]), cases_dir=Path(cases_dir), config=config)
        ),
        input_parameter="cases_dir",
    )
