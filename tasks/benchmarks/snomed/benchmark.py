"""The SNOMED diagnosis benchmark as a `Benchmark`: the record the registry lists and its flows run."""

from tasks.benchmarks.protocol import Benchmark
from tasks.benchmarks.snomed.cases.loading import load_sample
from tasks.benchmarks.snomed.config import PROMPTS_DIR, SnomedConfig
from tasks.benchmarks.snomed.contracts import CONVERSATIONS, PREDICTIONS, SCORES
from tasks.benchmarks.snomed.plan import build_plan, estimate_job
from tasks.benchmarks.snomed.report import (
    ReportSettings,
    build_report,
    default_report_dir,
    publish_report_artifacts,
)
from tasks.benchmarks.snomed.scorer import score_interview
from tasks.benchmarks.snomed.solver import interview_case
from tasks.benchmarks.snomed.summary import summarize
from tasks.evals.outputs import RunTables


def report_runs(run_dirs: list[str], out_dir: str | None, settings: ReportSettings | None) -> str:
    """Runs → the report folder (metrics.json, report.md, figures, index.html) and its Prefect artifacts."""
    report_dir = build_report(
        run_dirs=run_dirs,
        out_dir=out_dir or default_report_dir(run_dirs),
        settings=settings or ReportSettings(),
    )
    publish_report_artifacts(report_dir=report_dir)
    return report_dir


SNOMED = Benchmark(
    name="snomed",
    title="SNOMED diagnosis: a clinician model interviews a simulated patient and names its conditions",
    config_model=SnomedConfig,
    load_cases=load_sample,
    plan=build_plan,
    solve=interview_case,
    score=score_interview,
    tables=RunTables(solved=(CONVERSATIONS,), scored=(PREDICTIONS, SCORES)),
    summarize=summarize,
    estimate_job=estimate_job,
    report=report_runs,
    report_settings=ReportSettings,
    contracts=(CONVERSATIONS, PREDICTIONS, SCORES),
    prompts_dir=PROMPTS_DIR,
)
