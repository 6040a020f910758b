from pathlib import Path

import pytest
from pydantic import ValidationError

from tasks.core.preflight import UserError
from tasks.evals.config import (
    EvalConfig,
    EvaluationSettings,
    JudgeSpec,
    ModelSpec,
    SampleSpec,
    apply_overrides,
    check_dataset_build,
    draw_sample,
    load_config,
    load_sample,
    run_id_for,
)
from tasks.llm.request import ProviderLimits
from tests.eval_fixtures import THREAD_TEXTS, write_dataset

DEPLOYMENTS = Path(__file__).parents[3] / "deployments"


def threads(counts: dict[str, int], split: str = "test") -> list[dict]:
    return [
        {"thread_id": f"{stratum}-{split}-{i:03d}", "stratum": stratum, "split": split}
        for stratum, n in counts.items()
        for i in range(n)
    ]


def test_the_example_config_holds_the_papers_setup():
    config = load_config(DEPLOYMENTS / "eval.example.yaml")
    assert [m.name for m in config.models] == [
        "gpt-5",
        "gpt-4o",
        "claude-haiku-4.5",
        "gemini-2.5-flash",
        "llama-3.3-70b",
    ]
    assert (config.judge.model, config.conditions) == ("openai/gpt-4o", ["baseline", "oracle"])
    gpt5, gpt4o = config.resolved(config.models[0]), config.resolved(config.models[1])
    assert gpt5.params == {"temperature": 1}
    assert gpt4o.params == {"temperature": 0}
    assert sum(config.sample.quotas.values()) == 238
    assert config.call_options(config.models[2]).limits == ProviderLimits(
        max_concurrency=8, requests_per_minute=50
    )


def test_the_demo_config_is_offline():
    config = load_config(DEPLOYMENTS / "eval.demo.yaml")
    assert [m.model for m in config.models] == ["threadmed/retrieval", "threadmed/deferral"]
    assert config.judge.model == "threadmed/overlap-judge"


def test_a_relative_rubric_path_is_read_from_the_config_folder(tmp_path):
    (tmp_path / "eval.yaml").write_text(
        "models: [{model: openai/gpt-4o}]\njudge: {model: x/y, rubric: my.txt}\n"
    )
    assert load_config(tmp_path / "eval.yaml").judge.rubric == tmp_path / "my.txt"


def test_a_null_param_removes_a_default():
    config = EvalConfig(models=[ModelSpec(model="openai/o1", params={"temperature": None, "seed": 7})])
    assert config.resolved(config.models[0]).params == {"seed": 7}


def test_model_names_must_be_unique():
    with pytest.raises(ValidationError, match="unique"):
        EvalConfig(models=[ModelSpec(model="openai/gpt-4o"), ModelSpec(model="openai/gpt-4o")])


def test_quotas_draw_per_stratum_with_a_seed():
    pool = threads({"short": 10, "medium": 6, "long": 2})
    spec = SampleSpec(quotas={"short": 3, "medium": 2, "long": 5}, seed=1)
    sample = draw_sample(pool, spec)
    strata = [tid.split("-")[0] for tid in sample]
    assert (strata.count("short"), strata.count("medium"), strata.count("long")) == (3, 2, 2)
    assert draw_sample(pool, spec) == sample
    assert draw_sample(pool, spec.model_copy(update={"seed": 2})) != sample


def test_the_sample_keeps_to_its_split_and_a_limit_takes_a_prefix():
    pool = threads({"short": 8}) + threads({"short": 5}, split="train")
    everything = draw_sample(pool, SampleSpec(seed=3))
    assert len(everything) == 8 and all("-test-" in tid for tid in everything)
    assert draw_sample(pool, SampleSpec(seed=3, limit=3)) == everything[:3]


