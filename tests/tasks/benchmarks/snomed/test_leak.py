"""Leak check, table-driven on both sides: replies that name a gold condition and lay replies that do not."""

import pytest

from tasks.benchmarks.snomed.leak import LeakHit, core_name, find_leaks, leak_names, normalise_display

HYPERTENSION = ("59621000", "Essential hypertension (disorder)")


@pytest.mark.parametrize(
    ("reply", "display"),
    [
        ("I was told I have hypertension.", "Essential hypertension (disorder)"),
        ("They said I am hypertensive.", "Essential hypertension (disorder)"),
        ("The doctor wrote hypertenshun on the form.", "Hypertension"),
        ("It was essential hypertension.", "Essential hypertension (disorder)"),
        ("It was sinusitis.", "Viral sinusitis (disorder)"),
        ("I am diabetic.", "Diabetes mellitus type 2 (disorder)"),
        ("I have prediabetes.", "Prediabetes"),
        ("I sprained my ankle.", "Sprain of ankle (disorder)"),
        ("I'm pregnant.", "Normal pregnancy (finding)"),
        ("They said it's chronic pain.", "Chronic pain"),
        ("I have anaemia.", "Anemia (disorder)"),
        ("I had a concussion.", "Concussion with no loss of consciousness (disorder)"),
        ("I have kidney disease.", "Chronic kidney disease stage 1 (disorder)"),
        ("I have metabolic syndrome.", "Metabolic syndrome X (disorder)"),
        ("I had a miscarriage.", "Miscarriage in first trimester"),
        ("I had a stroke.", "Stroke"),
    ],
)
def test_reply_naming_the_condition_leaks(reply, display):
    assert [hit.code for hit in find_leaks(reply, ["1"], [display])] == ["1"]


@pytest.mark.parametrize(
    ("reply", "display"),
    [
        ("I have high blood pressure.", "Essential hypertension (disorder)"),
        ("I have a sinus infection.", "Viral sinusitis (disorder)"),  # lay wording, see leak.py
        ("My sinuses are blocked.", "Viral sinusitis (disorder)"),
        ("I was told I was borderline diabetic.", "Prediabetes"),
        ("I twisted my ankle.", "Sprain of ankle (disorder)"),
        ("My throat is sore.", "Streptococcal sore throat (disorder)"),
        ("My knee has pain.", "Chronic pain"),
        ("I feel tired all the time.", "Anemia (disorder)"),
        ("My kidneys are weak.", "Chronic kidney disease stage 1 (disorder)"),
        ("I have an ear infection.", "Otitis media"),
        ("I lost a baby early on.", "Miscarriage in first trimester"),
        ("My heart stopped once.", "Cardiac Arrest"),
        ("I'm not sure.", "Essential hypertension (disorder)"),
        ("Yellow-green stuff comes out of my nose.", "Gout"),  # a short name one letter from a word
        ("I had a fever and a cough.", "Fever (finding)"),  # a symptom is what the patient feels
        ("I had a fever and a cough.", "Cough (finding)"),
    ],
)
def test_lay_reply_does_not_leak(reply, display):
    assert find_leaks(reply, ["1"], [display]) == ()


def test_a_gold_code_in_the_reply_leaks_but_not_inside_a_longer_number():
    code, display = HYPERTENSION
    assert find_leaks("The form said 59621000.", [code], [display]) == (LeakHit(code, code, code),)
    assert find_leaks("My number is 1596210001.", [code], [display]) == ()


def test_extra_names_leak_and_hits_follow_gold_order():
    codes, displays = ["840539006", "59621000"], ["Disease caused by SARS-CoV-2 (disorder)", "Hypertension"]
    reply = "I have hypertension and I had covid."
    assert find_leaks(reply, codes, displays, {"840539006": ["COVID"]}) == (
        LeakHit("840539006", "covid", "covid"),
        LeakHit("59621000", "hypertension", "hypertens"),
    )
    assert find_leaks(reply, codes, displays) == (LeakHit("59621000", "hypertension", "hypertens"),)


@pytest.mark.parametrize(
    ("display", "normalised", "core"),
    [
        ("Viral sinusitis (disorder)", "viral sinusitis", "sinusitis"),
        ("Normal pregnancy (finding)", "normal pregnancy", "pregnancy"),
        ("Fracture of ankle", "fracture of ankle", "fracture"),
        ("Whiplash injury to neck", "whiplash injury to neck", "whiplash"),
        ("Streptococcal sore throat (disorder)", "streptococcal sore throat", "streptococcal sore throat"),
        ("Chronic pain", "chronic pain", None),
        ("Diabetes mellitus type 2 (disorder)", "diabetes mellitus type 2", "diabetes"),
    ],
)
def test_normalise_display_and_core_name(display, normalised, core):
    assert (normalise_display(display), core_name(display)) == (normalised, core)


def test_leak_names_are_unique():
    assert leak_names("Hypertension", ["hypertension", "HTN"]) == ("hypertension", "htn")
