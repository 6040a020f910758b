"""The SNOMED diagnosis benchmark's card: its name, title, config and input checks, what `threadmed snomed
evaluate` shows and checks before it imports the benchmark (tasks/evals/card.py)."""

from pathlib import Path

from tasks.benchmarks.snomed.cases.loading import check_case_set, check_sample_split, load_case_set
from tasks.benchmarks.snomed.clinicians import prevalence_table
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.benchmarks.snomed.offline_models import PREVALENCE
from tasks.core.preflight import UserError, remedy
from tasks.evals.card import BenchmarkCard


def train_prevalence_table(case_set_dir: Path) -> tuple[tuple[str, int], ...]:
    """The gold codes of the case set's train split by count, what the prevalence baseline predicts from;
    UserError naming the fix when the case set has no train case."""
    table = prevalence_table(load_case_set(case_set_dir), split="train")
    if not table:
        how = remedy(
            "threadmed snomed cases --train-share 0.5",
            """snomed-cases/adhoc --param settings='{"train_share": 0.5}'""",
        )
        raise UserError(
            f"{PREVALENCE} needs train cases to count codes in: build the case set with a train share "
            f"({how})",
            "--models",
        )
    return table


def check_run_sample(case_set_dir: Path, config: SnomedConfig) -> None:
    """UserError when the run's split holds no case, or the prevalence baseline is to count the codes of a
    case set with no train case."""
    check_sample_split(case_set_dir, config)
    if any(spec.model == PREVALENCE and "prevalence" not in spec.params for spec in config.models):
        train_prevalence_table(case_set_dir)


SNOMED_CARD = BenchmarkCard(
    name="snomed",
    title="SNOMED diagnosis: a clinician model interviews a simulated patient and names its conditions",
    config_model=SnomedConfig,
    check_inputs=check_case_set,
    check_sample=check_run_sample,
)
