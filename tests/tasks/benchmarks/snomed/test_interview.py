"""The interview loop: real roles per turn, forced final answer, bounded re-ask, failures, leaks."""

import json
from datetime import date

import pytest

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordObservation
from tasks.benchmarks.snomed.interview import (
    Interview,
    InterviewPrompts,
    InterviewSettings,
    Reply,
    Turn,
    offline_patient_params,
    record_text,
    run_interview,
)
from tasks.benchmarks.snomed.patient import answer_question, offline_patient_reply

CASE = Case(
    case_id="fhir:p1",
    source="fhir",
    patient_id="p1",
    reference_date=date(2024, 1, 1),
    age_years=40,
    sex="female",
    conditions=(RecordCondition(code="59621000", display="Hypertension", onset=date(2020, 1, 1)),),
    observations=(
        RecordObservation(code="8480-6", display="Systolic Blood Pressure", value="150", unit="mm[Hg]"),
    ),
    gold_codes=("59621000",),
    gold_displays=("Hypertension",),
)
PROMPTS = InterviewPrompts("CLINICIAN", "Hello, doctor.", "FINAL NOW", "REASK", "PATIENT")


class Script:
    """Replies in order per role, and every (role, messages) asked, for whole-value asserts."""

    def __init__(self, clinician: list[str | None], patient: list[str | None]) -> None:
        self.replies = {"clinician": list(clinician), "patient": list(patient)}
        self.asked: list[tuple[str, list[dict[str, str]]]] = []

    def __call__(self, role, messages):
        self.asked.append((role, messages))
        text = self.replies[role].pop(0)
        key = f"{role}-{len(self.asked)}"
        return Reply(text, key) if text is not None else Reply(None, key, "rate_limit: gave up")


def test_messages_keep_real_roles_and_the_final_answer_ends_the_interview():
    script = Script(["Any headaches?", '<Final Answer>: ["59621000"]'], ["Sometimes, in the morning."])
    interview = run_interview(CASE, PROMPTS, script, InterviewSettings())
    assert script.asked == [
        (
            "clinician",
            [{"role": "system", "content": "CLINICIAN"}, {"role": "user", "content": "Hello, doctor."}],
        ),
        (
            "patient",
            [{"role": "system", "content": "PATIENT"}, {"role": "user", "content": "Any headaches?"}],
        ),
        (
            "clinician",
            [
                {"role": "system", "content": "CLINICIAN"},
                {"role": "user", "content": "Hello, doctor."},
                {"role": "assistant", "content": "Any headaches?"},
                {"role": "user", "content": "Sometimes, in the morning."},
            ],
        ),
    ]
    assert interview == Interview(
        status="answered",
        turns=(
            Turn(0, "system", "CLINICIAN", "", sent_to="clinician"),
            Turn(0, "system", "PATIENT", "", sent_to="patient"),
            Turn(0, "patient", "Hello, doctor.", "", sent_to="clinician"),
            Turn(1, "clinician", "Any headaches?", "clinician-1"),
            Turn(1, "patient", "Sometimes, in the morning.", "patient-2"),
            Turn(2, "clinician", '<Final Answer>: ["59621000"]', "clinician-3"),
        ),
        final_reply='<Final Answer>: ["59621000"]',
        predicted_codes=("59621000",),
        questions_asked=1,
    )


