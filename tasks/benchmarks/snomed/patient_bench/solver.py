"""patient-eval's two steps per (case, patient): the patient answers every question of the case, each asked
`askings` times (one call each, through the ledger; the asking is the call's epoch), then the answers are
scored by rule and, when a judge is configured, graded for faithfulness. One Prefect task per case x patient
for each step, never one per call."""

from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import BaseModel

# Imported for their side effect: the offline patient and teacher are registered wherever these jobs run.
from tasks.benchmarks.snomed import offline_models  # noqa: F401
from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.patient import Disclosure, load_lexicon
from tasks.benchmarks.snomed.patient_bench.questions import BenchQuestion
from tasks.benchmarks.snomed.patient_bench.scoring import consistent, score_answer
from tasks.benchmarks.snomed.solver import RoleSetup, call_columns
from tasks.evals.config import JudgeSpec
from tasks.evals.job_state import job_result
from tasks.evals.verdicts import Verdict, boolean_scale, read_verdict
from tasks.llm.call import complete, counting_outcomes
from tasks.llm.ledger import CallLedger
from tasks.llm.prompts import PromptTemplate
from tasks.llm.request import CallOptions, ChatRequest

FAITHFUL_SCALE = boolean_scale("faithful", {"faithful": True, "unfaithful": False})
NOT_JUDGED = {"judge_status": None, "faithful": None, "judge_reason": None, "judge_call_key": None}


class AskJob(BaseModel, frozen=True):
    """One patient, one case: every question, every asking. The unit of one Prefect task."""

    run_id: str
    patient: RoleSetup
    case_id: str
    system: str  # the patient prompt with the record (the offline patient reads its params instead)
    questions: tuple[BenchQuestion, ...]
    askings: int

    @property
    def label(self) -> str:
        return f"{self.patient.spec.name}/{self.case_id}"

    @property
    def task_label(self) -> str:
        return self.label

    def request(self, question: BenchQuestion, asking: int) -> ChatRequest:
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": question.question},
        ]
        scope = f"snomed/patient-bench/{self.case_id}/{question.question_id}"
        return self.patient.spec.request(
            messages, self.patient.prompt_version, scope=scope, epoch=asking, extra_params=self.patient.params
        )


class BenchJudge(BaseModel, frozen=True):
    """The optional judge: its model, call options and rubric (with a `reask` section)."""

    spec: JudgeSpec
    options: CallOptions
    rubric: PromptTemplate


class BenchScoreJob(BaseModel, frozen=True):
    """What scoring one patient's answers on one case needs: the record, the questions, the judge if any."""

    run_id: str
    model: str
    case: Case
    questions: tuple[BenchQuestion, ...]
    disclosure: Disclosure
    record_text: str  # the record as the judge reads it
    judge: BenchJudge | None = None

    def judge_request(
        self, question: BenchQuestion, messages: list[dict[str, str]], asking: int
    ) -> ChatRequest:
        """The judge's request on the answer to `question` at `asking` (its re-asks add to `messages`)."""
        assert self.judge is not None
        scope = f"snomed/patient-judge/{self.case.case_id}/{question.question_id}"
        return self.judge.spec.request(messages, self.judge.rubric.version, scope=scope, epoch=asking)


def _answer_key(
    run_id: str, model: str, case_id: str, question: BenchQuestion, asking: int
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "model": model,
        "case_id": case_id,
        "epoch": asking,
        "question_id": question.question_id,
        "source": question.source,
        "kind": question.kind,
        "subject": question.subject,
        "topic": question.topic,
    }


def ask_patient(job: AskJob, ledger_dir: Path) -> list[dict[str, Any]]:
    """Every question of the case to the patient, `askings` times → one PATIENT_ANSWERS row each."""
    ledger = CallLedger(ledger_dir)
    rows = []
    with counting_outcomes() as outcomes:
        for question in job.questions:
            for asking in range(job.askings):
                record = complete(job.request(question, asking), job.patient.options, ledger)
                key = _answer_key(job.run_id, job.patient.spec.name, job.case_id, question, asking)
                rows.append(
                    {**key, "question": question.question, "text": record.text, **call_columns(record)}
                )
    return job_result(rows, outcomes)


def score_answers(job: BenchScoreJob, solved: list[dict[str, Any]], ledger_dir: Path) -> list[dict[str, Any]]:
    """The case's answers → one PATIENT_SCORES row per asking (rule verdicts, consistency, the judge's)."""
    ledger = CallLedger(ledger_dir)
    with counting_outcomes() as outcomes:
        rows = scored_rows(job, solved, lambda request: complete(request, job.judge.options, ledger))
    return job_result(rows, outcomes)


def scored_rows(job: BenchScoreJob, answers: list[dict[str, Any]], call: Any) -> list[dict[str, Any]]:
    """Rule verdicts per answer, consistency per question, then the judge's verdict when there is a judge."""
    lexicon = load_lexicon()
    questions = {question.question_id: question for question in job.questions}
    key_columns = ("run_id", "model", "case_id", "epoch", "question_id", "source", "kind", "subject", "topic")
    rows, by_question = [], defaultdict(list)
    for answer in answers:
        row = {name: answer[name] for name in key_columns} | {"status": answer["status"]}
        if answer["status"] == "ok":
            question = questions[answer["question_id"]]
            row |= score_answer(question, job.case, answer["text"] or "", job.disclosure, lexicon)
            row |= judge_answer(job, question, answer, call) if job.judge is not None else NOT_JUDGED
            by_question[answer["question_id"]].append(row)
        rows.append(row)
    for verdicts in by_question.values():
        for row in verdicts:
            row["consistent"] = consistent(verdicts)
    return rows


def judge_messages(rubric: PromptTemplate, record: str, question: str, answer: str) -> list[dict[str, str]]:
    values = {"record": record, "question": question, "answer": answer}
    return [
        {"role": "system", "content": rubric.render("system", **values)},
        {"role": "user", "content": rubric.render("user", **values)},
    ]


def judge_answer(
    job: BenchScoreJob, question: BenchQuestion, answer: dict[str, Any], call: Any
) -> dict[str, Any]:
    """Ask the judge whether the answer is faithful to the record, re-asking (its reply shown) while its reply
    holds no valid verdict (a reply cut at the judge's max_tokens holds none); 'unparseable' after
    `max_reasks`, or 'judge_cut' when the last reply was cut, never a default grade."""
    judge = job.judge
    assert judge is not None
    messages = judge_messages(judge.rubric, job.record_text, question.question, answer["text"] or "")
    for _ in range(judge.spec.max_reasks + 1):
        record = call(job.judge_request(question, messages, answer["epoch"]))
        if record.status != "ok":
            return {
                "judge_status": "failed",
                "faithful": None,
                "judge_reason": record.error,
                "judge_call_key": record.key,
            }
        verdict = read_verdict(record.text, FAITHFUL_SCALE, record.finish_reason, graded=answer["text"])
        if isinstance(verdict, Verdict):
            return {
                "judge_status": "ok",
                "faithful": verdict.grade,
                "judge_reason": verdict.reason,
                "judge_call_key": record.key,
            }
        messages = [
            *messages,
            {"role": "assistant", "content": record.text or ""},
            {"role": "user", "content": judge.rubric.render("reask")},
        ]
    return {
        "judge_status": verdict.status,
        "faithful": None,
        "judge_reason": None,
        "judge_call_key": record.key,
    }
