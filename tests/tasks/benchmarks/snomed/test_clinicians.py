"""The offline clinicians: given messages, expect the whole next reply; a checklist interview end to end."""

from datetime import date

import pytest

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordObservation
from tasks.benchmarks.snomed.clinicians import (
    DEFAULT_CHECKLIST_QUESTIONS,
    checklist_reply,
    codes_from_answers,
    patient_answers,
    prevalence_reply,
    prevalence_table,
)
from tasks.benchmarks.snomed.codes import parse_final_answer
from tasks.benchmarks.snomed.patient import answer_question, load_lexicon

LEXICON = load_lexicon()
SYSTEM = {"role": "system", "content": 'Ask one question per turn, then reply <Final Answer>: ["<code>"].'}
OPENING = {"role": "user", "content": "Hello doctor. Give your final answer when ready."}
SINUSITIS, BRONCHITIS, HYPERTENSION = "444814009", "10509002", "59621000"


def make_case(case_id: str, split: str, conditions: list[RecordCondition]) -> Case:
    gold = {c.code: c.display for c in sorted(conditions, key=lambda c: c.code)}
    return Case(
        case_id=case_id, source="synthea_csv", patient_id=case_id, reference_date=date(2024, 1, 1),
        age_years=40, sex="male", conditions=tuple(conditions), observations=(),
        gold_codes=tuple(gold), gold_displays=tuple(gold.values()), split=split,
    )  # fmt: skip


def condition(code: str, **fields) -> RecordCondition:
    return RecordCondition(code=code, display=LEXICON.conditions[code].display, **fields)


def test_prevalence_table_counts_cases_of_the_split_once_each():
    cases = [
        make_case("a", "train", [condition(SINUSITIS), condition(SINUSITIS), condition(HYPERTENSION)]),
        make_case("b", "train", [condition(SINUSITIS), condition(BRONCHITIS)]),
        make_case("c", "test", [condition(BRONCHITIS)]),
    ]
    assert prevalence_table(cases) == ((SINUSITIS, 2), (BRONCHITIS, 1), (HYPERTENSION, 1))
    assert prevalence_table(cases, split="test") == ((BRONCHITIS, 1),)
    assert prevalence_table(cases, split="dev") == ()


@pytest.mark.parametrize(
    ("messages", "k", "expected"),
    [
        ([SYSTEM, OPENING], 2, f'<Final Answer>: ["{SINUSITIS}", "{BRONCHITIS}"]'),
        ([SYSTEM, OPENING], 5, f'<Final Answer>: ["{SINUSITIS}", "{BRONCHITIS}", "{HYPERTENSION}"]'),
        ([SYSTEM], 0, "<Final Answer>: []"),
    ],
)
def test_prevalence_reply_answers_at_once(messages, k, expected):
    table = [[SINUSITIS, 2], [BRONCHITIS, 1], [HYPERTENSION, 1]]  # as request params deliver it
    assert prevalence_reply(messages, table, k) == expected


def test_checklist_asks_its_questions_in_order_then_answers():
    questions = ("Is your nose blocked?", "Do you cough?")
    sinus_answer = LEXICON.conditions[SINUSITIS].symptoms
    messages = [SYSTEM, OPENING]
    assert checklist_reply(messages, questions=questions) == "Is your nose blocked?"
    messages += [{"role": "assistant", "content": questions[0]}, {"role": "user", "content": sinus_answer}]
    assert checklist_reply(messages, questions=questions) == "Do you cough?"
    messages += [{"role": "assistant", "content": questions[1]}, {"role": "user", "content": "I'm not sure."}]
    assert checklist_reply(messages, questions=questions) == f'<Final Answer>: ["{SINUSITIS}"]'


def test_checklist_answers_when_asked_for_its_final_answer():
    messages = [
        SYSTEM,
        OPENING,
        {"role": "assistant", "content": DEFAULT_CHECKLIST_QUESTIONS[0]},
        {"role": "user", "content": "Turn limit reached: give your final answer now."},
    ]
    assert checklist_reply(messages) == "<Final Answer>: []"


def test_patient_answers_skip_the_opening_turn_and_non_text_content():
    messages = [SYSTEM, OPENING, {"role": "assistant", "content": "Q1"}, {"role": "user", "content": "A1"},
                {"role": "assistant", "content": "Q2"}, {"role": "user", "content": None}]  # fmt: skip
    assert patient_answers(messages) == ["A1", ""]


def test_codes_from_answers_reads_cleared_and_history_sentences():
    sinus, bronchitis = LEXICON.conditions[SINUSITIS].symptoms, LEXICON.conditions[BRONCHITIS].symptoms
    answers = [
        f"{bronchitis[:-1]}; I was told it was acute bronchitis.",
        f"{sinus[:-1]}, but that has cleared up now. {bronchitis}",
    ]
    assert codes_from_answers(answers, LEXICON) == (BRONCHITIS, SINUSITIS)


def test_no_lexicon_sentence_is_part_of_another():
    sentences = [entry.symptoms[:-1] for entry in LEXICON.conditions.values()]
    assert [(a, b) for a in sentences for b in sentences if a != b and a in b] == []


def test_checklist_interviews_the_offline_patient():
    case = make_case(
        "p",
        "test",
        [
            condition(SINUSITIS, onset=date(2019, 1, 1), stop=date(2019, 2, 1)),
            condition(HYPERTENSION),
            condition("44465007"),  # sprain of ankle
        ],
    ).model_copy(
        update={"observations": (RecordObservation(code="8480-6", display="Systolic", value="150"),)}
    )
    messages = [SYSTEM, OPENING]
    for _ in range(len(DEFAULT_CHECKLIST_QUESTIONS) + 1):
        reply = checklist_reply(messages)
        messages.append({"role": "assistant", "content": reply})
        if parse_final_answer(reply) is not None:
            break
        messages.append({"role": "user", "content": answer_question(case, reply)})
    assert len(messages) == 2 + 2 * len(DEFAULT_CHECKLIST_QUESTIONS) + 1
    assert parse_final_answer(messages[-1]["content"]) == (SINUSITIS, HYPERTENSION, "44465007")