def test_at_the_turn_limit_the_final_answer_is_forced_then_re_asked_once():
    script = Script(
        ["Q1?", "Q2?", "I think it is blood pressure.", '<Final Answer>: ["59621000"]'], ["A1.", "A2."]
    )
    interview = run_interview(CASE, PROMPTS, script, InterviewSettings(max_turns=2))
    last_role, last_messages = script.asked[-1]
    assert last_role == "clinician"
    assert last_messages[-4:] == [
        {"role": "user", "content": "A2."},
        {"role": "user", "content": "FINAL NOW"},
        {"role": "assistant", "content": "I think it is blood pressure."},
        {"role": "user", "content": "REASK"},
    ]
    assert (interview.status, interview.predicted_codes, interview.questions_asked) == (
        "answered",
        ("59621000",),
        2,
    )
    # The requests are messages of the conversation too, so that it replays every call.
    assert interview.turns[-4:] == (
        Turn(3, "instruction", "FINAL NOW", "", sent_to="clinician"),
        Turn(3, "clinician", "I think it is blood pressure.", "clinician-5"),
        Turn(4, "instruction", "REASK", "", sent_to="clinician"),
        Turn(4, "clinician", '<Final Answer>: ["59621000"]', "clinician-6"),
    )


def test_no_parseable_answer_after_the_re_ask_is_an_empty_prediction():
    script = Script(["Q1?", "no idea", "still no idea"], ["A1."])
    interview = run_interview(CASE, PROMPTS, script, InterviewSettings(max_turns=1, max_reasks=1))
    assert (interview.status, interview.predicted_codes, interview.final_reply) == (
        "no_answer",
        (),
        "still no idea",
    )
    assert len(script.asked) == 4


def test_a_final_answer_that_cannot_be_read_whole_is_no_answer_and_is_asked_for_again():
    unreadable = "<Final Answer>: " + "[" * 21 + '"59621000"' + "]" * 21
    script = Script(["Q1?", unreadable, unreadable, '<Final Answer>: ["59621000"]'], ["A1.", "A2."])
    interview = run_interview(CASE, PROMPTS, script, InterviewSettings(max_turns=2, max_reasks=1))
    assert [turn.text for turn in interview.turns[3:]] == [
        "Q1?", "A1.", unreadable, "A2.", "FINAL NOW", unreadable, "REASK", '<Final Answer>: ["59621000"]'
    ]  # fmt: skip
    assert (interview.status, interview.predicted_codes) == ("answered", ("59621000",))


def test_a_question_that_mentions_the_final_answer_is_a_question():
    question = "Before my <Final Answer>, one more question: do you smoke?"
    script = Script([question, '<Final Answer>: ["59621000"]'], ["No."])
    interview = run_interview(CASE, PROMPTS, script, InterviewSettings())
    assert (interview.status, interview.predicted_codes, interview.questions_asked) == (
        "answered",
        ("59621000",),
        1,
    )


CUT_ANSWER = '<Final Answer>: ["59621000", "3'
WHOLE_ANSWER = '<Final Answer>: ["59621000", "38341003"]'


@pytest.mark.parametrize(
    ("last", "expected"),
    [(WHOLE_ANSWER, ("answered", ("59621000", "38341003"))), (CUT_ANSWER, ("no_answer", ()))],
)
def test_a_final_answer_cut_at_max_tokens_is_no_answer_and_is_asked_for_again(last, expected):
    final_replies = [Reply(CUT_ANSWER, "c2", cut=True), Reply(last, "c3", cut=last == CUT_ANSWER)]
    replies = {"clinician": [Reply("Q1?", "c1"), *final_replies], "patient": [Reply("A1.", "p1")]}
    interview = run_interview(
        CASE, PROMPTS, lambda role, _: replies[role].pop(0), InterviewSettings(max_turns=1, max_reasks=1)
    )
    asked = ["Q1?", "A1.", "FINAL NOW", CUT_ANSWER, "REASK", last]
    assert [turn.text for turn in interview.turns[3:]] == asked
    assert (interview.status, interview.predicted_codes) == expected


def test_an_empty_final_list_is_an_answer_not_a_missing_one():
    script = Script(["<Final Answer>: []"], [])
    interview = run_interview(CASE, PROMPTS, script, InterviewSettings())
    assert (interview.status, interview.predicted_codes, interview.questions_asked) == ("answered", (), 0)


