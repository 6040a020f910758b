"""The test server's deterministic reply texts: a judge's score, the SNOMED patient, oracle and doctor,
and the consultation agent, patient and FQR judge, each named in REPLIES so a server started as a
subprocess (`--reply`) can pick one.
"""

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

JUDGE_REPLY = '{"SCORE": 1.0, "REASON": "Matches the physician."}'
SNOMED_PATIENT = "patient"
# The trained patient oracle as the SNOMED README serves it (`--model_alias snomed-oracle`).
SNOMED_ORACLE = "snomed-oracle"
SNOMED_FINAL = '<Final Answer>: ["59621000", "44054006"]'
_CASE_TAG = re.compile(r"\[case ([0-9a-f]{8})\]")
CONSULT_QUESTIONS = (
    "When did it start?",
    "Have you had a fever?",
    "Where exactly is the pain, and does it spread anywhere?",
    "Is it there all the time, or does it come and go?",
    "Does anything make it better or worse?",
    "Have you had a cough or a runny nose?",
    "Do you take any medicines regularly?",
    "Have you had anything like this before?",
    "Are you allergic to anything?",
    "Does anyone in your family have a similar problem?",
    "Do you smoke or drink alcohol?",
    "Have you noticed any change in your weight or appetite?",
)
CONSULT_DIFFERENTIAL = json.dumps(
    [{"diagnosis": "Acute sinusitis", "icd11": None, "core": True, "rationale": "facial pain after a cold"}]
)
CONSULT_PLAN = json.dumps(
    [{"drug": "ibuprofen", "dose": 400, "unit": "mg", "frequency_per_day": 3, "days": 5, "route": "oral"}]
)
CONSULT_REVISED_PLAN = json.dumps(
    [{"drug": "paracetamol", "dose": 1000, "unit": "mg", "frequency_per_day": 4, "days": 5, "route": "oral"}]
)
CONSULT_ANSWER = "Take it with food, and see a doctor if it gets worse or is no better in a week."
# The FQR judge's first reply to a question's answer holds no verdict; asked again, it gives one.
CONSULT_JUDGE_NOTES = "The answer covers dosing and a safety net."
CONSULT_JUDGE_VERDICT = '{"correct": true, "reason": "Addresses the follow-up."}'


def default_reply(model: str, messages: list[dict[str, Any]]) -> str:
    """A deterministic answer: judges (system prompt present) get a valid score, others a tagged text."""
    if messages and messages[0]["role"] == "system":
        return JUDGE_REPLY
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:8]
    return f"{model} answer {digest}: rest, fluids, and see a doctor if it gets worse."


def snomed_questions(model: str, case_tag: str) -> int:
    """How many questions the clinician `model` asks the patient whose answers carry `case_tag`: 5 to 20."""
    return 5 + int(hashlib.sha256(f"{model}/{case_tag}".encode()).hexdigest(), 16) % 16


def snomed_reply(model: str, messages: list[dict[str, Any]]) -> str:
    """Both roles of a SNOMED interview, by model name, with replies of realistic length.

    `patient` (or `snomed-oracle`) answers every question, tagging its answer with its case (a digest of its
    system prompt, which holds the record). Any other model is a clinician: it asks `snomed_questions`
    questions, then gives its final answer, at once when a user turn is not a patient's answer (the forced
    final prompt).
    """
    if model in (SNOMED_PATIENT, SNOMED_ORACLE):
        case_tag = hashlib.sha256(str(messages[0]["content"]).encode()).hexdigest()[:8]
        answered = sum(m["role"] == "assistant" for m in messages)
        return (
            f"[case {case_tag}] Answer {answered + 1}: it started a few weeks ago, comes and goes, is worse "
            "at night and after climbing the stairs, and resting for a while makes it a little better."
        )
    asked = sum(m["role"] == "assistant" for m in messages)
    tags = [_CASE_TAG.search(str(m["content"])) for m in messages if m["role"] == "user"]
    if asked and tags[-1] is None:
        return SNOMED_FINAL
    case_tag = next((tag.group(1) for tag in tags if tag), None)
    if case_tag is None or asked < snomed_questions(model, case_tag):
        # Each clinician words its questions its own way, or two interviews of a case would send the patient
        # the same requests, and the ledger would answer the second without a call.
        return f"{model}, question {asked + 1}: when did it start, how often does it come, what eases it?"
    return SNOMED_FINAL


def consult_questions(model: str, opening: str) -> int:
    """How many questions the agent `model` asks the patient who opened with `opening`: 3 to 12."""
    return 3 + int(hashlib.sha256(f"{model}/{opening}".encode()).hexdigest(), 16) % 10


def consult_reply(model: str, messages: list[dict[str, Any]]) -> str:
    """Both called roles of a consultation episode (the simulated patient is local to the solver).

    The FQR judge (its request holds the rubric's `<follow_up>` block): a verdict in prose around JSON for
    a new fact, and for a question first notes with no verdict, then the verdict when asked again. The
    agent: it asks `consult_questions` history questions, says `<Ready to diagnose>`, gives its ranked
    differential as JSON, then its plan (ibuprofen), and after that answers each follow-up: a new allergy
    with a revised plan (paracetamol), anything else with advice."""
    last = str(messages[-1]["content"])
    rubric = str(messages[1]["content"]) if len(messages) > 1 else ""
    if "<follow_up>" in rubric:
        if len(messages) > 2:  # asked again
            return CONSULT_JUDGE_VERDICT
        return f"Verdict: {CONSULT_JUDGE_VERDICT}" if "allergic" in rubric else CONSULT_JUDGE_NOTES
    if "ranked differential" in last:
        return CONSULT_DIFFERENTIAL
    if "treatment plan" in last:
        return f"{CONSULT_PLAN}\nRest, fluids, and see a doctor if it gets worse."
    if any("treatment plan" in str(m["content"]) for m in messages if m["role"] == "user"):
        if "allergic" in last:
            return f"Then avoid it: take this instead.\n{CONSULT_REVISED_PLAN}"
        return CONSULT_ANSWER
    asked = sum(m["role"] == "assistant" for m in messages)
    opening = str(messages[1]["content"]) if len(messages) > 1 else ""
    if asked >= consult_questions(model, opening):
        return "<Ready to diagnose>"
    # Each agent words its questions its own way, as real agents do, so two agents' requests differ.
    return f"{CONSULT_QUESTIONS[asked % len(CONSULT_QUESTIONS)]} ({model}, question {asked + 1})"


REPLIES: dict[str, Callable[[str, list[dict[str, Any]]], str]] = {
    "default": default_reply,
    "snomed": snomed_reply,
    "consult": consult_reply,
}
