import hashlib
import re
from pathlib import Path

import pytest

from tasks.benchmarks.snomed.cases.reference import read_reference_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.benchmarks.snomed.config import CLINICIAN_PROMPT, PATIENT_PROMPTS, SnomedConfig
from tasks.benchmarks.snomed.interview import DISCLOSURE_RULES, InterviewPrompts, InterviewSettings
from tasks.benchmarks.snomed.leak import find_leaks
from tasks.benchmarks.snomed.patient import leak_names_by_code, load_lexicon
from tasks.benchmarks.snomed.plan import HISTORY_NOTE, PREVALENCE_NOTE, build_plan, estimate_job
from tasks.benchmarks.snomed.scorer import ScoreJob
from tasks.benchmarks.snomed.solver import interview_case
from tasks.core.preflight import UserError
from tasks.evals.config import EvaluationSettings, ModelSpec, RunOverrides, load_config
from tasks.evals.estimate import estimate_plan
from tasks.evals.plan import run_id_for
from tests import snomed_fixtures
from tests.snomed_fixtures import HYPERTENSION, case
from tests.tasks.benchmarks.snomed.test_cases_reference import REFERENCE
from tests.tasks.benchmarks.snomed.test_loading import CASES, write_case_set

CHECKLIST = ModelSpec(name="checklist", model="threadmed/checklist")
PREVALENCE = ModelSpec(name="prevalence", model="threadmed/prevalence")
TEST_CASES = {case.case_id: case for case in CASES if case.split == "test"}
DEPLOYMENTS = Path(__file__).parents[4] / "deployments"
SEEDED_ORDER = ["t3", "t1", "t2"]  # the test split's order with seed 0 (test_loading.py)


@pytest.fixture(scope="module")
def case_set(tmp_path_factory) -> Path:
    return write_case_set(tmp_path_factory.mktemp("snomed") / "cases", CASES)


def plan_for(case_set: Path, run_dir: Path, config: SnomedConfig):
    return build_plan(EvaluationSettings[SnomedConfig](dataset_dir=case_set, run_dir=run_dir, config=config))


def test_jobs_pair_every_case_with_every_epoch_and_clinician_case_major(case_set, tmp_path):
    config = SnomedConfig(models=[CHECKLIST, PREVALENCE], epochs=2)
    plan = plan_for(case_set, tmp_path, config)
    assert plan.run_id == run_id_for(config, plan.dataset_fingerprint)
    assert [(j.solve.case.case_id, j.solve.epoch, j.solve.clinician.spec.name) for j in plan.jobs] == [
        (case_id, epoch, model)
        for case_id in SEEDED_ORDER
        for epoch in (0, 1)
        for model in ("checklist", "prevalence")
    ]
    assert [j.score for j in plan.jobs[:2]] == [
        ScoreJob(run_id=plan.run_id, model=model, case_id="t3", epoch=0, gold_codes=(), case_set_dir=case_set)
        for model in ("checklist", "prevalence")
    ]
    assert {j.solve.case == TEST_CASES[j.solve.case.case_id] for j in plan.jobs} == {True}
    assert {(j.solve.run_id, j.solve.settings) for j in plan.jobs} == {(plan.run_id, InterviewSettings())}
    fixtures_module = Path(snomed_fixtures.__file__)  # the fixture case set's source
    assert plan.manifest_facts == {
        "sent": {
            "models": {
                "checklist": {"model": "threadmed/checklist", "api_base": None, "params": {"temperature": 0}},
                "prevalence": {
                    "model": "threadmed/prevalence",
                    "api_base": None,
                    "params": {"temperature": 0, "prevalence": "<train split table>"},
                },
            },
            "patient": {
                "offline-patient": {
                    "model": "threadmed/patient",
                    "api_base": None,
                    "params": {"temperature": 0},
                }
            },
        },
        "case_set": {
            "settings": {
                "reference_date": None,
                "gold_scope": "all",
                "gold_tags": ["disorder", "finding"],
                "max_observations": 30,
                "train_share": 0.0,
                "sample_size": None,
                "seed": 0,
            },
            "counts": {
                "cases": 5,
                "train": 2,
                "test": 3,
                "cases_without_gold": 1,
                "gold_codes": 6,
                "distinct_gold_codes": 3,
                "conditions": 6,
                "observations": 5,
            },
            "source": {
                "path": str(fixtures_module),
                "format": "reference",
                "fingerprint": hashlib.sha256(fixtures_module.read_bytes()).hexdigest(),
            },
        },
        "cases": 3,
        "patient_prompt": {
            "form": "lay",
            "version": "snomed_patient_lay_v1",
            "lexicon_version": 1,
            "condition_codes": 3,
            "condition_codes_left_out": 0,
        },
    }


