"""LLM judging: grade each answered turn against the physician answer with a versioned rubric prompt.

The judge's reply is parsed tolerantly in form (code fences, text around the JSON, "1" for 1.0) and
strictly in substance: a score off the rubric's scale or contradicted elsewhere in the reply is no score,
and so is a reply cut at the judge's max_tokens (its reason, or a second score, was cut off). A reply with
no valid score is asked again, up to `max_reasks` times, as a follow-up showing the judge its own reply.
After that the turn is 'unparseable', or 'judge_cut' when the last reply was cut: score null, excluded from
every metric and counted, never 0.
"""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

# Imported for its side effect: the offline models are registered wherever this module's jobs run
# (a Dask worker imports this module when it unpickles them).
from tasks.benchmarks.threadmed import baselines  # noqa: F401
from tasks.benchmarks.threadmed.cases import ThreadCase
from tasks.evals.config import Condition, JudgeSpec
from tasks.evals.job_state import job_result
from tasks.evals.verdicts import Unparseable, Verdict, numeric_scale, read_verdict
from tasks.evals.verdicts import parse_verdict as parse_scaled_verdict
from tasks.llm.call import complete, counting_outcomes
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.prompts import PromptTemplate
from tasks.llm.request import CallOptions, ChatRequest

PROMPTS_DIR = Path(__file__).parent / "prompts"
DEFAULT_RUBRIC = PROMPTS_DIR / "judge_rubric_v1.txt"
REASK_PROMPT = PROMPTS_DIR / "judge_reask_v1.txt"
VALID_SCORES = (0.0, 0.5, 1.0)


def render_judge_messages(
    rubric: PromptTemplate, question: str, physician_answer: str, model_answer: str
) -> list[dict[str, str]]:
    values = {"question": question, "physician_answer": physician_answer, "model_answer": model_answer}
    return [
        {"role": "system", "content": rubric.render("system", **values)},
        {"role": "user", "content": rubric.render("user", **values)},
    ]


# The rubric's field, grades and its names for them (judge_rubric_v1: "1.0 (correct)", "0.5 (partially
# correct)", "0.0 (incorrect)"); the parsing is shared by every judge (tasks/evals/verdicts.py).
SCORE_SCALE = numeric_scale(
    "score", VALID_SCORES, {"correct": 1.0, "partially correct": 0.5, "incorrect": 0.0}
)


def parse_verdict(text: str | None) -> Verdict | None:
    """The reply's grade on the rubric's scale (0, 0.5, 1) when every score it states agrees, else None."""
    return parse_scaled_verdict(text, SCORE_SCALE)


class JudgeJob(BaseModel, frozen=True):
    """Judging of one model's answers to one thread in one condition: the unit of one Prefect task."""

    run_id: str
    judge: JudgeSpec
    options: CallOptions
    rubric: PromptTemplate
    reask: PromptTemplate
    model_name: str
    condition: Condition
    thread: ThreadCase
    truncated: Literal["judge", "mark"] = "judge"  # an answer cut at max_tokens (EvalConfig.truncated)

    @property
    def label(self) -> str:
        return f"{self.model_name}/{self.condition}/{self.thread.thread_id}"

    def request(self, messages: list[dict[str, str]]) -> ChatRequest:
        """The judge's request for `messages`, in the judge's epoch (its repeat index, in the call key)."""
        return self.judge.request(messages, self.rubric.version, epoch=self.judge.epoch)


def judge_thread(job: JudgeJob, solved: list[dict[str, Any]], ledger_dir: Path) -> list[dict[str, Any]]:
    """Judge each answered turn of `solved` (response rows) → a judgment row each; calls go to the ledger."""
    ledger = CallLedger(ledger_dir)
    with counting_outcomes() as outcomes:
        rows = [
            judge_turn(job, row["turn"], row["response"], ledger)
            if is_judged(job, row)
            else not_judged_row(job, row)
            for row in solved
        ]
    return job_result(rows, outcomes)


