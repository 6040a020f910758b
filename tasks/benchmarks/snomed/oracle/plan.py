"""oracle-data's run plan: every case of the case set, its topics and the teacher's messages; its dry run."""

from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.cases.loading import (
    case_set_fingerprint,
    check_case_set,
    load_case_set,
    run_case_set_facts,
)
from tasks.benchmarks.snomed.config import ORACLE_PATIENT_PROMPT
from tasks.benchmarks.snomed.interview import record_text
from tasks.benchmarks.snomed.leak import normalise_display
from tasks.benchmarks.snomed.oracle.config import TEACHER_PROMPT, OracleDataConfig
from tasks.benchmarks.snomed.oracle.offline_teacher import OFFLINE_TEACHER, OFFLINE_TEACHER_LABEL
from tasks.benchmarks.snomed.oracle.solver import PairsJob, TeacherCall, ValidateJob
from tasks.benchmarks.snomed.oracle.splits import check_every_split_has_a_patient, split_by_patient
from tasks.benchmarks.snomed.oracle.topics import (
    PairTopic,
    case_rng,
    negative_candidates,
    negative_topics,
    positive_topics,
)
from tasks.benchmarks.snomed.oracle.validation import vocabulary_leak_names
from tasks.benchmarks.snomed.patient import (
    Disclosure,
    Lexicon,
    lay_conditions,
    leak_names_by_code,
    load_lexicon,
)
from tasks.benchmarks.snomed.solver import RoleSetup
from tasks.benchmarks.snomed.vocabulary import (
    Vocabulary,
    VocabularyEntry,
    add_case_set_codes,
    derive_synthea_vocabulary,
)
from tasks.core.tokens import count_tokens
from tasks.evals.config import EvaluationSettings, SampleSpec
from tasks.evals.estimate import EstimateTally
from tasks.evals.plan import Job, RunPlan, run_id_for
from tasks.llm.ledger import CallLedger
from tasks.llm.prompts import PromptTemplate, load_prompt

OraclePlan = RunPlan[PairsJob, ValidateJob]
TEACHER_ROLE = "teacher"
# What the teacher's answers may say, per disclosure (the patient's own rule is interview.DISCLOSURE_RULES).
TEACHER_DISCLOSURE_RULES: dict[Disclosure, str] = {
    "symptoms": "The answer never names a diagnosis or condition, even one the record names: it tells what "
    "the patient feels and was told in everyday words.",
    "history": "The answer may name a diagnosis the patient has been told it has.",
}


def load_cases(case_set_dir: Any, sample: SampleSpec) -> list[Case]:
    """Every case of the case set, whatever its split (the pairs have a split of their own), in id order;
    the first `sample.limit`."""
    return sorted(load_case_set(case_set_dir), key=lambda case: case.case_id)[: sample.limit]


def check_every_split_has_pairs(case_set_dir: Path, config: OracleDataConfig) -> None:
    """UserError naming the fix when the run's patients (the first `limit`) leave a split of the pairs
    without one: checked before any call, and by the command line before the dry run's first line."""
    cases, available = load_cases(case_set_dir, config.sample), len(load_case_set(case_set_dir))
    check_every_split_has_a_patient(len(cases), config.split, config.sample.limit, available)


def run_vocabulary(cases: list[Case]) -> Vocabulary:
    """The run's vocabulary: every condition code the Synthea modules emit, plus every condition of the
    cases (so the records' conditions and the negative topics are all in the leak check's names)."""
    return add_case_set_codes(
        derive_synthea_vocabulary(), [(c.code, c.display) for case in cases for c in case.conditions]
    )


def teacher_messages(
    prompt: PromptTemplate, case: Case, topic: PairTopic, disclosure: Disclosure, lexicon: Lexicon
) -> tuple[dict[str, str], ...]:
    """The teacher's system prompt (the record, named, and the patient's lay words) and the pair's request."""
    lay = lay_conditions(case, disclosure, lexicon).sentences
    system = prompt.render(
        "system",
        disclosure_rule=TEACHER_DISCLOSURE_RULES[disclosure],
        record=record_text(case, "named", disclosure, lexicon),
        lay_conditions="\n".join(f"- {sentence}" for sentence in lay) or "- (none)",
    )
    if topic.kind == "negative":
        request = prompt.render("negative", topic=normalise_display(topic.display))
    else:
        request = prompt.render("positive", subject=topic.subject, topic=normalise_display(topic.display))
    return ({"role": "system", "content": system}, {"role": "user", "content": request})


