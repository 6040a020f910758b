"""The full-cycle consultation benchmark as a `Benchmark`: the record the registry lists and its flows run."""

from tasks.benchmarks.consult.card import CONSULT_CARD
from tasks.benchmarks.consult.cases.case_set import case_set_fingerprint, load_sample
from tasks.benchmarks.consult.compare import COMPARISON
from tasks.benchmarks.consult.config import PROMPTS_DIR
from tasks.benchmarks.consult.contracts import MESSAGES, SCORES
from tasks.benchmarks.consult.export import exported_run
from tasks.benchmarks.consult.plan import build_plan, estimate_job, estimate_scoring
from tasks.benchmarks.consult.report import build_report, publish_report_artifacts
from tasks.benchmarks.consult.report_metrics import ReportSettings
from tasks.benchmarks.consult.scorer import score_episode
from tasks.benchmarks.consult.solver import EpisodeJob, consult_episode
from tasks.benchmarks.consult.summary import summarize
from tasks.evals.outputs import RunTables
from tasks.evals.protocol import Benchmark, Rejudging, published_report

CONSULT = Benchmark(
    card=CONSULT_CARD,
    load_cases=load_sample,
    plan=build_plan,
    solve=consult_episode,
    score=score_episode,
    tables=RunTables(solved=(MESSAGES,), scored=(SCORES,)),
    summarize=summarize,
    estimate_job=estimate_job,
    report=published_report(build_report, publish_report_artifacts, ReportSettings),
    report_settings=ReportSettings,
    contracts=(MESSAGES, SCORES),
    prompts_dir=PROMPTS_DIR,
    export=exported_run,
    rejudging=Rejudging(
        solved_key=EpisodeJob.row_key, estimate_scoring=estimate_scoring, fingerprint=case_set_fingerprint
    ),
    comparison=COMPARISON,
)
