"""patient-eval as a `Benchmark` record, so the shared run machinery (plan, ledger, resume, batch mode, dry
run, progress, manifest) makes its calls: the patients are the run's models, a case x patient is a job."""

from functools import partial

from tasks.benchmarks.snomed.cases.loading import check_case_set
from tasks.benchmarks.snomed.config import PROMPTS_DIR
from tasks.benchmarks.snomed.patient_bench.config import PatientBenchConfig
from tasks.benchmarks.snomed.patient_bench.contracts import PATIENT_ANSWERS, PATIENT_SCORES
from tasks.benchmarks.snomed.patient_bench.plan import (
    build_plan,
    check_bench_sample,
    estimate_job,
    load_cases,
)
from tasks.benchmarks.snomed.patient_bench.report import BenchReportSettings, bench_report
from tasks.benchmarks.snomed.patient_bench.solver import ask_patient, score_answers
from tasks.evals.card import BenchmarkCard
from tasks.evals.outputs import EpisodeCounts, RunTables, column_mean, summarize_by_epoch
from tasks.evals.protocol import Benchmark
from tasks.evals.verdicts import JUDGE_CUT

ANSWERS = EpisodeCounts(
    counts={
        "answered": ("status", "ok"),
        "failed": ("status", "failed"),
        "judge\ncut": ("judge_status", JUDGE_CUT),
    },
    score=column_mean("disclosed"),
    score_label="disclosure %",
    score_note="share of positive questions answered with the record's fact, per asking (epoch)",
)

PATIENT_BENCH = Benchmark(
    card=BenchmarkCard(
        name="snomed-patient-bench",
        title="SNOMED patient bench: patient simulators answer fixed questions about their records, scored",
        config_model=PatientBenchConfig,
        check_inputs=check_case_set,
        check_sample=check_bench_sample,
    ),
    load_cases=load_cases,
    plan=build_plan,
    solve=ask_patient,
    score=score_answers,
    tables=RunTables(solved=(PATIENT_ANSWERS,), scored=(PATIENT_SCORES,)),
    summarize=partial(summarize_by_epoch, how=ANSWERS),
    estimate_job=estimate_job,
    report=bench_report,
    report_settings=BenchReportSettings,
    contracts=(PATIENT_ANSWERS, PATIENT_SCORES),
    prompts_dir=PROMPTS_DIR,
)
