"""Case generation: determinism, validity against the KB, the mixes, and the case set on disk."""

import json
from collections import Counter

import pytest

from tasks.benchmarks.consult.case import PatientProfile
from tasks.benchmarks.consult.cases import (
    CaseGenerationSettings,
    case_set_fingerprint,
    check_case,
    generate_cases,
    load_case_file,
    load_case_set,
    write_case_set,
)
from tasks.benchmarks.consult.cases.generate import (
    FOLLOW_UP_QUESTIONS,
    Demographics,
    allocate,
    fits_demographics,
    interacting_drug,
)
from tasks.benchmarks.consult.cases.synthea_profiles import read_synthea_demographics
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.reference_logic import constraint_from_text
from tasks.benchmarks.consult.simulator import Simulator, default_space, diagnosis_names, names_a_diagnosis
from tests.tasks.benchmarks.consult.test_simulator import CASE
from tests.tasks.data.patients.test_fhir import write_bundles

SETTINGS = CaseGenerationSettings(n=60, seed=3)


def test_the_same_settings_write_the_same_bytes_and_another_seed_differs(tmp_path):
    kb = load_kb()
    write_case_set(generate_cases(kb, SETTINGS), tmp_path / "a", SETTINGS)
    write_case_set(generate_cases(kb, SETTINGS), tmp_path / "b", SETTINGS)
    other = SETTINGS.model_copy(update={"seed": 4})
    write_case_set(generate_cases(kb, other), tmp_path / "c", other)
    assert (tmp_path / "a" / "cases.jsonl").read_bytes() == (tmp_path / "b" / "cases.jsonl").read_bytes()
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()
    assert case_set_fingerprint(tmp_path / "a") != case_set_fingerprint(tmp_path / "c")
    assert load_case_set(tmp_path / "a") == generate_cases(kb, SETTINGS)


@pytest.mark.parametrize("seed", [0, 1])  # seed 0 drew "penicillin gives me hives" for an urticaria case
def test_every_generated_case_holds_together_and_names_no_diagnosis(seed):
    kb = load_kb()
    for case in generate_cases(kb, CaseGenerationSettings(n=100, seed=seed)):
        check_case(case, kb)
        ids = {aiu.aiu_id for aiu in case.aius}
        core = [kb.condition(g.condition_id) for g in case.core_gold]
        assert set(case.mni_target) == {aiu for c in core for aiu in c.mni} <= ids
        assert all(
            aiu.value for aiu in case.aius if aiu.present and "{value}" in kb.aiu_type(aiu.aiu_id).positive
        )
        names = [name for g in case.gold for name in diagnosis_names(kb.condition(g.condition_id))]
        assert not names_a_diagnosis(case.opening, names), case.case_id
        patient = Simulator(case, kb, default_space())
        replies = [patient.answer(t.paraphrases[0]).text for t in default_space().catalogue.templates]
        assert not any(names_a_diagnosis(text, names) for text in replies), case.case_id
        assert 1 <= len(case.follow_ups) - 1 <= 2 and case.follow_ups[0].kind == "constraint"


def test_every_follow_up_kind_of_the_contract_is_generated_and_read_back_from_its_words():
    kb = load_kb()
    follow_ups = [f for case in generate_cases(kb, CaseGenerationSettings(n=200)) for f in case.follow_ups]
    constraints = [f for f in follow_ups if f.kind == "constraint"]
    assert {f.constraint.partition(":")[0] for f in constraints} == {
        "allergy", "pregnancy", "no_tablets", "cost", "takes"
    }  # fmt: skip
    assert {f.text for f in follow_ups if f.kind == "question"} == set(FOLLOW_UP_QUESTIONS)
    # A careful doctor (the reference agent) hears the constraint the patient's words state.
    assert [constraint_from_text(f.text, kb) for f in constraints] == [f.constraint for f in constraints]


def test_a_patient_on_nointeracting_drug_may_say_they_take_one_the_first_line_drug_interacts_with():
    kb = load_kb()
    adult = PatientProfile(age=40, sex="male")
    # an NSAID with an anticoagulant is a severe class pair; the first KB drug by name is apixaban (a DOAC)
    assert interacting_drug(kb, kb.drug("ibuprofen"), adult) == "apixaban"
    # two NSAIDs are a severe class pair too: diclofenac comes next
    on_apixaban = adult.model_copy(update={"medications": ("apixaban",)})
    assert interacting_drug(kb, kb.drug("ibuprofen"), on_apixaban) == "diclofenac"
    on_both = adult.model_copy(update={"medications": ("apixaban", "diclofenac")})
    assert interacting_drug(kb, kb.drug("ibuprofen"), on_both) == "lithium"
    pregnant = PatientProfile(age=30, sex="female", pregnant=True)
    assert interacting_drug(kb, kb.drug("ibuprofen"), pregnant) is None  # all are avoided in pregnancy
    assert interacting_drug(kb, kb.drug("amoxicillin"), adult) == "methotrexate"  # penicillins rule
    assert interacting_drug(kb, kb.drug("paracetamol"), adult) is None


