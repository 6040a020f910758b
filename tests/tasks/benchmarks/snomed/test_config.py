from pathlib import Path

import pytest
from pydantic import ValidationError

from tasks.benchmarks.snomed.config import (
    CLINICIAN_PROMPT,
    OFFLINE_PATIENT,
    ORACLE_PATIENT_PROMPT,
    PATIENT_PROMPTS,
    SnomedConfig,
    patient_prompt_file,
)
from tasks.benchmarks.snomed.interview import InterviewSettings
from tasks.core.preflight import UserError
from tasks.evals.config import ModelSpec, RunOverrides, load_config
from tasks.evals.plan import run_id_for
from tasks.llm.request import ProviderLimits

DEPLOYMENTS = Path(__file__).parents[4] / "deployments"
CHECKLIST = ModelSpec(name="checklist", model="threadmed/checklist")


def test_defaults_are_the_offline_patient_one_epoch_and_the_specs_interview():
    config = SnomedConfig(models=[CHECKLIST])
    assert config.patient == ModelSpec(
        name="offline-patient", model="threadmed/patient", estimated_reply_tokens=30
    )
    assert (config.epochs, config.max_turns, config.max_reasks, config.disclosure) == (1, 20, 1, "symptoms")
    assert config.interview() == InterviewSettings(max_turns=20, max_reasks=1, disclosure="symptoms")
    assert config.patient_prompt_form == "lay"
    assert config.prompt_files() == (CLINICIAN_PROMPT, PATIENT_PROMPTS["lay"])
    assert PATIENT_PROMPTS["lay"].name == "patient_lay_v1.txt"
    assert config.roles() == {"model": [CHECKLIST], "patient": [OFFLINE_PATIENT]}


def test_the_named_patient_prompt_form_is_a_setting_with_its_own_prompt_file():
    chosen = SnomedConfig(models=[CHECKLIST]).with_overrides(
        RunOverrides(settings={"patient_prompt_form": "named"})
    )
    assert chosen.patient_prompt_form == "named"
    assert chosen.prompt_files() == (CLINICIAN_PROMPT, PATIENT_PROMPTS["named"])
    assert PATIENT_PROMPTS["named"].name == "patient_v1.txt"


@pytest.mark.parametrize(
    ("given", "chosen"),
    [
        ("oracle_patient_v1", ORACLE_PATIENT_PROMPT),
        ("patient_lay_v1", PATIENT_PROMPTS["lay"]),
        ("patient_v1", PATIENT_PROMPTS["named"]),
        (str(ORACLE_PATIENT_PROMPT), ORACLE_PATIENT_PROMPT),
    ],
)
def test_a_patient_prompt_is_a_file_or_the_name_of_a_shipped_one(given, chosen):
    assert patient_prompt_file(given) == chosen.resolve()


def test_a_relative_patient_prompt_file_is_made_absolute_and_a_file_wins_over_a_shipped_name(
    tmp_path, monkeypatch
):
    (tmp_path / "oracle_patient_v1").write_text("a prompt of the user's own")
    monkeypatch.chdir(tmp_path)
    assert patient_prompt_file("oracle_patient_v1") == tmp_path / "oracle_patient_v1"


def test_a_patient_prompt_that_is_neither_a_file_nor_a_shipped_name_is_refused_listing_the_names():
    with pytest.raises(UserError) as refused:
        patient_prompt_file("clinician_v1")  # shipped, but no patient's
    assert (str(refused.value), refused.value.option) == (
        f"clinician_v1: no such file, nor the name of a patient prompt in {CLINICIAN_PROMPT.parent} "
        "(oracle_patient_v1, patient_lay_v1, patient_v1)",
        "--patient-prompt",
    )