def test_the_offline_patient_gets_its_record_without_gold_as_params_and_a_real_patient_none(
    case_set, tmp_path
):
    offline = plan_for(case_set, tmp_path, SnomedConfig(models=[CHECKLIST]))
    job = offline.jobs[1].solve
    assert job.case.case_id == "t1"
    record = (
        '{"reference_date":"2024-01-01","age_years":40,"sex":"female","conditions":['
        '{"code":"59621000","display":"Essential hypertension (disorder)","onset":null,"stop":null,'
        '"semantic_tag":null},{"code":"444814009","display":"Viral sinusitis (disorder)","onset":null,'
        '"stop":null,"semantic_tag":null}],"observations":[{"code":"8480-6","display":"Systolic Blood '
        'Pressure","value":"150","unit":"mm[Hg]","observed_on":null,"kind":"other"}],"medications":null,'
        '"allergies":null}'
    )
    assert job.patient.params == {"record": record, "disclosure": "symptoms"}
    request = job.request("patient", [{"role": "user", "content": "Any headaches?"}])
    assert (request.model, request.params, request.scope, request.epoch) == (
        "threadmed/patient",
        {"temperature": 0, "record": record, "disclosure": "symptoms"},
        "snomed/patient/t1",
        0,
    )
    config = SnomedConfig(models=[CHECKLIST]).with_overrides(
        RunOverrides(roles={"patient": "openai/gpt-4o-mini"})
    )
    real = plan_for(case_set, tmp_path, config).jobs[1].solve
    assert (real.patient.spec.model, real.patient.params) == ("openai/gpt-4o-mini", {})
    assert real.request("patient", [{"role": "user", "content": "Any headaches?"}]).params == {
        "temperature": 0
    }


def test_prompts_are_rendered_with_the_record_and_disclosure_rule_and_hashed(case_set, tmp_path):
    config = SnomedConfig(models=[CHECKLIST], disclosure="history", patient_prompt_form="named")
    plan = plan_for(case_set, tmp_path, config)
    prompts = plan.jobs[1].solve.prompts
    assert prompts._replace(patient_system="") == InterviewPrompts(
        clinician_system=CLINICIAN_PROMPT.read_text()
        .split("=== system ===\n")[1]
        .split("\n\n=== opening")[0],
        opening="Hello, doctor.",
        final="We are out of time. Give your final answer now, as one line: "
        '<Final Answer>: ["<SNOMED CT code>", ...]',
        reask="I could not read a final answer in your reply. Reply with one line only, exactly in this "
        'form:\n<Final Answer>: ["<SNOMED CT code>", ...]',
        patient_system="",
    )
    rule, record = prompts.patient_system.split("\n")[3], prompts.patient_system.split("Your record:\n")[1]
    assert rule == DISCLOSURE_RULES["history"]
    assert record == (
        "Age: 40\nSex: female\nCondition: Essential hypertension (disorder)\n"
        "Condition: Viral sinusitis (disorder)\nLatest Systolic Blood Pressure: 150 mm[Hg]"
    )
    assert not re.search(r"\d{6,}", prompts.patient_system)
    assert plan.prompts == {
        "snomed_clinician_v1": hashlib.sha256(CLINICIAN_PROMPT.read_bytes()).hexdigest(),
        "snomed_patient_v1": hashlib.sha256(PATIENT_PROMPTS["named"].read_bytes()).hexdigest(),
    }
    assert {j.solve.patient.prompt_version for j in plan.jobs} == {"snomed_patient_v1"}
    assert {j.solve.clinician.prompt_version for j in plan.jobs} == {"snomed_clinician_v1"}
    assert plan.notes == [HISTORY_NOTE]
    assert plan.manifest_facts["patient_prompt"] == {
        "form": "named",
        "version": "snomed_patient_v1",
        "lexicon_version": 1,
        "condition_codes": 3,
        "condition_codes_left_out": 0,
    }


