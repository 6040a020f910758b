"""ThReadMed-QA as a `Benchmark`: the record the registry lists and the evaluate-models flow runs."""

from tasks.benchmarks.protocol import Benchmark
from tasks.benchmarks.threadmed.cases import load_sample
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, QA_PAIRS, RESPONSES, THREADS
from tasks.benchmarks.threadmed.plan import build_plan, estimate_job
from tasks.benchmarks.threadmed.report import build_report, default_report_dir, publish_report_artifacts
from tasks.benchmarks.threadmed.scorer import PROMPTS_DIR, judge_thread
from tasks.benchmarks.threadmed.settings import ReportSettings
from tasks.benchmarks.threadmed.solver import answer_thread
from tasks.benchmarks.threadmed.summary import summarize
from tasks.evals.config import EvalConfig
from tasks.evals.outputs import RunTables


def report_runs(run_dirs: list[str], out_dir: str | None, settings: ReportSettings | None) -> str:
    """Runs → the report folder (metrics.json, tables, figures, index.html) and its Prefect artifacts."""
    report_dir = build_report(
        run_dirs=run_dirs,
        out_dir=out_dir or default_report_dir(run_dirs),
        settings=settings or ReportSettings(),
    )
    publish_report_artifacts(report_dir=report_dir)
    return report_dir


THREADMED = Benchmark(
    name="threadmed",
    title="ThReadMed-QA: multi-turn medical questions from r/AskDocs, judged against physician answers",
    config_model=EvalConfig,
    load_cases=load_sample,
    plan=build_plan,
    solve=answer_thread,
    score=judge_thread,
    tables=RunTables(solved=(RESPONSES,), scored=(JUDGMENTS,)),
    summarize=summarize,
    estimate_job=estimate_job,
    report=report_runs,
    report_settings=ReportSettings,
    contracts=(THREADS, QA_PAIRS, RESPONSES, JUDGMENTS),
    prompts_dir=PROMPTS_DIR,
)
