"""The offline patient: given a record and a question, expect the whole reply; its lexicon never leaks."""

from datetime import date

import pytest
from pydantic import ValidationError

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordItem, RecordObservation
from tasks.benchmarks.snomed.leak import find_leaks
from tasks.benchmarks.snomed.patient import (
    MORE_TO_TELL,
    NOT_SURE,
    answer_question,
    keyword_score,
    leak_names_by_code,
    load_lexicon,
    parse_lexicon,
)

# The 40 most common condition codes of synthea_conditions.tsv (prevalence column), most common first.
_MOST_COMMON = (
    "444814009 10509002 195662009 15777000 271737000 59621000 19169002 40055000 72892002 65363002 "
    "43878008 55822004 44465007 239873007 302870006 44054006 840544004 237602007 75498004 68496003 "
    "840539006 53741008 62106007 39848009 128613002 36971009 428251008 703151001 74400008 283385000 "
    "410429000 64859006 301011002 429007001 49436004 91302008 16114001 230690007 263102004 446654005"
)
MOST_COMMON_CODES = _MOST_COMMON.split()
LEXICON = load_lexicon()


def make_case(conditions=(), observations=(), **fields) -> Case:
    gold = {c.code: c.display for c in sorted(conditions, key=lambda c: c.code)}
    defaults = dict(
        case_id="c1", source="synthea_csv", patient_id="p1", reference_date=date(2024, 1, 1), age_years=52,
        sex="female", conditions=tuple(conditions), observations=tuple(observations),
        gold_codes=tuple(gold), gold_displays=tuple(gold.values()),
    )  # fmt: skip
    return Case(**{**defaults, **fields})


SINUSITIS_2020 = RecordCondition(
    code="444814009", display="Viral sinusitis (disorder)", onset=date(2020, 1, 1), stop=date(2020, 1, 20)
)
HYPERTENSION = RecordCondition(
    code="59621000", display="Essential hypertension (disorder)", onset=date(2015, 1, 1)
)
OBSERVATIONS = (
    RecordObservation(code="8480-6", display="Systolic Blood Pressure", value="128.0", unit="mm[Hg]"),
    RecordObservation(code="8462-4", display="Diastolic Blood Pressure", value="81.04", unit="mm[Hg]"),
    RecordObservation(code="72166-2", display="Tobacco smoking status", value="Former smoker (finding)"),
    RecordObservation(code="8310-5", display="Body temperature", value="37.2", unit="Cel"),
    RecordObservation(code="2345-7", display="Glucose", value="104.6", unit="mg/dL"),
)
CASE = make_case(
    [SINUSITIS_2020, HYPERTENSION],
    OBSERVATIONS,
    medications=(RecordItem(code="314076", display="lisinopril 10 MG Oral Tablet"),),
    allergies=(),
)


@pytest.mark.parametrize(
    ("question", "disclosure", "expected"),
    [
        ("Any nose congestion?", "symptoms",
         "My nose has been blocked and my face feels full and sore, but that has cleared up now."),
        ("Any nose congestion?", "history",
         "My nose has been blocked and my face feels full and sore; "
         "I was told it was viral sinusitis, and it has cleared up now."),
        ("What was your last blood pressure?", "symptoms",
         "They keep telling me my pressure readings are on the high side. "
         "My last blood pressure reading was 128 over 81."),
        ("Do you smoke?", "symptoms", "I used to smoke but I have stopped."),
        ("Have you checked your temperature?", "symptoms", "My temperature was 37.2 °C."),
        ("Has your blood sugar been measured?", "symptoms", "My last sugar reading was 104.6."),
        ("What medications are you taking?", "symptoms", "I take lisinopril 10 mg oral tablet."),
        ("Any allergies?", "symptoms", "I have no allergies that I know of."),
        ("How old are you?", "symptoms", "I'm 52."),
        ("What conditions have you been diagnosed with?", "symptoms", NOT_SURE),
        ("What conditions have you been diagnosed with?", "history",
         "I was told I have viral sinusitis and essential hypertension."),
        ("Do you have a cough?", "symptoms", NOT_SURE),  # in the lexicon, not in the record
        ("How much do you weigh?", "symptoms", NOT_SURE),  # no weight in the record
        ("Tell me more.", "symptoms", NOT_SURE),
    ],
)  # fmt: skip
def test_answer_question(question, disclosure, expected):
    assert answer_question(CASE, question, disclosure=disclosure) == expected


def test_repeated_episodes_are_answered_once_and_active_wins():
    active_again = SINUSITIS_2020.model_copy(update={"onset": date(2023, 12, 1), "stop": None})
    case = make_case([SINUSITIS_2020, active_again])
    assert answer_question(case, "Is your nose stuffy?") == LEXICON.conditions["444814009"].symptoms


def test_at_most_two_sentences_best_score_first_then_that_there_is_more():
    sinus_codes = ("444814009", "40055000", "75498004", "36971009")
    case = make_case([RecordCondition(code=c, display=LEXICON.conditions[c].display) for c in sinus_codes])
    assert answer_question(case, "Any nasal congestion or face pain with discharge?") == " ".join(
        [LEXICON.conditions["75498004"].symptoms, LEXICON.conditions["444814009"].symptoms, MORE_TO_TELL]
    )