def test_overrides_replace_the_patient_by_a_model_string_and_set_the_interview():
    config = SnomedConfig(models=[CHECKLIST])
    chosen = config.with_overrides(
        RunOverrides(
            models=["openai/gpt-4o"],
            roles={"patient": "openai/gpt-4o-mini"},
            settings={"epochs": 3, "max_turns": 5, "disclosure": "history"},
            limit=2,
        )
    )
    assert chosen.models == [ModelSpec(model="openai/gpt-4o")]
    assert chosen.patient == ModelSpec(model="openai/gpt-4o-mini")
    assert chosen.interview() == InterviewSettings(max_turns=5, max_reasks=1, disclosure="history")
    assert (chosen.epochs, chosen.sample.limit) == (3, 2)
    assert config.with_overrides(RunOverrides()) == config


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        (
            RunOverrides(roles={"judge": "openai/gpt-4o"}),
            "^overrides.roles.judge: not a role; the roles here: patient$",
        ),
        (
            RunOverrides(settings={"epoch": 2}),
            "^overrides.settings.epoch: not a setting; did you mean epochs\\?$",
        ),
        (RunOverrides(settings={"disclosure": "everything"}), "disclosure"),
        (RunOverrides(settings={"patient_prompt_form": "verbatim"}), "patient_prompt_form"),
        (RunOverrides(settings={"epochs": 0}), "epochs"),
    ],
)
def test_overrides_refuse_unknown_roles_settings_and_bad_values(overrides, error):
    with pytest.raises(ValueError, match=error):
        SnomedConfig(models=[CHECKLIST]).with_overrides(overrides)


def test_quotas_are_refused():
    with pytest.raises(ValidationError, match=r"SNOMED cases have no strata: use sample\.limit"):
        SnomedConfig(models=[CHECKLIST], sample={"quotas": {"short": 3}})


def test_prompt_paths_are_read_from_the_config_files_folder(tmp_path):
    (tmp_path / "snomed.yaml").write_text(
        "models: [{model: threadmed/checklist}]\nclinician_prompt: prompts/doctor_v2.txt\n"
    )
    config = load_config(tmp_path / "snomed.yaml", SnomedConfig)
    folder = tmp_path.resolve()
    assert config.prompt_files() == (folder / "prompts" / "doctor_v2.txt", PATIENT_PROMPTS["lay"])


def test_the_run_id_ignores_how_calls_are_made_but_not_what_they_return():
    config = SnomedConfig(models=[CHECKLIST])
    limited = config.model_copy(
        update={
            "patient": OFFLINE_PATIENT.model_copy(update={"limits": ProviderLimits(max_concurrency=1)}),
            "providers": {"threadmed": ProviderLimits(max_concurrency=2)},
        }
    )
    assert run_id_for(limited, "cases-sha") == run_id_for(config, "cases-sha")
    changed = [
        config.model_copy(update={"epochs": 2}),
        config.model_copy(update={"disclosure": "history"}),
        config.model_copy(update={"patient_prompt_form": "named"}),
        config.model_copy(update={"patient": ModelSpec(model="openai/gpt-4o-mini")}),
    ]
    ids = {run_id_for(c, "cases-sha") for c in [config, *changed]} | {run_id_for(config, "other-sha")}
    assert len(ids) == 6


def test_the_example_config_has_clinicians_and_an_llm_patient_at_temperature_0():
    config = load_config(DEPLOYMENTS / "snomed.example.yaml", SnomedConfig)
    assert [(m.name, m.model) for m in config.models] == [
        ("gpt-4o", "openai/gpt-4o"),
        ("claude-haiku-4.5", "anthropic/claude-haiku-4-5-20251001"),
    ]
    patient = config.resolved(config.patient)
    assert (patient.name, patient.model, patient.params) == (
        "gpt-4o-mini",
        "openai/gpt-4o-mini",
        {"temperature": 0},
    )
    assert config.interview() == InterviewSettings(max_turns=20, max_reasks=1, disclosure="symptoms")
    assert (config.epochs, config.sample.split, config.sample.limit) == (1, "test", 100)
    assert config.limits_for(config.models[1]) == ProviderLimits(max_concurrency=8, requests_per_minute=50)
    assert config.patient_prompt_form == "lay"
    assert config.prompt_files() == (CLINICIAN_PROMPT, PATIENT_PROMPTS["lay"])


def test_the_demo_config_is_offline():
    config = load_config(DEPLOYMENTS / "snomed.demo.yaml", SnomedConfig)
    assert [m.model for m in config.models] == ["threadmed/prevalence", "threadmed/checklist"]
    assert config.patient == OFFLINE_PATIENT
    assert config.interview() == InterviewSettings()


def test_naming_the_configured_patients_model_keeps_its_settings():
    config = load_config(DEPLOYMENTS / "snomed.example.yaml", SnomedConfig)
    chosen = config.with_overrides(RunOverrides(roles={"patient": "openai/gpt-4o-mini"}))
    assert chosen.patient == config.patient
    assert run_id_for(chosen, "cases-sha") == run_id_for(config, "cases-sha")
