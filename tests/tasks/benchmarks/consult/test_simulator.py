"""The patient simulator: template matching, AIU release, response patterns and deflections."""

import pytest
from hypothesis import assume, given

from tasks.benchmarks.consult.case import CaseAiu, ConsultCase, GoldDiagnosis, PatientProfile
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.simulator import (
    NOTHING_LIKE_THAT,
    Simulator,
    SimulatorReply,
    default_space,
    diagnosis_names,
    names_a_diagnosis,
    replay,
)
from tests.tasks.benchmarks.consult.inquiry.strategies import questions, unread_words

CASE = ConsultCase(
    case_id="c1",
    department="respiratory",
    difficulty="easy",
    opening="Hello doctor. I've had a cough for 3 days.",
    profile=PatientProfile(age=40, sex="male"),
    gold=(
        GoldDiagnosis(condition_id="acute_bronchitis", icd11="CA42", title="Acute bronchitis", severity=1),
    ),
    aius=(
        CaseAiu(aiu_id="cough", template="respiratory", value="3 days"),
        CaseAiu(aiu_id="productive_sputum", template="respiratory", value="yellow"),
        CaseAiu(aiu_id="wheeze", template="respiratory", present=False, role="ruling_out"),
        CaseAiu(aiu_id="fever", template="fever_chills", present=False),
    ),
    mni_target=("cough", "productive_sputum"),
)
RESPIRATORY = "Do you have a cough or any trouble breathing?"
FEVER = "Have you had a fever or chills?"


def simulator(per_turn=None, threshold=None):
    return Simulator(CASE, load_kb(), default_space(), threshold=threshold, per_turn=per_turn)


def test_a_matched_template_reveals_all_its_aius_with_their_values_and_negatives():
    assert simulator().answer(RESPIRATORY) == SimulatorReply(
        "I've had a cough for 3 days. I'm bringing up yellow phlegm. No wheezing.",
        "respiratory",
        ("cough", "productive_sputum", "wheeze"),
        False,
    )


def test_per_turn_releases_one_aiu_a_question_and_keeps_the_revealed_set():
    patient = simulator(per_turn=1)
    assert [patient.answer(RESPIRATORY) for _ in range(4)] == [
        SimulatorReply("I've had a cough for 3 days.", "respiratory", ("cough",), False),
        SimulatorReply("I'm bringing up yellow phlegm.", "respiratory", ("productive_sputum",), False),
        SimulatorReply("No wheezing.", "respiratory", ("wheeze",), False),
        # Nothing left to tell, but the patient has a cough: "No" would deny what it said.
        SimulatorReply("I'm not sure.", "respiratory", (), True),
    ]
    assert patient.revealed == {"cough", "productive_sputum", "wheeze"}


def test_a_template_asked_again_is_nothing_like_that_only_when_the_case_has_nothing_present_under_it():
    patient = simulator()
    assert [patient.answer(question) for question in (FEVER, FEVER, RESPIRATORY, RESPIRATORY)] == [
        SimulatorReply("No, no fever.", "fever_chills", ("fever",), False),
        SimulatorReply("No, nothing like that.", "fever_chills", (), True),
        SimulatorReply(
            "I've had a cough for 3 days. I'm bringing up yellow phlegm. No wheezing.",
            "respiratory",
            ("cough", "productive_sputum", "wheeze"),
            False,
        ),
        SimulatorReply("I'm not sure.", "respiratory", (), True),
    ]


def test_a_ruled_out_aiu_is_answered_with_its_negative_pattern():
    assert simulator().answer(FEVER) == SimulatorReply("No, no fever.", "fever_chills", ("fever",), False)


def test_a_question_matching_no_template_is_not_sure():
    assert simulator().answer("What is the capital of France?") == SimulatorReply(
        "I'm not sure.", None, (), True
    )


def test_a_template_the_case_has_nothing_for_is_nothing_like_that():
    assert simulator().answer("Do you have any allergies?") == SimulatorReply(
        "No, nothing like that.", "allergies", (), True
    )


def test_a_template_matched_on_a_question_read_only_in_part_is_not_sure_never_a_no():
    # "cuogh" is outside the vocabulary: the duration template matched on "long" alone, and a "No"
    # would deny a cough the patient has.
    assert simulator().answer("Any cuogh how long?") == SimulatorReply(
        "I'm not sure.", "onset_duration", (), True
    )


def test_a_higher_threshold_turns_a_weak_match_into_not_sure():
    assert simulator(threshold=0.99).answer(RESPIRATORY) == SimulatorReply("I'm not sure.", None, (), True)


def test_a_threshold_under_the_spaces_own_is_refused():
    with pytest.raises(ValueError, match="under the template space's own"):
        simulator(threshold=0.1)


def test_the_opening_is_the_cases():
    assert simulator().opening() == "Hello doctor. I've had a cough for 3 days."


def test_replay_equals_answering_step_by_step():
    questions = [RESPIRATORY, "Hello there.", RESPIRATORY, FEVER, RESPIRATORY]
    patient = simulator(per_turn=2)
    assert replay(CASE, questions, per_turn=2) == [patient.answer(q) for q in questions]


def test_no_lay_reply_of_the_knowledge_base_names_a_condition():
    """Whatever a case holds, the simulator's sentences never name a diagnosis (title or synonym)."""
    kb = load_kb()
    names = [name for condition in kb.conditions for name in diagnosis_names(condition)]
    naming = [
        (aiu.id, text)
        for aiu in kb.aiu_types
        for text in (aiu.positive.replace("{value}", ""), aiu.negative)
        if names_a_diagnosis(text, names)
    ]
    assert naming == []


@given(question=questions, word=unread_words)
def test_the_patient_never_denies_what_it_did_not_read(question, word):
    assume(default_space().unread_terms(word))
    patient = simulator()
    replies = [patient.answer(f"{question} {word}") for _ in range(2)]  # the second finds nothing left
    assert NOTHING_LIKE_THAT not in [reply.text for reply in replies]
