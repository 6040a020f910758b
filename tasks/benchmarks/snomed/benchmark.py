"""The SNOMED diagnosis benchmark as a `Benchmark`: the record the registry lists and its flows run."""

from tasks.benchmarks.snomed.card import SNOMED_CARD
from tasks.benchmarks.snomed.cases.loading import load_sample
from tasks.benchmarks.snomed.compare import COMPARISON
from tasks.benchmarks.snomed.config import PROMPTS_DIR
from tasks.benchmarks.snomed.contracts import CONVERSATIONS, PREDICTIONS, SCORES
from tasks.benchmarks.snomed.export import exported_run
from tasks.benchmarks.snomed.plan import build_plan, estimate_job
from tasks.benchmarks.snomed.report import ReportSettings, build_report, publish_report_artifacts
from tasks.benchmarks.snomed.scorer import score_interview
from tasks.benchmarks.snomed.solver import interview_case
from tasks.benchmarks.snomed.summary import summarize
from tasks.evals.outputs import RunTables
from tasks.evals.protocol import Benchmark, published_report

SNOMED = Benchmark(
    card=SNOMED_CARD,
    load_cases=load_sample,
    plan=build_plan,
    solve=interview_case,
    score=score_interview,
    tables=RunTables(solved=(CONVERSATIONS,), scored=(PREDICTIONS, SCORES)),
    summarize=summarize,
    estimate_job=estimate_job,
    report=published_report(build_report, publish_report_artifacts, ReportSettings),
    report_settings=ReportSettings,
    contracts=(CONVERSATIONS, PREDICTIONS, SCORES),
    prompts_dir=PROMPTS_DIR,
    comparison=COMPARISON,
    export=exported_run,
)
