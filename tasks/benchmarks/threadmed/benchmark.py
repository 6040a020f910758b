"""ThReadMed-QA as a `Benchmark`: the record the registry lists and the evaluate-models flow runs."""

from tasks.benchmarks.threadmed.card import THREADMED_CARD
from tasks.benchmarks.threadmed.cases import dataset_fingerprint, load_sample
from tasks.benchmarks.threadmed.compare import COMPARISON
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, QA_PAIRS, RESPONSES, THREADS
from tasks.benchmarks.threadmed.export import exported_run
from tasks.benchmarks.threadmed.plan import build_plan, estimate_job, estimate_scoring
from tasks.benchmarks.threadmed.report import build_report, publish_report_artifacts
from tasks.benchmarks.threadmed.scorer import PROMPTS_DIR, judge_thread
from tasks.benchmarks.threadmed.settings import ReportSettings
from tasks.benchmarks.threadmed.solver import InferenceJob, answer_thread
from tasks.benchmarks.threadmed.summary import summarize
from tasks.benchmarks.threadmed.warehouse import WAREHOUSE
from tasks.evals.outputs import RunTables
from tasks.evals.protocol import Benchmark, Rejudging, published_report

THREADMED = Benchmark(
    card=THREADMED_CARD,
    load_cases=load_sample,
    plan=build_plan,
    solve=answer_thread,
    score=judge_thread,
    tables=RunTables(solved=(RESPONSES,), scored=(JUDGMENTS,)),
    summarize=summarize,
    estimate_job=estimate_job,
    report=published_report(build_report, publish_report_artifacts, ReportSettings),
    report_settings=ReportSettings,
    contracts=(THREADS, QA_PAIRS, RESPONSES, JUDGMENTS),
    prompts_dir=PROMPTS_DIR,
    export=exported_run,
    rejudging=Rejudging(
        solved_key=InferenceJob.row_key, estimate_scoring=estimate_scoring, fingerprint=dataset_fingerprint
    ),
    warehouse=WAREHOUSE,
    comparison=COMPARISON,
)
