"""LLM judging: grade each answered turn against the physician answer with a versioned rubric prompt.

The judge's reply is parsed tolerantly in form (code fences, text around the JSON, "1" for 1.0) and
strictly in substance: a score off the rubric's scale or contradicted elsewhere in the reply is no score.
A reply with no valid score is asked again, up to `max_reasks` times, as a follow-up showing the judge
its own reply. After that the turn is 'unparseable': score null, excluded from every metric, never 0.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import BaseModel

# Imported for its side effect: the offline models are registered wherever this module's jobs run
# (a Dask worker imports this module when it unpickles them).
from tasks.benchmarks.threadmed import baselines  # noqa: F401
from tasks.benchmarks.threadmed.cases import ThreadCase
from tasks.evals.config import Condition, JudgeSpec
from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.prompts import PromptTemplate
from tasks.llm.request import CallOptions

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


@dataclass(frozen=True)
class Verdict:
    score: float
    reason: str | None


# A score claim found in a reply: the grade (None when it is off the rubric's scale or not a number) and
# the reason given beside it.
Claim = tuple[float | None, str | None]


def parse_verdict(text: str | None) -> Verdict | None:
    """The reply's grade when every score it states is the same grade of the rubric's scale, else None.

    A score is read from the rubric's JSON field (any JSON object in the reply, at any depth, or a
    truncated object whose `"SCORE": x` pair is whole), from a line that is only `SCORE: x`, or from a
    reply that is only a grade. Anything else stating a score (`Score: 1/10`, `score = 1 out of 5`,
    `score: 1 is too generous`, two different grades, a duplicated key) makes the reply unparseable:
    a misread grade would be a fake score, while an unparseable one is asked again.
    """
    if not text or not text.strip():
        return None
    objects, prose = _split_json(text)
    claims = [claim for obj in objects for claim in _json_claims(obj)] + _prose_claims(prose)
    if not claims and not objects:
        claims = [(_bare_score(text), None)]
    scores = {score for score, _ in claims}
    if len(scores) != 1 or None in scores:
        return None
    reason = next((reason for _, reason in reversed(claims) if reason is not None), None)
    return Verdict(scores.pop(), reason)  # type: ignore[arg-type]


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its key-value pairs, so that a duplicated key is seen rather than overwritten."""


def _split_json(text: str) -> tuple[list[_Pairs], str]:
    """The JSON objects in `text` (outermost only), and the text around them."""
    decoder = json.JSONDecoder(object_pairs_hook=_Pairs)
    objects, prose, position = [], [], 0
    for brace in re.finditer(r"\{", text):
        if brace.start() < position:
            continue
        try:
            value, end = decoder.raw_decode(text, brace.start())
        except json.JSONDecodeError:
            continue
        objects.append(value)
        prose.append(text[position : brace.start()])
        position = end
    prose.append(text[position:])
    return objects, "\n".join(prose)


def _json_claims(value: Any) -> list[Claim]:
    """Every `score` field in a decoded JSON value, with the `reason` of the same object."""
    if isinstance(value, list) and not isinstance(value, _Pairs):
        return [claim for item in value for claim in _json_claims(item)]
    if not isinstance(value, _Pairs):
        return []
    fields = [(str(key).strip().lower(), field) for key, field in value]
    reason = next((str(field) for key, field in fields if key == "reason" and field is not None), None)
    claims: list[Claim] = [(_valid_score(field), reason) for key, field in fields if key == "score"]
    return claims + [claim for _, field in fields for claim in _json_claims(field)]


_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
# The rubric's field in JSON that did not decode (cut off, or an echoed template): whole only when a
# comma or brace ends its value, so `{"SCORE": 0.` (maybe 0.5) is not read as 0.
_QUOTED_FIELD = re.compile(r"[\"']score[\"']\s*:", flags=re.IGNORECASE)
_QUOTED_VALUE = re.compile(rf"\s*([\"']?)({_NUMBER})\1\s*[,}}]")
# `SCORE: x` (or `score = x`, `**Score:** x`) outside JSON: a grade only when x is all the line holds.
_LABEL = re.compile(r"(?<![\"'])\bscore\b(?![\"'])\**\s*[:=]\**[ \t]*([^\n]*)", flags=re.IGNORECASE)
_LABEL_VALUE = re.compile(rf"\**({_NUMBER})\.?\**\s*")
_REASON_FIELD = re.compile(r"\breason\b[\"']?\s*[:=]\s*[\"']?([^\"'\n]+)", flags=re.IGNORECASE)


def _prose_claims(prose: str) -> list[Claim]:
    """Score claims outside the decoded JSON objects; a claim that is not a whole grade counts as None."""
    found = [_QUOTED_VALUE.match(prose, field.end()) for field in _QUOTED_FIELD.finditer(prose)]
    scores = [_valid_score(value.group(2)) if value else None for value in found]
    for label in _LABEL.finditer(prose):
        value = _LABEL_VALUE.fullmatch(label.group(1))
        scores.append(_valid_score(value.group(1)) if value else None)
    reason = _REASON_FIELD.search(prose)
    return [(score, reason.group(1).strip() if reason else None) for score in scores]


def _bare_score(text: str) -> float | None:
    """The grade of a reply that is nothing but a grade (`1`, `0.5.`, a fenced `0`), else None."""
    bare = text.strip().removeprefix("```").removesuffix("```").strip().removesuffix(".")
    return _valid_score(bare) if re.fullmatch(_NUMBER, bare) else None


def _valid_score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return next((s for s in VALID_SCORES if abs(number - s) < 1e-9), None)


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

    @property
    def label(self) -> str:
        return f"{self.model_name}/{self.condition}/{self.thread.thread_id}"


@task(name="judge-thread", cache_policy=NO_CACHE, task_run_name="judge {job.label}")
def judge_thread(job: JudgeJob, solved: list[dict[str, Any]], ledger_dir: Path) -> list[dict[str, Any]]:
    """Judge each answered turn of `solved` (response rows) → a judgment row each; calls go to the ledger."""
    ledger = CallLedger(ledger_dir)
    return [
        judge_turn(job, row["turn"], row["response"], ledger)
        if row["status"] == "ok"
        else not_judged_row(job, row)
        for row in solved
    ]


def judge_turn(job: JudgeJob, turn: int, model_answer: str, ledger: CallLedger) -> dict[str, Any]:
    """Ask the judge about one turn, re-asking while its reply has no valid score."""
    messages = render_judge_messages(
        job.rubric, job.thread.questions[turn], job.thread.answers[turn], model_answer
    )
    records: list[CallRecord] = []
    verdict = None
    for _ in range(job.judge.max_reasks + 1):
        record = complete(job.judge.request(messages, job.rubric.version), job.options, ledger)
        records.append(record)
        if record.status != "ok" or (verdict := parse_verdict(record.text)) is not None:
            break
        messages = [
            *messages,
            {"role": "assistant", "content": record.text or ""},
            {"role": "user", "content": job.reask.render("user")},
        ]
    return judgment_row(job, turn, records, verdict)


def judgment_row(
    job: JudgeJob, turn: int, records: list[CallRecord], verdict: Verdict | None
) -> dict[str, Any]:
    """A JUDGMENTS row; tokens, cost and attempts add up every request made for this turn."""
    last = records[-1]
    status = "ok" if verdict is not None else "failed" if last.status == "failed" else "unparseable"
    return {
        **_row_key(job, turn),
        "score": verdict.score if verdict else None,
        "reason": verdict.reason if verdict else None,
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
    """A JUDGMENTS row for a turn without an answer to judge (its inference failed or was not run)."""
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
