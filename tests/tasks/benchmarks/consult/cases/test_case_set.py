"""Case files and case sets are checked field by field against the KB and the follow-up grammar."""

import json

import pytest

from tasks.benchmarks.consult.case import FollowUp, PatientProfile
from tasks.benchmarks.consult.cases import load_case_file, load_case_set, write_case_set
from tasks.benchmarks.consult.cases.case_set import load_sample
from tasks.core.preflight import UserError
from tasks.evals.config import SampleSpec
from tests.tasks.benchmarks.consult.test_solver import FOLLOWED

GRAMMAR = "allergy:<drug or class>, pregnancy, no_tablets, cost:<drug>, takes:<drug>"
DRUGS = "of the KB (tasks/benchmarks/consult/kb/data/drugs_v1.yaml)"
DRUG = f"a drug (generic name, brand, salt, spelling or combination product) {DRUGS}"
ALLERGY = DRUG.replace(" of the KB", ", a drug class or a term for one of the KB")
# Every field the KB or the grammar does not allow, in one case.
STRANGE = FOLLOWED.model_copy(
    update={
        "profile": PatientProfile(
            age=40, sex="male", breastfeeding=True, allergies=("penicilin", "nsaids"),
            medications=("amoxil", "frobnicate"),
        ),
        "follow_ups": (
            FollowUp(kind="constraint", text="I don't like pills.", constraint="dislikes:pills"),
            FollowUp(kind="constraint", text="I take warfarin.", constraint="takes:warfarin"),
            FollowUp(kind="constraint", text="I can't afford it.", constraint="cost:unobtainium"),
            FollowUp(kind="constraint", text="I'm pregnant.", constraint="pregnancy"),
            FollowUp(kind="constraint", text="Something else."),
            FollowUp(kind="question", text="How do I take it?", constraint="no_tablets"),
        ),
    }
)  # fmt: skip


def test_a_case_file_names_every_field_the_kb_or_the_grammar_does_not_allow(tmp_path):
    (tmp_path / "cases.json").write_text("[" + STRANGE.model_dump_json() + "]")
    with pytest.raises(ValueError) as error:
        load_case_file(tmp_path / "cases.json")
    assert str(error.value).split("; ") == [
        "cases.json: case 'c1': profile.breastfeeding: a male patient cannot be breastfeeding",
        f"profile.allergies.0: 'penicilin' is not {ALLERGY}, did you mean 'penicillins'?",
        f"profile.medications.1: 'frobnicate' is not {DRUG}",
        f"follow_ups.0.constraint: 'dislikes:pills' is not a constraint (allowed: {GRAMMAR})",
        f"follow_ups.2.constraint: 'unobtainium' is not {DRUG}",
        "follow_ups.3.constraint: 'pregnancy' for a male patient",
        f"follow_ups.4.constraint: missing (allowed: {GRAMMAR})",
        "follow_ups.5.constraint: a question has none (a follow-up with one is kind: constraint)",
    ]


def test_allergies_written_as_a_drug_a_class_or_a_lay_term_load_and_an_unknown_one_is_an_error(tmp_path):
    def case_file(allergies):
        profile = FOLLOWED.profile.model_copy(update={"allergies": allergies})
        (tmp_path / "cases.json").write_text("[" + FOLLOWED.model_copy(update={"profile": profile})
                                             .model_dump_json() + "]")  # fmt: skip
        return tmp_path / "cases.json"

    written = ("penicillin", "sulfa", "NSAIDs", "Klaricid", "anti-inflammatories")
    assert load_case_file(case_file(written))[0].profile.allergies == written
    with pytest.raises(ValueError) as error:
        load_case_file(case_file(("penicillin", "latex")))
    assert str(error.value) == f"cases.json: case 'c1': profile.allergies.1: 'latex' is not {ALLERGY}"


def test_a_present_aiu_whose_reply_has_a_value_slot_needs_its_value(tmp_path):
    no_value = FOLLOWED.model_dump(mode="json")
    no_value["aius"][0]["value"] = None
    (tmp_path / "cases.yaml").write_text(json.dumps([no_value]))
    with pytest.raises(ValueError) as error:
        load_case_file(tmp_path / "cases.yaml")
    assert str(error.value) == (
        "cases.yaml: case 'c1': aius.0.value: AIU 'cough' is present and its reply needs a value"
    )


def test_a_written_case_set_is_checked_again_when_an_evaluation_samples_it(tmp_path):
    # A case set written before its cases were checked (or with another KB) fails the run before any call.
    write_case_set([STRANGE.model_copy(update={"follow_ups": STRANGE.follow_ups[:1]})], tmp_path, {})
    message = (
        f"{tmp_path}/cases.jsonl: case 'c1': profile.breastfeeding: a male patient cannot be breastfeeding"
    )
    with pytest.raises(ValueError) as error:
        load_case_set(tmp_path)
    assert str(error.value).startswith(message)
    with pytest.raises(UserError) as error:
        load_sample(tmp_path, SampleSpec())
    assert (str(error.value).startswith(message), error.value.option) == (True, "--cases")