def test_the_lay_form_tells_the_llm_patient_its_conditions_in_lay_words_and_says_what_it_left_out(
    case_set, tmp_path
):
    config = SnomedConfig(models=[CHECKLIST]).with_overrides(
        RunOverrides(roles={"patient": "openai/gpt-4o-mini"})
    )
    plan = plan_for(case_set, tmp_path, config)
    patient_systems = {j.solve.case.case_id: j.solve.prompts.patient_system for j in plan.jobs}
    lexicon = load_lexicon()
    assert patient_systems["t1"].split('(the "Health" lines are in your own words):\n')[1] == (
        f"Age: 40\nSex: female\nHealth: {lexicon.conditions['59621000'].symptoms}\n"
        f"Health: {lexicon.conditions['444814009'].symptoms}\nLatest Systolic Blood Pressure: 150 mm[Hg]"
    )
    # t2's pharyngitis has a lexicon sentence; every condition is described, none named.
    assert lexicon.conditions["195662009"].symptoms in patient_systems["t2"]
    assert "pharyngitis" not in patient_systems["t2"].lower()
    assert {j.solve.patient.prompt_version for j in plan.jobs} == {"snomed_patient_lay_v1"}
    lay_sha256 = hashlib.sha256(PATIENT_PROMPTS["lay"].read_bytes()).hexdigest()
    assert plan.prompts["snomed_patient_lay_v1"] == lay_sha256
    assert plan.manifest_facts["patient_prompt"] == {
        "form": "lay",
        "version": "snomed_patient_lay_v1",
        "lexicon_version": 1,
        "condition_codes": 3,
        "condition_codes_left_out": 0,
    }
    assert plan.notes == []


def test_a_condition_without_a_lay_sentence_is_left_out_of_the_lay_prompt_and_noted(tmp_path):
    cases = [case("t1", "test", HYPERTENSION, ("156073000", "Fetus with unknown complication"))]
    config = SnomedConfig(models=[CHECKLIST]).with_overrides(
        RunOverrides(roles={"patient": "openai/gpt-4o-mini"})
    )
    plan = plan_for(write_case_set(tmp_path / "cases", cases), tmp_path / "run", config)
    [job] = plan.jobs
    assert "fetus" not in job.solve.prompts.patient_system.lower()
    assert plan.manifest_facts["patient_prompt"]["condition_codes_left_out"] == 1
    assert plan.notes == [
        "Patient prompt form lay: 1 of the sampled cases' 2 condition codes have no lay sentence in lay "
        "lexicon v1 and are not in the patient's prompt: it cannot describe them."
    ]


def test_the_prevalence_clinician_gets_the_train_splits_table(case_set, tmp_path):
    plan = plan_for(case_set, tmp_path, SnomedConfig(models=[PREVALENCE]))
    sent = PREVALENCE.model_copy(
        update={"params": {"temperature": 0, "prevalence": [["59621000", 2], ["444814009", 1]]}}
    )
    assert [j.solve.clinician.spec for j in plan.jobs] == [sent] * 3
    assert plan.notes == [PREVALENCE_NOTE]
    assert plan_for(case_set, tmp_path, SnomedConfig(models=[CHECKLIST])).notes == []


def test_the_prevalence_clinician_needs_a_train_split(tmp_path):
    test_only = write_case_set(tmp_path / "cases", [c for c in CASES if c.split == "test"])
    with pytest.raises(UserError, match=r"threadmed/prevalence needs train cases to count codes in") as error:
        plan_for(test_only, tmp_path / "run", SnomedConfig(models=[PREVALENCE]))
    assert error.value.option == "--models"


