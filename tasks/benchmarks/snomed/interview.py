"""The interview of one case: the clinician (the model under test) asks, the patient answers, to the end.

Roles keep their real chat roles: in the clinician's messages its own questions are `assistant` and the
patient's answers `user`; in the patient's messages it is the other way round. The conversation holds every
message either role is sent, the benchmark's own included (each role's system prompt, the scripted opening,
the request for the final answer and its re-asks, each addressed to one role), and what a role is sent is
always `messages_for(role, conversation so far)`: the stored conversation replays every call exactly. The
loop is pure: `ask` makes a call for a role and returns its outcome, so the same loop runs against the call
layer in a Prefect task and against canned replies in the tests.

Endings (snomed.md, "The interview"):
- `answered`: a clinician reply holds a parseable `<Final Answer>` (one that cannot be read whole, see
  codes.UnparseableAnswer, a reply cut at max_tokens included, is no answer: the interview goes on, and
  the scorer names it);
- `no_answer`: after `max_turns` questions the clinician is asked once for its final answer, then re-asked
  `max_reasks` times; a reply that still has none is an empty prediction (the model failed the task);
- `failed`: a provider failure of either role; the case is not scored and a re-run finishes it.
"""

import json
from collections.abc import Callable, Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from tasks.benchmarks.snomed.case import Case, PatientRecord
from tasks.benchmarks.snomed.codes import parse_final_answer
from tasks.benchmarks.snomed.leak import LeakMatcher, find_leaks, unread_letters
from tasks.benchmarks.snomed.patient import (
    Disclosure,
    Lexicon,
    PatientPromptForm,
    lay_conditions,
    leak_names_by_code,
    load_lexicon,
)

Role = Literal["clinician", "patient"]
# Who wrote a message: a role, or the benchmark (a role's system prompt; an instruction to the clinician).
Author = Literal["clinician", "patient", "system", "instruction"]
InterviewStatus = Literal["answered", "no_answer", "failed"]
Messages = list[dict[str, str]]

DISCLOSURE_RULES = {
    "symptoms": "Describe what you feel and what you were told in lay words, but never say the name of a "
    "diagnosis or condition, even if you know it.",
    "history": "You may name a diagnosis you have been told you have, as patients with long-standing "
    "conditions do.",
}


class InterviewSettings(BaseModel, frozen=True):
    """How an interview runs; every field is recorded with the run."""

    max_turns: int = Field(20, ge=1, description="Questions the clinician may ask before it must answer.")
    max_reasks: int = Field(1, ge=0, description="Re-asks of a final reply with no parseable answer.")
    disclosure: Disclosure = "symptoms"


class Reply(NamedTuple):
    """What `ask` returns: the reply text when the call succeeded, else its error; the call's key."""

    text: str | None
    call_key: str
    error: str | None = None
    cut: bool = False  # cut at max_tokens (finish_reason 'length'): a final answer in it is not read


class Turn(NamedTuple):
    """One message of the conversation; `leaked` names the gold codes it leaked. A role's reply is sent to
    both roles (`sent_to` None); a scripted message only to `sent_to`."""

    turn: int
    role: Author
    text: str
    call_key: str
    leaked: tuple[str, ...] = ()
    sent_to: Role | None = None


class Interview(NamedTuple):
    status: InterviewStatus
    turns: tuple[Turn, ...]
    final_reply: str | None
    predicted_codes: tuple[str, ...]
    questions_asked: int
    error: str | None = None


Ask = Callable[[Role, Messages], Reply]


class InterviewPrompts(NamedTuple):
    """The rendered texts the loop sends (from the versioned prompt files)."""

    clinician_system: str
    opening: str
    final: str
    reask: str
    patient_system: str


def record_text(
    record: PatientRecord, form: PatientPromptForm, disclosure: Disclosure, lexicon: Lexicon | None = None
) -> str:
    """The patient's record as the patient prompt shows it, never a code or a gold list. Conditions: `named`
    lists their names; `lay` gives their lay sentences instead (`patient.lay_conditions`) and, under
    `symptoms`, leaves out the other lines that name a condition (a lab named after a polyp) or hold
    letters the leak check cannot read."""
    lexicon = lexicon or load_lexicon()
    lines = [f"Age: {record.age_years if record.age_years is not None else 'unknown'}"]
    lines.append(f"Sex: {record.sex or 'unknown'}")
    if form == "named":
        lines += [f"Condition: {c.display}" + (" (resolved)" if c.stop else "") for c in record.conditions]
    else:
        lines += [f"Health: {sentence}" for sentence in lay_conditions(record, disclosure, lexicon).sentences]
    others = [f"Latest {o.display}: {o.value}{' ' + o.unit if o.unit else ''}" for o in record.observations]
    others += [f"Takes: {m.display}" for m in record.medications or ()]
    others += [f"Allergic to: {a.display}" for a in record.allergies or ()]
    if form == "lay" and disclosure == "symptoms":
        displays = {c.code: c.display for c in record.conditions}
        matcher = LeakMatcher(list(displays), list(displays.values()), leak_names_by_code(lexicon))
        # A line the leak check cannot read whole is left out too: it may name a condition unseen.
        others = [line for line in others if not matcher.hits(line) and not unread_letters(line)]
    return "\n".join(lines + others)


