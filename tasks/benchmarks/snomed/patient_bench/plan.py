"""patient-eval's run plan: the bench's cases, their questions, one job per case x patient; its dry run."""

from pathlib import Path

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.cases.loading import (
    case_set_fingerprint,
    check_case_set,
    load_case_set,
    run_case_set_facts,
)
from tasks.benchmarks.snomed.interview import offline_patient_params, record_text
from tasks.benchmarks.snomed.offline_models import PATIENT
from tasks.benchmarks.snomed.oracle.answers import STANCE_RULES_VERSION
from tasks.benchmarks.snomed.oracle.dataset import served_system_prompt
from tasks.benchmarks.snomed.patient import load_lexicon
from tasks.benchmarks.snomed.patient_bench.config import JUDGE_RUBRIC, PatientBenchConfig
from tasks.benchmarks.snomed.patient_bench.questions import (
    QUESTION_SET_VERSION,
    BenchQuestion,
    generated_questions,
    oracle_test_case_ids,
    oracle_test_questions,
)
from tasks.benchmarks.snomed.patient_bench.scoring import CLINICAL_TERMS_VERSION
from tasks.benchmarks.snomed.patient_bench.solver import AskJob, BenchJudge, BenchScoreJob, judge_messages
from tasks.benchmarks.snomed.solver import RoleSetup
from tasks.core.preflight import UserError
from tasks.core.tokens import count_tokens
from tasks.evals.config import EvaluationSettings, SampleSpec
from tasks.evals.estimate import EstimateTally
from tasks.evals.plan import Job, RunPlan, run_id_for
from tasks.llm.ledger import CallLedger
from tasks.llm.prompts import load_prompt

BenchPlan = RunPlan[AskJob, BenchScoreJob]


def bench_cases(case_set_dir: Path, sample: SampleSpec, oracle_data: Path | None = None) -> list[Case]:
    """The bench's patients in id order, the first `sample.limit`: every case of the case set, or, with an
    oracle data folder, its test-split patients only (held out from the oracle's training)."""
    cases = sorted(load_case_set(case_set_dir), key=lambda case: case.case_id)
    if oracle_data is not None:
        held_out = set(oracle_test_case_ids(oracle_data))
        cases = [case for case in cases if case.case_id in held_out]
        if not cases:
            raise UserError(
                f"none of the test-split patients of {oracle_data} is in the case set: pass the case set the "
                "oracle data was made from",
                "--oracle-data",
            )
    return cases[: sample.limit]


def check_bench_sample(case_set_dir: Path, config: PatientBenchConfig) -> None:
    """UserError when the oracle data folder is none, or holds no test-split patient of the case set:
    checked before any call, and by the command line before the dry run's first line."""
    if config.oracle_data is not None and not (config.oracle_data / "chat" / "test.jsonl").is_file():
        raise UserError(
            f"{config.oracle_data} is no oracle data folder (no chat/test.jsonl)", "--oracle-data"
        )
    bench_cases(case_set_dir, config.sample, config.oracle_data)


def load_cases(case_set_dir: Path, sample: SampleSpec) -> list[Case]:
    return bench_cases(case_set_dir, sample)


def case_questions(case: Case, config: PatientBenchConfig) -> tuple[BenchQuestion, ...]:
    lexicon = load_lexicon()
    questions = generated_questions(case, config.disclosure, lexicon)
    if config.oracle_data is not None:
        questions += oracle_test_questions(config.oracle_data, case, lexicon)
    return tuple(questions)


def build_plan(settings: EvaluationSettings[PatientBenchConfig]) -> BenchPlan:
    """Cases x patients -> one job each. Reads the case set (and oracle data); calls nothing."""
    config, case_set_dir = settings.config, settings.dataset_dir
    check_case_set(case_set_dir)
    check_bench_sample(case_set_dir, config)
    fingerprint = case_set_fingerprint(case_set_dir)
    run_id = run_id_for(config, fingerprint)
    prompt = load_prompt(config.prompt_file())
    patients = [config.resolved(spec) for spec in config.models]
    judge = None
    if config.judge is not None:
        spec = config.resolved(config.judge)
        rubric = load_prompt(spec.rubric or JUDGE_RUBRIC)
        judge = BenchJudge(spec=spec, options=config.call_options(spec), rubric=rubric)
    cases = bench_cases(case_set_dir, config.sample, config.oracle_data)
    jobs = []
    for case in cases:
        questions = case_questions(case, config)
        system = served_system_prompt(prompt, case, config.disclosure)
        for patient in patients:
            params = offline_patient_params(case, config.disclosure) if patient.model == PATIENT else {}
            setup = RoleSetup(
                spec=patient,
                options=config.call_options(patient),
                prompt_version=prompt.version,
                params=params,
            )
            ask = AskJob(run_id=run_id, patient=setup, case_id=case.case_id, system=system,
                         questions=questions, askings=config.askings)  # fmt: skip
            score = BenchScoreJob(
                run_id=run_id,
                model=patient.name,
                case=case,
                questions=questions,
                disclosure=config.disclosure,
                record_text=record_text(case, "named", "history"),
                judge=judge,
            )
            jobs.append(Job(solve=ask, score=score))
    prompts = {
        prompt.version: prompt.sha256,
        **({judge.rubric.version: judge.rubric.sha256} if judge else {}),
    }
    return BenchPlan(
        run_id=run_id,
        run_dir=settings.run_dir,
        dataset_dir=case_set_dir,
        dataset_fingerprint=fingerprint,
        jobs=jobs,
        prompts=prompts,
        manifest_facts={
            "case_set": run_case_set_facts(case_set_dir),
            "bench_cases": [case.case_id for case in cases],
            "question_set": QUESTION_SET_VERSION,
            "clinical_terms_version": CLINICAL_TERMS_VERSION,
            "stance_rules_version": STANCE_RULES_VERSION,
            "lexicon_version": load_lexicon().version,
            "questions": sum(len(job.solve.questions) for job in jobs[:: max(1, len(patients))]),
        },
        notes=[] if judge else ["No judge: faithfulness is not graded (--judge MODEL grades it)."],
    )


def estimate_job(job: Job[AskJob, BenchScoreJob], ledger: CallLedger, tally: EstimateTally) -> None:
    """Count the patient's calls not in the ledger yet, and a judge call for each answer not judged yet."""
    ask, score = job.solve, job.score
    patient = tally.of(ask.patient.spec, ask.patient.options, "patient")
    judge = tally.of(score.judge.spec, score.judge.options, "judge") if score.judge else None
    for question in ask.questions:
        for asking in range(ask.askings):
            request = ask.request(question, asking)
            record = ledger.find(request)
            if record is None:
                patient.calls += 1
                patient.prompt_tokens += sum(count_tokens(m["content"]) for m in request.messages)
                patient.completion_tokens += ask.patient.spec.assumed_reply_tokens
            else:
                patient.cached += 1
            # Only an answer is judged: not a reply the provider withheld (CallLedger.find).
            if judge is None or score.judge is None or (record is not None and record.status != "ok"):
                continue
            answer = record.text if record is not None and record.text else ""
            messages = judge_messages(score.judge.rubric, score.record_text, question.question, answer)
            if ledger.find(score.judge_request(question, messages, asking)) is not None:
                judge.cached += 1
                continue
            judge.calls += 1
            judge.prompt_tokens += sum(count_tokens(m["content"]) for m in messages)
            judge.completion_tokens += score.judge.spec.assumed_reply_tokens
