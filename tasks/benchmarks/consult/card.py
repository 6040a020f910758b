"""The consultation benchmark's card: its name, title, config and input checks, what `threadmed consult
evaluate` shows and checks before it imports the benchmark (tasks/evals/card.py)."""

from tasks.benchmarks.consult.cases.case_set import check_case_set, check_sample_split
from tasks.benchmarks.consult.config import ConsultConfig
from tasks.evals.card import BenchmarkCard

CONSULT_CARD = BenchmarkCard(
    name="consult",
    title="Full-cycle consultation: history, diagnosis, treatment and follow-up with a simulated patient",
    config_model=ConsultConfig,
    check_inputs=check_case_set,
    check_sample=check_sample_split,
)