def test_a_provider_failure_of_either_role_fails_the_case_unscored():
    clinician_fails = run_interview(CASE, PROMPTS, Script([None], []), InterviewSettings())
    patient_fails = run_interview(CASE, PROMPTS, Script(["Q1?"], [None]), InterviewSettings())
    assert (clinician_fails.status, clinician_fails.error) == ("failed", "rate_limit: gave up")
    assert (patient_fails.status, patient_fails.questions_asked) == ("failed", 1)
    assert patient_fails.predicted_codes == ()


def test_every_patient_reply_is_checked_for_leaks():
    script = Script(["Q1?", "Q2?", "<Final Answer>: []"], ["I was told I have hypertension.", "I feel fine."])
    interview = run_interview(CASE, PROMPTS, script, InterviewSettings())
    assert [t.leaked for t in interview.turns if t.role == "patient"] == [(), ("59621000",), ()]


def test_the_named_record_names_no_code_and_the_offline_patient_answers_from_the_record():
    text = record_text(CASE, "named", "symptoms")
    assert text == (
        "Age: 40\nSex: female\nCondition: Hypertension\nLatest Systolic Blood Pressure: 150 mm[Hg]"
    )
    assert "59621000" not in text
    params = offline_patient_params(CASE, "symptoms")
    assert params == {"record": CASE.patient_record().model_dump_json(), "disclosure": "symptoms"}
    assert json.loads(params["record"]).keys() == {
        "reference_date", "age_years", "sex", "conditions", "observations", "medications", "allergies"
    }  # fmt: skip
    reply = offline_patient_reply([{"role": "user", "content": "What was your blood pressure?"}], params)
    assert reply == answer_question(CASE, "What was your blood pressure?", disclosure="symptoms")
    assert reply == "They keep telling me my pressure readings are on the high side."


def test_the_lay_record_tells_each_condition_in_the_patients_words_and_drops_lines_naming_one():
    polyp = RecordCondition(code="68496003", display="Polyp of colon (disorder)", onset=date(2019, 5, 1))
    sprain = RecordCondition(
        code="44465007", display="Sprain of ankle", onset=date(2021, 3, 1), stop=date(2021, 4, 1)
    )
    unknown = RecordCondition(code="156073000", display="Fetus with unknown complication")
    polyp_size = RecordObservation(code="33756-8", display="Polyp size greatest dimension", value="3.0")
    # A Cyrillic o hides "polyp" from the leak check: the line is not known to name nothing.
    polyps = RecordObservation(code="x-1", display="P\u043elyp count", value="2")
    record = CASE.model_copy(
        update={
            "conditions": (*CASE.conditions, polyp, sprain, unknown),
            "observations": (*CASE.observations, polyp_size, polyps),
        }
    )
    assert record_text(record, "lay", "symptoms") == (
        "Age: 40\nSex: female\n"
        "Health: They keep telling me my pressure readings are on the high side.\n"
        "Health: They found a small growth inside my bowel during a camera test and took it out.\n"
        "Health: I twisted my ankle, it swelled up and it hurt to walk on, but that has cleared up now.\n"
        "Latest Systolic Blood Pressure: 150 mm[Hg]"
    )
    # History lets the patient name what it was told, the lexicon's unknown codes included.
    assert record_text(record, "lay", "history") == (
        "Age: 40\nSex: female\n"
        "Health: They keep telling me my pressure readings are on the high side; I was told it was "
        "hypertension.\n"
        "Health: They found a small growth inside my bowel during a camera test and took it out; I was told "
        "it was polyp of colon.\n"
        "Health: I twisted my ankle, it swelled up and it hurt to walk on; I was told it was sprain of "
        "ankle, and it has cleared up now.\n"
        "Health: I was told I have fetus with unknown complication.\n"
        "Latest Systolic Blood Pressure: 150 mm[Hg]\nLatest Polyp size greatest dimension: 3.0\n"
        "Latest P\u043elyp count: 2"
    )