def test_the_department_and_difficulty_mix_is_honoured_exactly():
    settings = CaseGenerationSettings(
        n=12, departments={"ent": 2, "paediatrics": 1}, difficulty={"easy": 1, "hard": 3}
    )
    cases = generate_cases(load_kb(), settings)
    assert Counter(c.department for c in cases) == {"ent": 8, "paediatrics": 4}
    assert Counter(c.difficulty for c in cases) == {"easy": 3, "hard": 9}
    assert all(len(c.core_gold) == 2 for c in cases if c.difficulty == "hard")
    assert all(c.profile.age < 12 for c in cases if c.department == "paediatrics")


def test_allocation_gives_the_remainder_to_the_largest_shares_then_the_earlier_key():
    assert allocate({"a": 1, "b": 1, "c": 1}, 4) == ["a", "a", "b", "c"]
    assert allocate({"a": 1, "b": 2}, 4) == ["a", "b", "b", "b"]


def test_a_hand_written_file_is_read_and_its_errors_name_the_file_and_case(tmp_path):
    good = tmp_path / "cases.json"
    good.write_text("[" + CASE.model_dump_json() + "]")
    assert load_case_file(good) == [CASE]
    bad = tmp_path / "bad.yaml"
    bad.write_text(CASE.model_dump_json().replace('"aiu_id":"wheeze"', '"aiu_id":"wheezing"'))
    bad.write_text("- " + bad.read_text())
    with pytest.raises(ValueError) as error:
        load_case_file(bad)
    assert str(error.value) == (
        "bad.yaml: case 'c1': aius.2.aiu_id: 'wheezing' is not an AIU type of the KB "
        "(tasks/benchmarks/consult/kb/data/aiu_types_v1.yaml), did you mean 'sneezing'?"
    )
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("- " + CASE.model_dump_json().replace('"acute_bronchitis"', '"the_vapours"'))
    with pytest.raises(ValueError) as error:
        load_case_file(unknown)
    assert str(error.value) == (
        "unknown.yaml: case 'c1': gold.0.condition_id: 'the_vapours' is not a condition of the KB "
        "(tasks/benchmarks/consult/kb/data/conditions_v1.yaml)"
    )


def test_synthea_demographics_are_read_from_bundles_at_each_patients_last_record(tmp_path):
    # The bundle's patient: a woman born 1980-06-15 whose last record is of 2020-03-01.
    assert read_synthea_demographics(write_bundles(tmp_path)) == [Demographics("p1", 39, "female")]
    (tmp_path / "Jane_Doe_p1.json").unlink()
    with pytest.raises(ValueError, match="holds no Synthea FHIR bundle with a patient's birth date and sex"):
        read_synthea_demographics(tmp_path)


def test_synthea_demographics_refuse_an_age_no_one_reaches(tmp_path):
    path = tmp_path / "Jo_p2.json"
    patient = {"resourceType": "Patient", "id": "p2", "gender": "male", "birthDate": "1997-01-01"}
    visit = {"resourceType": "Encounter", "period": {"start": "9999-01-01T09:00:00Z"}}
    path.write_text(
        json.dumps({"resourceType": "Bundle", "entry": [{"resource": patient}, {"resource": visit}]})
    )
    with pytest.raises(ValueError) as error:
        read_synthea_demographics(tmp_path)
    assert str(error.value) == (
        f"{path}: patient p2: age 8002 at the reference date 9999-01-01 (born 1997-01-01); a date of the "
        "record is wrong: fix it, or pass --reference-date to read the record at a date of your choice"
    )


def test_cases_take_a_real_patients_age_and_sex_when_one_fits():
    kb = load_kb()
    pool = [Demographics("woman", 40, "female"), Demographics("boy", 3, "male")]
    settings = CaseGenerationSettings(n=18, seed=1)
    cases = generate_cases(kb, settings, pool)
    assert cases == generate_cases(kb, settings, pool)  # seeded
    for case in cases:
        primary = kb.condition(case.gold[0].condition_id)
        fitting = [(d.age, d.sex) for d in pool if fits_demographics(primary, d.age, d.sex)]
        if fitting:
            assert (case.profile.age, case.profile.sex) in fitting, case.case_id
    taken = {(c.profile.age, c.profile.sex) for c in cases}
    assert {(40, "female"), (3, "male")} <= taken