def test_overrides_choose_models_judge_conditions_and_sample():
    config = EvalConfig(
        models=[ModelSpec(name="a", model="openai/gpt-4o"), ModelSpec(name="b", model="openai/gpt-4o-mini")],
        judge=JudgeSpec(name="j", model="openai/gpt-4o", max_reasks=1),
    )
    chosen = apply_overrides(
        config,
        models=["b", "anthropic/claude-x"],
        judge="openai/o3",
        conditions=["oracle"],
        split="val",
        limit=5,
    )
    assert [(m.name, m.model) for m in chosen.models] == [
        ("b", "openai/gpt-4o-mini"),
        ("anthropic/claude-x",) * 2,
    ]
    assert (chosen.judge.model, chosen.judge.max_reasks) == ("openai/o3", 1)
    assert (chosen.conditions, chosen.sample.split, chosen.sample.limit) == (["oracle"], "val", 5)
    assert apply_overrides(config) == config


def test_api_base_sends_every_real_model_to_one_openai_compatible_endpoint():
    config = EvalConfig(
        models=[
            ModelSpec(name="haiku", model="anthropic/claude-haiku"),
            ModelSpec(model="threadmed/deferral"),
        ]
    )
    routed = apply_overrides(config, api_base="http://127.0.0.1:9/v1")
    haiku, deferral = routed.models
    assert (haiku.model, haiku.api_base, haiku.price_model) == (
        "openai/anthropic/claude-haiku",
        "http://127.0.0.1:9/v1",
        "anthropic/claude-haiku",
    )
    assert deferral == config.models[1]
    assert (routed.judge.model, routed.judge.api_base) == ("openai/gpt-4o", "http://127.0.0.1:9/v1")


def test_worker_threads_follow_the_provider_limits():
    config = EvalConfig(
        models=[ModelSpec(model="openai/a"), ModelSpec(model="anthropic/b")],
        providers={"openai": ProviderLimits(max_concurrency=10)},
        default_limits=ProviderLimits(max_concurrency=3),
    )
    assert config.worker_count() == 2 * (10 + 3)
    assert config.model_copy(update={"max_workers": 7}).worker_count() == 7


def test_load_sample_returns_threads_in_turn_order(tmp_path):
    build = write_dataset(tmp_path)
    cases = {case.thread_id: case for case in load_sample(build, SampleSpec())}
    assert sorted(cases) == ["ankle", "headache", "rash"]
    rash = THREAD_TEXTS["rash"][1]
    assert cases["rash"].questions == tuple(q for q, _ in rash)
    assert cases["rash"].answers == tuple(a for _, a in rash)
    assert (cases["rash"].stratum, cases["headache"].stratum) == ("long", "medium")


def test_the_run_id_ignores_how_calls_are_made():
    config = EvalConfig(models=[ModelSpec(model="openai/gpt-4o")])
    throttled = config.model_copy(
        update={"default_limits": ProviderLimits(max_concurrency=1), "max_workers": 3}
    )
    assert run_id_for(config, "abc") == run_id_for(throttled, "abc")
    assert run_id_for(config, "abc") != run_id_for(config, "abd")
    assert run_id_for(config, "abc") != run_id_for(apply_overrides(config, conditions=["oracle"]), "abc")


def test_a_deployment_can_name_the_config_file_instead_of_passing_it():
    settings = EvaluationSettings.model_validate(
        {"dataset_dir": "build", "run_dir": "run", "config_file": str(DEPLOYMENTS / "eval.demo.yaml")}
    )
    assert settings.config == load_config(DEPLOYMENTS / "eval.demo.yaml")


def test_settings_need_a_config_or_a_config_file():
    with pytest.raises(ValidationError, match="config_file"):
        EvaluationSettings(dataset_dir="build", run_dir="run")


def test_a_versioned_build_folder_points_at_its_latest_version(tmp_path):
    write_dataset(tmp_path / "releases" / "latest")
    with pytest.raises(UserError) as caught:
        check_dataset_build(tmp_path / "releases")
    assert (str(caught.value), caught.value.option) == (
        f"{tmp_path / 'releases'} is not a dataset build (no dataset/answered/threads.parquet); "
        f"pass {tmp_path / 'releases' / 'latest'} (the newest version of a --versioned build)",
        "--dataset",
    )
    check_dataset_build(tmp_path / "releases" / "latest")