def test_a_third_finding_asked_about_is_never_left_out_as_if_absent():
    codes = ("10509002", "195662009", "65363002")  # bronchitis, pharyngitis, otitis media
    case = make_case([RecordCondition(code=c, display=LEXICON.conditions[c].display) for c in codes])
    assert answer_question(case, "Any cough, sore throat or earache?") == " ".join(
        [LEXICON.conditions["65363002"].symptoms, LEXICON.conditions["195662009"].symptoms, MORE_TO_TELL]
    )


MEDICINES_AND_ALLERGIES = ("Do you take any medications?", "Do you have any allergies?")


def test_a_record_without_medicine_or_allergy_sections_is_not_sure_and_one_recording_none_denies():
    unrecorded = make_case(medications=None, allergies=None)
    recorded_none = make_case(medications=(), allergies=())
    assert [answer_question(c, q) for c in (unrecorded, recorded_none) for q in MEDICINES_AND_ALLERGIES] == [
        NOT_SURE,
        NOT_SURE,
        "I don't take any regular medicines.",
        "I have no allergies that I know of.",
    ]


def test_every_medicine_and_allergy_is_named_however_many():
    medicines = ("amlodipine 5 MG", "metformin 500 MG", "simvastatin 20 MG", "warfarin 5 MG")
    allergies = ("Peanut (substance)", "Shellfish (substance)", "Grass pollen (substance)", "Penicillin V")
    case = make_case(
        medications=tuple(RecordItem(code=str(n), display=d) for n, d in enumerate(medicines)),
        allergies=tuple(RecordItem(code=str(n), display=d) for n, d in enumerate(allergies)),
    )
    assert [answer_question(case, q) for q in MEDICINES_AND_ALLERGIES] == [
        "I take amlodipine 5 mg, metformin 500 mg, simvastatin 20 mg and warfarin 5 mg.",
        "I'm allergic to peanut, shellfish, grass pollen and penicillin v.",
    ]


def test_history_names_three_diagnoses_and_counts_the_others():
    codes = ("59621000", "10509002", "195662009", "444814009", "44054006")
    case = make_case([RecordCondition(code=c, display=LEXICON.conditions[c].display) for c in codes])
    assert answer_question(case, "Have you been diagnosed with any conditions?", disclosure="history") == (
        "I was told I have essential hypertension, acute bronchitis, acute viral pharyngitis and 2 other "
        "conditions."
    )


@pytest.mark.parametrize(
    ("keywords", "question", "expected"),
    [
        (("cough",), "Have you been coughing?", 5),
        (("ear",), "Did it start earlier?", 0),
        (("ear",), "Do your ears hurt?", 3),
        (("blood pressure", "pressure"), "Is your blood pressure high?", 22),
        (("face pain",), "Does your face hurt?", 0),
    ],
)
def test_keyword_score(keywords, question, expected):
    assert keyword_score(keywords, question) == expected


def test_lexicon_covers_the_most_common_conditions():
    assert [code for code in MOST_COMMON_CODES if code not in LEXICON.conditions] == []


ALL_CODES = list(LEXICON.conditions)
ALL_DISPLAYS = [entry.display for entry in LEXICON.conditions.values()]


@pytest.mark.parametrize("code", ALL_CODES)
def test_symptom_replies_never_leak_any_lexicon_condition(code):
    entry = LEXICON.conditions[code]
    active = RecordCondition(code=code, display=entry.display)
    cleared = active.model_copy(update={"onset": date(2020, 1, 1), "stop": date(2020, 2, 1)})
    for condition in (active, cleared):
        case = make_case([condition])
        for keyword in entry.keywords:
            reply = answer_question(case, f"Tell me about any {keyword}?")
            assert reply != NOT_SURE, keyword
            assert find_leaks(reply, ALL_CODES, ALL_DISPLAYS, leak_names_by_code(LEXICON)) == (), reply


def test_history_replies_name_the_condition():
    case = make_case([HYPERTENSION])
    reply = answer_question(case, "Any problem with your blood pressure?", disclosure="history")
    assert [hit.code for hit in find_leaks(reply, case.gold_codes, case.gold_displays)] == ["59621000"]


LEXICON_YAML = """
version: 9
conditions:
  "{code}":
    display: Something
    keywords: [word]
    symptoms: {sentence}
  "2":
    display: Other
    keywords: [word]
    symptoms: I feel odd.
observations: {{}}
"""


@pytest.mark.parametrize(
    ("code", "sentence", "error"),
    [
        ("1", "I feel fine.", None),
        ("1", "I feel odd.", "symptom sentences must be unique"),
        ("x1", "I feel fine.", "condition codes must be SNOMED ids"),
        ("1", "I feel fine. Really.", "must be one sentence"),
        ("1", "I feel fine", "must be one sentence"),
    ],
)
def test_parse_lexicon_validates(code, sentence, error):
    text = LEXICON_YAML.format(code=code, sentence=sentence)
    if error is None:
        assert parse_lexicon(text).version == 9
    else:
        with pytest.raises(ValidationError, match=error):
            parse_lexicon(text)
