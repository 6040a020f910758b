"""The test server's named replies: the SNOMED roles interview to an answer after a varied number of
questions, and a server started as a subprocess serves them (`--reply snomed`)."""

import hashlib
from pathlib import Path

import httpx
import pytest

from tasks.benchmarks.snomed.interview import InterviewPrompts, InterviewSettings, Reply, run_interview
from tasks.llm.prompts import load_prompt
from tests.llm_server import SNOMED_FINAL, SNOMED_PATIENT, snomed_questions, snomed_reply
from tests.perf.calls import served
from tests.snomed_fixtures import CASES

CLINICIAN_PROMPT = load_prompt(Path("tasks/benchmarks/snomed/prompts/clinician_v1.txt"))


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


@pytest.mark.slow
def test_a_server_started_as_a_subprocess_serves_the_named_reply():
    messages = [{"role": "system", "content": "Record 0"}, {"role": "user", "content": "Any cough?"}]
    with served(0.0, reply="snomed") as url:
        response = httpx.post(f"{url}/chat/completions", json={"model": SNOMED_PATIENT, "messages": messages})
    assert response.json()["choices"][0]["message"]["content"] == snomed_reply(SNOMED_PATIENT, messages)