def test_the_dry_run_counts_the_upper_bound_then_nothing_once_the_calls_are_made(case_set, tmp_path):
    plan = plan_for(case_set, tmp_path, SnomedConfig(models=[CHECKLIST, PREVALENCE], max_turns=3))
    before = {(e.model, e.role): (e.calls, e.cached) for e in estimate_plan(plan, estimate_job)}
    # Per case: clinician max_turns + 1 final answer + 1 re-ask, patient max_turns.
    assert before == {
        ("checklist", "clinician"): (3 * 5, 0),
        ("offline-patient", "patient"): (2 * 3 * 3, 0),
        ("prevalence", "clinician"): (3 * 5, 0),
    }
    for job in plan.jobs:
        interview_case(job.solve, plan.ledger_dir)
    after = {(e.model, e.role): (e.calls, e.cached) for e in estimate_plan(plan, estimate_job)}
    # checklist: 3 questions and the forced final answer; prevalence answers at once.
    assert after == {
        ("checklist", "clinician"): (0, 3 * 4),
        ("offline-patient", "patient"): (0, 3 * 3),
        ("prevalence", "clinician"): (0, 3 * 1),
    }


def test_the_example_configs_dry_run_prices_both_clinicians_and_the_llm_patient(case_set, tmp_path):
    config = load_config(DEPLOYMENTS / "snomed.example.yaml", SnomedConfig)
    estimates = estimate_plan(plan_for(case_set, tmp_path, config), estimate_job)
    assert [(e.model, e.role, e.calls, e.cached, e.completion_tokens) for e in estimates] == [
        ("gpt-4o", "clinician", 3 * 22, 0, 3 * 22 * 40),
        ("gpt-4o-mini", "patient", 2 * 3 * 20, 0, 2 * 3 * 20 * 40),
        ("claude-haiku-4.5", "clinician", 3 * 22, 0, 3 * 22 * 40),
    ]
    assert all(e.cost_usd > 0 for e in estimates)


def test_the_demo_config_plans_both_offline_clinicians_with_the_offline_patient(case_set, tmp_path):
    plan = plan_for(case_set, tmp_path, load_config(DEPLOYMENTS / "snomed.demo.yaml", SnomedConfig))
    assert [(j.solve.clinician.spec.name, j.solve.patient.spec.model) for j in plan.jobs[:2]] == [
        ("prevalence", "threadmed/patient"),
        ("checklist", "threadmed/patient"),
    ]
    assert len(plan.jobs) == 6 and plan.notes == [PREVALENCE_NOTE]


def test_the_dry_run_replays_an_interview_up_to_its_first_call_not_in_the_ledger(case_set, tmp_path):
    short = plan_for(case_set, tmp_path, SnomedConfig(models=[CHECKLIST], max_turns=3))
    for job in short.jobs:
        interview_case(job.solve, short.ledger_dir)
    longer = plan_for(case_set, tmp_path, SnomedConfig(models=[CHECKLIST], max_turns=5))
    estimates = {(e.model, e.role): (e.calls, e.cached) for e in estimate_plan(longer, estimate_job)}
    # The 3 questions and answers are known; the 4th question is not (the short run asked for the answer).
    assert estimates == {
        ("checklist", "clinician"): (3 * (5 + 1 + 1 - 3), 3 * 3),
        ("offline-patient", "patient"): (3 * (5 - 3), 3 * 3),
    }


@pytest.mark.skipif(not REFERENCE.exists(), reason="shared reference data not present")
@pytest.mark.parametrize("form", ["lay", "named"])
def test_no_lay_prompt_of_the_500_reference_cases_names_a_condition_and_every_named_one_does(form, tmp_path):
    cases = read_reference_cases(REFERENCE, CaseSetSettings(gold_tags=()), None).cases
    config = SnomedConfig(models=[CHECKLIST], patient_prompt_form=form).with_overrides(
        RunOverrides(roles={"patient": "openai/gpt-4o-mini"})
    )
    plan = plan_for(write_case_set(tmp_path / "cases", cases), tmp_path / "run", config)
    extra_names = leak_names_by_code(load_lexicon())

    def named_conditions(job) -> set[str]:
        # Every condition of the record counts, gold or not; the leak check finds codes, names and variants.
        conditions = job.solve.case.conditions
        codes, displays = [c.code for c in conditions], [c.display for c in conditions]
        hits = find_leaks(job.solve.prompts.patient_system, codes, displays, extra_names)
        return {hit.code for hit in hits}

    named = {job.solve.case.case_id: named_conditions(job) for job in plan.jobs}
    assert len(named) == 500
    if form == "lay":
        assert {case_id: codes for case_id, codes in named.items() if codes} == {}
    else:
        assert named == {case.case_id: {c.code for c in case.conditions} for case in cases}
