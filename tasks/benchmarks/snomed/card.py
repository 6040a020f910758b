"""The SNOMED diagnosis benchmark's card: its name, title, config and input checks, what `threadmed snomed
evaluate` shows and checks before it imports the benchmark (tasks/evals/card.py)."""

from tasks.benchmarks.snomed.cases.loading import check_case_set, check_sample_split
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.evals.card import BenchmarkCard

SNOMED_CARD = BenchmarkCard(
    name="snomed",
    title="SNOMED diagnosis: a clinician model interviews a simulated patient and names its conditions",
    config_model=SnomedConfig,
    check_inputs=check_case_set,
    check_sample=check_sample_split,
)
