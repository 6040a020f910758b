"""The test server's named replies: the SNOMED roles interview to an answer after a varied number of
questions, the consultation agent takes a history of varied length then gives a differential the metrics
read, and a server started as a subprocess serves them (`--reply snomed`)."""

import hashlib
from pathlib import Path

import httpx
import pytest

from tasks.benchmarks.consult.config import AGENT_PROMPT
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.metrics import is_ready, parse_differential
from tasks.benchmarks.consult.treatment import parse_plan
from tasks.benchmarks.snomed.interview import InterviewPrompts, InterviewSettings, Reply, run_interview
from tasks.llm.prompts import load_prompt
from tests.llm_server import (
    CONSULT_ANSWER,
    CONSULT_DIFFERENTIAL,
    CONSULT_JUDGE_NOTES,
    CONSULT_JUDGE_VERDICT,
    SNOMED_FINAL,
    SNOMED_PATIENT,
    consult_questions,
    consult_reply,
    snomed_questions,
    snomed_reply,
)
from tests.perf.calls import served
from tests.snomed_fixtures import CASES

CLINICIAN_PROMPT = load_prompt(Path("tasks/benchmarks/snomed/prompts/clinician_v1.txt"))
CONSULT_PROMPT = load_prompt(AGENT_PROMPT)


def prompts(patient_system: str) -> InterviewPrompts:
    return InterviewPrompts(
        clinician_system=CLINICIAN_PROMPT.render("system"),
        opening=CLINICIAN_PROMPT.render("opening"),
        final=CLINICIAN_PROMPT.render("final"),
        reask=CLINICIAN_PROMPT.render("reask"),
        patient_system=patient_system,
    )


def interview(clinician: str, patient_system: str, max_turns: int = 20):
    def ask(role, messages):
        return Reply(snomed_reply(clinician if role == "clinician" else SNOMED_PATIENT, messages), "key")

    return run_interview(CASES[0], prompts(patient_system), ask, InterviewSettings(max_turns=max_turns))


def case_tag(patient_system: str) -> str:
    return hashlib.sha256(patient_system.encode()).hexdigest()[:8]


def test_the_snomed_clinician_asks_as_many_questions_as_its_hash_of_the_case_says_then_answers():
    records = [f"Record {i}" for i in range(6)]
    outcomes = {
        (clinician, record): interview(clinician, record) for clinician in ("c1", "c2") for record in records
    }
    expected = {key: snomed_questions(key[0], case_tag(key[1])) for key in outcomes}
    asked = {key: (result.status, result.questions_asked) for key, result in outcomes.items()}
    assert asked == {key: ("answered", questions) for key, questions in expected.items()}
    assert {result.final_reply for result in outcomes.values()} == {SNOMED_FINAL}
    assert all(5 <= questions <= 20 for questions in expected.values())
    assert len(set(expected.values())) > 3  # varied, not one length for all


def test_the_snomed_clinician_answers_when_asked_for_its_final_answer_before_it_is_done():
    record = next(f"Record {i}" for i in range(100) if snomed_questions("c1", case_tag(f"Record {i}")) > 2)
    result = interview("c1", record, max_turns=2)
    assert (result.status, result.questions_asked, result.final_reply) == ("answered", 2, SNOMED_FINAL)


def test_two_snomed_clinicians_ask_differently_so_the_patient_gets_different_requests():
    opening = [{"role": "system", "content": "Clinician"}, {"role": "user", "content": "Hello, doctor."}]
    assert snomed_reply("c1", opening) != snomed_reply("c2", opening)


def consult_history(agent: str, opening: str) -> list[str]:
    """The agent's replies in the history stage, each question answered by a fixed patient line."""
    messages = [
        {"role": "system", "content": CONSULT_PROMPT.render("system")},
        {"role": "user", "content": opening},
    ]
    replies: list[str] = []
    while not replies or not is_ready(replies[-1]):
        replies.append(consult_reply(agent, messages))
        messages += [
            {"role": "assistant", "content": replies[-1]},
            {"role": "user", "content": "Not really."},
        ]
    return replies