def is_judged(job: JudgeJob, response: dict[str, Any]) -> bool:
    """Whether the judge grades this response row: an answer, unless cut at max_tokens and marked so."""
    return response["status"] == "ok" and not (job.truncated == "mark" and is_truncated(response))


def is_truncated(response: dict[str, Any]) -> bool:
    """Whether the answer was cut at max_tokens (OpenAI's finish_reason 'length', as litellm maps others')."""
    return response.get("finish_reason") == "length"


def judge_turn(job: JudgeJob, turn: int, model_answer: str, ledger: CallLedger) -> dict[str, Any]:
    """Ask the judge about one turn, re-asking while its reply has no valid score."""
    replies = list(
        judge_replies(job, turn, model_answer, lambda request: complete(request, job.options, ledger))
    )
    records = [record for record, _ in replies if record is not None]  # complete() always gives one
    return judgment_row(job, turn, records, replies[-1][1])


def judge_replies(
    job: JudgeJob, turn: int, model_answer: str, reply: Callable[[ChatRequest], CallRecord | None]
) -> Iterator[tuple[CallRecord | None, Verdict | Unparseable | None]]:
    """The judge's replies about one turn with their reading, `reply` giving each request's record: the
    first ask, then a re-ask while a reply has no valid score, `max_reasks` at most. It ends after a valid
    score, a failed call or no record (None: a dry run's walk of a call not made yet)."""
    messages = render_judge_messages(
        job.rubric, job.thread.questions[turn], job.thread.answers[turn], model_answer
    )
    for _ in range(job.judge.max_reasks + 1):
        record = reply(job.request(messages))
        if record is None or record.status != "ok":
            yield record, None
            return
        verdict = read_verdict(record.text, SCORE_SCALE, record.finish_reason, graded=model_answer)
        yield record, verdict
        if isinstance(verdict, Verdict):
            return
        messages = [
            *messages,
            {"role": "assistant", "content": record.text or ""},
            {"role": "user", "content": job.reask.render("user")},
        ]


def judgment_row(
    job: JudgeJob, turn: int, records: list[CallRecord], verdict: Verdict | Unparseable | None
) -> dict[str, Any]:
    """A JUDGMENTS row for the last reply's reading (None: its call failed); tokens, cost and attempts add
    up every request made for this turn."""
    last = records[-1]
    graded = verdict if isinstance(verdict, Verdict) else None
    status = "ok" if graded is not None else verdict.status if isinstance(verdict, Unparseable) else "failed"
    return {
        **_row_key(job, turn),
        "score": graded.grade if graded is not None else None,
        "reason": graded.reason if graded is not None else None,
        "parse_status": status,
        "raw_reply": last.text,
        "prompt_tokens": sum(r.prompt_tokens for r in records),
        "completion_tokens": sum(r.completion_tokens for r in records),
        "cost_usd": sum(r.cost_usd for r in records),
        "attempts": sum(r.attempts for r in records),
        "error": f"{last.error_kind}: {last.error}" if last.status == "failed" else None,
        "call_key": last.key,
    }


def not_judged_row(job: JudgeJob, response: dict[str, Any]) -> dict[str, Any]:
    """A JUDGMENTS row for a turn without an answer to judge: its inference failed or was not run, or
    it was cut at max_tokens and the config marks such answers ('truncated')."""
    if response["status"] == "ok":
        return {**_row_key(job, response["turn"]), "parse_status": "truncated", "attempts": 0}
    return {
        **_row_key(job, response["turn"]),
        "parse_status": "not_run",
        "attempts": 0,
        "error": f"not judged: response {response['status']}",
    }


def _row_key(job: JudgeJob, turn: int) -> dict[str, Any]:
    return {
        "run_id": job.run_id,
        "model": job.model_name,
        "condition": job.condition,
        "thread_id": job.thread.thread_id,
        "turn": turn,
        "judge_model": job.judge.name,
        "rubric_version": job.rubric.version,
    }