def offline_patient_params(record: PatientRecord, disclosure: Disclosure) -> dict[str, str]:
    """Request params for the offline patient, which answers from the structured record, not prose: the
    record only, never a case's ids or gold codes."""
    return {"record": record.patient_record().model_dump_json(), "disclosure": disclosure}


def messages_for(role: Role, conversation: Sequence[Turn]) -> Messages:
    """The messages `role` is sent after `conversation`: those it sees, its own replies as `assistant`."""

    def chat_role(turn: Turn) -> str:
        return "system" if turn.role == "system" else "assistant" if turn.role == role else "user"

    seen = (turn for turn in conversation if turn.sent_to in (None, role))
    return [{"role": chat_role(turn), "content": turn.text} for turn in seen]


def opening_turns(prompts: InterviewPrompts) -> list[Turn]:
    """The scripted start: each role's system prompt, then the patient's opening line to the clinician (the
    patient model is not shown it: its first message is the first question)."""
    return [
        Turn(0, "system", prompts.clinician_system, "", sent_to="clinician"),
        Turn(0, "system", prompts.patient_system, "", sent_to="patient"),
        Turn(0, "patient", prompts.opening, "", sent_to="clinician"),
    ]


def run_interview(
    case: Case,
    prompts: InterviewPrompts,
    ask: Ask,
    settings: InterviewSettings,
    lexicon: Lexicon | None = None,
) -> Interview:
    """Interview the patient of `case`; every call goes through `ask`, in conversation order."""
    leak_names = leak_names_by_code(lexicon or load_lexicon())
    conversation = opening_turns(prompts)
    for turn in range(1, settings.max_turns + 1):
        reply = ask("clinician", messages_for("clinician", conversation))
        if reply.text is None:
            return _failed(conversation, reply, turn - 1)
        codes = parse_final_answer(reply.text, reply.cut)
        if isinstance(codes, tuple):
            return Interview("answered", (*conversation, _turn(turn, "clinician", reply)), reply.text, codes,
                             turn - 1)  # fmt: skip
        conversation.append(_turn(turn, "clinician", reply))
        answer = ask("patient", messages_for("patient", conversation))
        if answer.text is None:
            return _failed(conversation, answer, turn)
        leaked = find_leaks(answer.text, case.gold_codes, case.gold_displays, leak_names)
        conversation.append(_turn(turn, "patient", answer, tuple(hit.code for hit in leaked)))
    return _final_answer(conversation, prompts, ask, settings)


def _final_answer(
    conversation: list[Turn], prompts: InterviewPrompts, ask: Ask, settings: InterviewSettings
) -> Interview:
    """Ask once for the final answer, then re-ask (the clinician sees its own reply) a bounded number of
    times; a clinician that never gives one made an empty prediction (`no_answer`). Each request is a
    message of the conversation, in the turn of the reply it asks for."""
    questions = settings.max_turns
    request = prompts.final
    for attempt in range(settings.max_reasks + 1):
        turn = questions + 1 + attempt
        conversation.append(Turn(turn, "instruction", request, "", sent_to="clinician"))
        reply = ask("clinician", messages_for("clinician", conversation))
        if reply.text is None:
            return _failed(conversation, reply, questions)
        conversation.append(_turn(turn, "clinician", reply))
        codes = parse_final_answer(reply.text, reply.cut)
        predicted = codes if isinstance(codes, tuple) else None
        if predicted is not None or attempt == settings.max_reasks:
            status: InterviewStatus = "answered" if predicted is not None else "no_answer"
            return Interview(status, tuple(conversation), reply.text, predicted or (), questions)
        request = prompts.reask
    raise AssertionError("unreachable: the last attempt returns")


def _turn(turn: int, role: Role, reply: Reply, leaked: tuple[str, ...] = ()) -> Turn:
    return Turn(turn, role, reply.text or "", reply.call_key, leaked)


def _failed(conversation: list[Turn], reply: Reply, questions: int) -> Interview:
    return Interview("failed", tuple(conversation), None, (), questions, reply.error)


def conversation_json(interview: Interview) -> str:
    """The turns as JSON, for the report's browser."""
    return json.dumps([t._asdict() for t in interview.turns], ensure_ascii=False)