def case_topics(
    case: Case, config: OracleDataConfig, vocabulary: dict[str, VocabularyEntry], lexicon: Lexicon
) -> list[PairTopic]:
    """The case's positive then negative topics, drawn with the case's own seeded generator."""
    rng = case_rng(config.seed, case.case_id)
    positives = positive_topics(case, config.disclosure, lexicon, config.positives_per_case, rng)
    candidates = negative_candidates(case, vocabulary, lexicon)
    return positives + negative_topics(candidates, config.negatives_per_case, rng)


def build_plan(settings: EvaluationSettings[OracleDataConfig]) -> OraclePlan:
    """Cases x topics -> one job per case. Reads the case set and the vocabulary; calls nothing."""
    config, case_set_dir = settings.config, settings.dataset_dir
    check_case_set(case_set_dir)
    fingerprint = case_set_fingerprint(case_set_dir)
    run_id = run_id_for(config, fingerprint)
    teacher_prompt = load_prompt(config.teacher_prompt or TEACHER_PROMPT)
    patient_prompt = load_prompt(ORACLE_PATIENT_PROMPT)
    teacher = config.resolved(config.teacher)
    setup = RoleSetup(
        spec=teacher, options=config.call_options(teacher), prompt_version=teacher_prompt.version
    )
    check_every_split_has_pairs(case_set_dir, config)
    cases = load_cases(case_set_dir, config.sample)
    lexicon = load_lexicon()
    vocabulary = run_vocabulary(cases)
    leak_names = vocabulary_leak_names(vocabulary, leak_names_by_code(lexicon))
    splits = split_by_patient([case.case_id for case in cases], config.seed, config.split)
    jobs = []
    for case in cases:
        topics = case_topics(case, config, vocabulary, lexicon)
        calls = tuple(
            TeacherCall(
                topic=topic,
                messages=teacher_messages(teacher_prompt, case, topic, config.disclosure, lexicon),
                params=_offline_params(case, topic, config.disclosure)
                if teacher.model == OFFLINE_TEACHER
                else {},
            )
            for topic in topics
        )
        jobs.append(
            Job(
                solve=PairsJob(run_id=run_id, teacher=setup, case_id=case.case_id, split=splits[case.case_id],
                               calls=calls),
                score=ValidateJob(
                    run_id=run_id,
                    case_id=case.case_id,
                    disclosure=config.disclosure,
                    leak_names=leak_names,
                    topics=tuple(topics),
                ),
            )
        )  # fmt: skip
    return OraclePlan(
        run_id=run_id,
        run_dir=settings.run_dir,
        dataset_dir=case_set_dir,
        dataset_fingerprint=fingerprint,
        jobs=jobs,
        prompts={p.version: p.sha256 for p in (teacher_prompt, patient_prompt)},
        manifest_facts={"case_set": run_case_set_facts(case_set_dir)},
        notes=[OFFLINE_TEACHER_LABEL] if teacher.model == OFFLINE_TEACHER else [],
    )


def _offline_params(case: Case, topic: PairTopic, disclosure: Disclosure) -> dict[str, str]:
    """The offline teacher reads the structured record and topic, never a case's ids or gold codes."""
    return {
        "record": case.patient_record().model_dump_json(),
        "topic": topic.model_dump_json(),
        "disclosure": disclosure,
    }


def estimate_job(job: Job[PairsJob, ValidateJob], ledger: CallLedger, tally: EstimateTally) -> None:
    """Count the case's teacher calls not in the ledger yet, with their prompt and assumed reply tokens."""
    teacher = job.solve.teacher
    estimate = tally.of(teacher.spec, teacher.options, TEACHER_ROLE)
    for call in job.solve.calls:
        if ledger.find(job.solve.request(call)) is not None:
            estimate.cached += 1
            continue
        estimate.calls += 1
        estimate.prompt_tokens += sum(count_tokens(message["content"]) for message in call.messages)
        estimate.completion_tokens += teacher.spec.assumed_reply_tokens
