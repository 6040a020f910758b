"""ThReadMed-QA's card: its name, title, config and input checks, what `threadmed evaluate` shows and checks
before it imports the benchmark (tasks/evals/card.py)."""

from tasks.benchmarks.threadmed.cases import check_dataset_build, check_sample_split
from tasks.evals.card import BenchmarkCard
from tasks.evals.config import EvalConfig

THREADMED_CARD = BenchmarkCard(
    name="threadmed",
    title="ThReadMed-QA: multi-turn medical questions from r/AskDocs, judged against physician answers",
    config_model=EvalConfig,
    check_inputs=check_dataset_build,
    check_sample=check_sample_split,
)