def test_the_consult_agent_asks_as_many_questions_as_its_hash_of_the_opening_says_then_is_ready():
    openings = [f"Doctor, I have had a headache for {i} days." for i in range(8)]
    histories = {
        (agent, opening): consult_history(agent, opening) for agent in ("a1", "a2") for opening in openings
    }
    expected = {key: consult_questions(*key) for key in histories}
    assert {key: len(replies) - 1 for key, replies in histories.items()} == expected
    assert {replies[-1] for replies in histories.values()} == {"<Ready to diagnose>"}
    assert all(3 <= questions <= 12 for questions in expected.values())
    assert len(set(expected.values())) > 3  # varied, not one length for all


def test_two_consult_agents_word_their_questions_differently():
    opening = "Doctor, I have had a headache for 3 days."
    first, second = consult_history("a1", opening)[0], consult_history("a2", opening)[0]
    assert (first, second) == ("When did it start? (a1, question 1)", "When did it start? (a2, question 1)")


@pytest.mark.parametrize("ask", ["diagnosis", "reask"])
def test_the_consult_agent_gives_a_differential_the_metrics_read_when_asked_for_one(ask):
    messages = [
        {"role": "system", "content": CONSULT_PROMPT.render("system")},
        {"role": "user", "content": "Doctor, my face hurts."},
        {"role": "assistant", "content": "<Ready to diagnose>"},
        {"role": "user", "content": CONSULT_PROMPT.render(ask)},
    ]
    reply = consult_reply("a1", messages)
    assert reply == CONSULT_DIFFERENTIAL
    assert [item.diagnosis for item in parse_differential(reply, load_kb())] == ["Acute sinusitis"]


def test_the_consult_agent_plans_then_revises_for_an_allergy_and_answers_questions_with_advice():
    messages = [
        {"role": "system", "content": CONSULT_PROMPT.render("system")},
        {"role": "user", "content": "Doctor, my face hurts."},
        {"role": "assistant", "content": CONSULT_DIFFERENTIAL},
        {"role": "user", "content": CONSULT_PROMPT.render("treatment")},
    ]
    plan = consult_reply("a1", messages)
    messages.append({"role": "assistant", "content": plan})
    allergy = consult_reply("a1", [*messages, {"role": "user", "content": "I'm allergic to NSAIDs."}])
    question = consult_reply("a1", [*messages, {"role": "user", "content": "How should I take it?"}])
    assert parse_plan(plan, load_kb()).generics == ("ibuprofen",)
    assert parse_plan(allergy, load_kb()).generics == ("paracetamol",)
    assert question == CONSULT_ANSWER


def test_the_consult_judge_gives_a_verdict_for_a_new_fact_and_needs_a_reask_for_a_question():
    def judged(follow_up, *earlier):
        rubric = {"role": "user", "content": f"<follow_up>\n{follow_up}\n</follow_up>"}
        return consult_reply("judge", [{"role": "system", "content": "Judge."}, rubric, *earlier])

    assert judged("I'm allergic to penicillins.") == f"Verdict: {CONSULT_JUDGE_VERDICT}"
    assert judged("How should I take it?") == CONSULT_JUDGE_NOTES
    reask = ({"role": "assistant", "content": CONSULT_JUDGE_NOTES}, {"role": "user", "content": "Again."})
    assert judged("How should I take it?", *reask) == CONSULT_JUDGE_VERDICT


@pytest.mark.slow
def test_a_server_started_as_a_subprocess_serves_the_named_reply():
    messages = [{"role": "system", "content": "Record 0"}, {"role": "user", "content": "Any cough?"}]
    with served(0.0, reply="snomed") as url:
        response = httpx.post(f"{url}/chat/completions", json={"model": SNOMED_PATIENT, "messages": messages})
    assert response.json()["choices"][0]["message"]["content"] == snomed_reply(SNOMED_PATIENT, messages)
