import subprocess
import sys
from pathlib import Path
from types import UnionType
from typing import Any, get_args, get_origin

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from tasks.benchmarks.consult.config import ConsultConfig
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.core.preflight import UserError
from tasks.evals.config import (
    EvalConfig,
    EvaluationSettings,
    JudgeSpec,
    ModelSpec,
    RunOverrides,
    load_config,
)
from tasks.evals.plan import run_id_for
from tasks.llm.request import ProviderLimits

DEPLOYMENTS = Path(__file__).parents[3] / "deployments"


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


def test_overrides_choose_models_judge_conditions_and_sample():
    config = EvalConfig(
        models=[ModelSpec(name="a", model="openai/gpt-4o"), ModelSpec(name="b", model="openai/gpt-4o-mini")],
        judge=JudgeSpec(name="j", model="openai/gpt-4o", max_reasks=1),
    )
    chosen = config.with_overrides(
        RunOverrides(
            models=["b", "anthropic/claude-x"],
            roles={"judge": "openai/o3"},
            settings={"conditions": ["oracle"]},
            split="val",
            limit=5,
        ),
    )
    assert [(m.name, m.model) for m in chosen.models] == [
        ("b", "openai/gpt-4o-mini"),
        ("anthropic/claude-x",) * 2,
    ]
    assert (chosen.judge.model, chosen.judge.max_reasks) == ("openai/o3", 1)
    assert (chosen.conditions, chosen.sample.split, chosen.sample.limit) == (["oracle"], "val", 5)
    assert config.with_overrides(RunOverrides()) == config


def test_api_base_sends_every_real_model_to_one_openai_compatible_endpoint():
    config = EvalConfig(
        models=[
            ModelSpec(name="haiku", model="anthropic/claude-haiku"),
            ModelSpec(model="threadmed/deferral"),
        ]
    )
    routed = config.with_overrides(RunOverrides(api_base="http://127.0.0.1:9/v1"))
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


def test_a_deployment_can_name_the_config_file_instead_of_passing_it():
    settings = EvaluationSettings.model_validate(
        {"dataset_dir": "build", "run_dir": "run", "config_file": str(DEPLOYMENTS / "eval.demo.yaml")}
    )
    assert settings.config == load_config(DEPLOYMENTS / "eval.demo.yaml")


def test_settings_need_a_config_or_a_config_file():
    with pytest.raises(ValidationError, match="config_file"):
        EvaluationSettings(dataset_dir="build", run_dir="run")


def test_roles_name_the_models_under_test_and_the_judge():
    config = EvalConfig(models=[ModelSpec(model="openai/a"), ModelSpec(model="openai/b")])
    roles = config.roles()
    assert list(roles) == ["model", "judge"]
    assert [m.name for m in roles["model"]] == ["openai/a", "openai/b"]
    assert roles["judge"] == [config.judge]


def test_a_role_with_its_own_limits_is_throttled_apart_from_its_provider():
    own = ProviderLimits(max_concurrency=2, requests_per_minute=30)
    config = EvalConfig(
        models=[ModelSpec(model="openai/a"), ModelSpec(model="openai/b", limits=own)],
        judge=JudgeSpec(model="anthropic/j"),
        providers={"openai": ProviderLimits(max_concurrency=10)},
        default_limits=ProviderLimits(max_concurrency=3),
    )
    a, b = config.models
    assert config.call_options(a).limits == ProviderLimits(max_concurrency=10)
    assert config.call_options(b).limits == own
    assert config.call_options(config.judge).limits == ProviderLimits(max_concurrency=3)
    assert config.worker_count() == 2 * (10 + 2 + 3)


def test_overrides_validate_their_values():
    config = EvalConfig(models=[ModelSpec(model="openai/a")])
    with pytest.raises(ValidationError, match="conditions"):
        config.with_overrides(RunOverrides(settings={"conditions": ["blind"]}))
    with pytest.raises(ValidationError, match="limit"):
        RunOverrides(limit=0)


def test_overrides_name_only_roles_and_settings_the_config_has():
    config = EvalConfig(models=[ModelSpec(model="openai/a")])
    with pytest.raises(ValueError) as refused:
        config.with_overrides(RunOverrides(roles={"patient": "openai/b"}))
    assert str(refused.value) == "overrides.roles.patient: not a role; the roles here: judge"
    with pytest.raises(ValueError) as refused:
        config.with_overrides(RunOverrides(settings={"condtions": ["oracle"]}))
    assert str(refused.value) == "overrides.settings.condtions: not a setting; did you mean conditions?"


def test_batch_overrides_put_the_named_roles_in_batch_mode_and_set_how_long_to_wait():
    config = EvalConfig(models=[ModelSpec(model="openai/a"), ModelSpec(model="openai/b")])
    batched = config.with_overrides(RunOverrides(batch=["judge"], batch_wait_s=0, batch_poll_s=5))
    assert ([m.mode for m in batched.models], batched.judge.mode) == (["single", "single"], "batch")
    assert (batched.batch.wait_s, batched.batch.poll_interval_s) == (0, 5)
    assert batched.batch_roles() == ["judge"]
    assert batched.call_options(batched.judge).mode == "batch"
    both = config.with_overrides(RunOverrides(batch=["model", "judge"]))
    assert both.batch_roles() == ["model", "judge"]
    with pytest.raises(ValueError) as refused:
        config.with_overrides(RunOverrides(batch=["patient"]))
    assert str(refused.value) == "overrides.batch names patient: not a role; the roles here: judge, model"


def test_how_calls_are_made_leaves_the_run_id_as_it_is():
    config = EvalConfig(models=[ModelSpec(model="openai/a")])
    batched = config.with_overrides(RunOverrides(batch=["model", "judge"], batch_wait_s=60))
    assert batched.model_dump(exclude=batched.not_in_run_id()) == config.model_dump(
        exclude=config.not_in_run_id()
    )


def test_batching_the_models_under_test_batches_those_whose_provider_has_a_batch_api():
    config = EvalConfig(
        models=[ModelSpec(model="openai/gpt-4o"), ModelSpec(model="anthropic/claude-haiku-4-5")]
    )
    batched = config.with_overrides(RunOverrides(batch=["model"]))
    assert [m.mode for m in batched.models] == ["batch", "single"]


def test_batch_mode_needs_a_provider_with_an_openai_style_batch_api():
    with pytest.raises(ValidationError, match="anthropic/claude-haiku-4-5: batch mode needs an OpenAI-style"):
        EvalConfig(models=[ModelSpec(model="anthropic/claude-haiku-4-5", mode="batch")])
    local = ModelSpec(model="openai/llama", api_base="http://127.0.0.1:8000/v1", mode="batch")
    assert EvalConfig(models=[local]).batch_roles() == ["model"]


def test_a_reply_cap_changes_the_call_key_and_the_run_id_while_time_out_and_concurrency_change_neither():
    config = EvalConfig(models=[ModelSpec(name="m", model="openai/m", params={"temperature": 0.5})])
    local = config.with_overrides(RunOverrides(max_concurrency=1, max_tokens=256, timeout_s=600))
    paced = config.with_overrides(RunOverrides(max_concurrency=1, timeout_s=600))
    model, judge = local.resolved(local.models[0]), local.resolved(local.judge)
    assert model.params == {"temperature": 0.5, "max_tokens": 256}
    assert judge.params == {"temperature": 0, "max_tokens": 256}
    options = local.call_options(model)
    assert (options.limits.max_concurrency, options.timeout_s) == (1, 600)
    assert local.call_options(local.judge).limits.max_concurrency == 1
    messages = [{"role": "user", "content": "Is it broken?"}]
    assert model.request(messages).key() != config.resolved(config.models[0]).request(messages).key()
    assert paced.resolved(paced.models[0]).request(messages).key() == (
        config.resolved(config.models[0]).request(messages).key()
    )
    assert run_id_for(paced, "data") == run_id_for(config, "data") != run_id_for(local, "data")


def test_a_role_that_sets_its_own_reply_cap_keeps_it():
    config = EvalConfig(models=[ModelSpec(model="openai/m", params={"max_tokens": 2048})], max_tokens=256)
    assert config.resolved(config.models[0]).params == {"temperature": 0, "max_tokens": 2048}


def test_an_endpoint_gets_only_the_key_variable_named_for_it():
    config = EvalConfig(models=[ModelSpec(model="openai/m", api_key_env="OPENAI_KEY_OF_THE_LAB")])
    unnamed = config.with_overrides(RunOverrides(api_base="http://127.0.0.1:8080/v1"))
    named = config.with_overrides(RunOverrides(api_base="http://127.0.0.1:8080/v1", api_key_env="LOCAL_KEY"))
    assert [spec.api_key_env for specs in unnamed.roles().values() for spec in specs] == [None, None]
    assert [spec.api_key_env for specs in named.roles().values() for spec in specs] == ["LOCAL_KEY"] * 2


def test_a_spending_cap_is_set_by_the_overrides_and_leaves_the_run_id_as_it_is():
    config = EvalConfig(models=[ModelSpec(name="m", model="openai/m", estimated_reply_tokens=50)])
    capped = config.with_overrides(RunOverrides(max_cost_usd=2.5))
    assert (config.max_cost_usd, capped.max_cost_usd) == (None, 2.5)
    assert config.with_overrides(RunOverrides()).max_cost_usd is None
    assert run_id_for(capped, "data") == run_id_for(config, "data")
    assert capped.call_options(capped.models[0]).estimated_reply_tokens == 50  # what the cap reserves
    with pytest.raises(ValidationError, match="max_cost_usd"):
        RunOverrides(max_cost_usd=-1)


@pytest.mark.parametrize("cap", [float("inf"), float("nan"), 1e400, "Infinity"])
def test_a_spending_cap_that_is_not_finite_is_refused_in_a_config_its_overrides_and_flow_parameters(cap):
    """An infinite cap would be no cap at all, and nan one no spend compares with: never read as 'no cap'."""
    for model, fields in (
        (EvalConfig, {"models": [{"model": "openai/m"}], "max_cost_usd": cap}),  # a config, a deployment's
        (RunOverrides, {"max_cost_usd": cap}),  # the command's options
    ):
        with pytest.raises(ValidationError) as raised:
            model.model_validate(fields)
        assert [(error["loc"], error["type"]) for error in raised.value.errors()] == [
            (("max_cost_usd",), "finite_number")
        ]


BOOLEAN_NOT_NUMBER = "is a boolean, not a number (YAML reads yes/no, on/off, true/false as booleans)"


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("max_tokens: yes", f"max_tokens: True {BOOLEAN_NOT_NUMBER}"),
        ("judge: {model: openai/j, max_reasks: true}", f"judge.max_reasks: True {BOOLEAN_NOT_NUMBER}"),
        ("judge: {model: openai/j, epoch: yes}", f"judge.epoch: True {BOOLEAN_NOT_NUMBER}"),
        ("sample: {limit: on}", f"sample.limit: True {BOOLEAN_NOT_NUMBER}"),
        ("sample: {seed: on}", f"sample.seed: True {BOOLEAN_NOT_NUMBER}"),
        ("sample: {quotas: {short: off}}", f"sample.quotas: ['short']: False {BOOLEAN_NOT_NUMBER}"),
        ("timeout_s: yes", f"timeout_s: True {BOOLEAN_NOT_NUMBER}"),
    ],
)
def test_a_yaml_boolean_for_a_number_is_refused_naming_the_field(tmp_path, text, refusal):
    """pydantic's lax mode read `yes` as 1: `max_tokens: yes` cut every reply at one token."""
    (tmp_path / "eval.yaml").write_text(f"models: [{{model: openai/m}}]\n{text}\n")
    with pytest.raises(UserError) as refused:
        load_config(tmp_path / "eval.yaml")
    assert str(refused.value) == f"{tmp_path / 'eval.yaml'}: {refusal}"


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        (
            "models: [{model: openai/m, params: {temperature: no}}]",
            "models.0.params: temperature: False is a boolean, not a number (YAML reads yes/no, on/off as "
            "booleans)",
        ),
        (
            "models: [{model: openai/m}]\ndefault_params: {seed: on}",
            "default_params: seed: True is a boolean, not a number (YAML reads yes/no, on/off as booleans)",
        ),
        (
            "models: [{model: openai/m, params: {top_p: '0.9'}}]",
            "models.0.params: top_p: '0.9' is not a number",
        ),
    ],
)
def test_a_numeric_request_param_that_is_no_number_is_refused(tmp_path, text, refusal):
    """`params` is sent as given: `temperature: no` went to the provider as False."""
    (tmp_path / "eval.yaml").write_text(f"{text}\n")
    with pytest.raises(UserError) as refused:
        load_config(tmp_path / "eval.yaml")
    assert str(refused.value) == f"{tmp_path / 'eval.yaml'}: {refusal}"


def test_request_params_that_are_booleans_or_null_pass():
    spec = ModelSpec(model="openai/m", params={"logprobs": True, "temperature": None, "top_p": 1})
    assert spec.params == {"logprobs": True, "temperature": None, "top_p": 1}


def numeric_fields(model: type[BaseModel], at: tuple = ()) -> list[tuple]:
    """The location of every number in `model`'s settings, nested models' included (a list's first item, a
    dict's key 'k')."""
    found = []
    for name, field in model.model_fields.items():
        members = (
            get_args(field.annotation) if isinstance(field.annotation, UnionType) else [field.annotation]
        )
        for member in members:
            inner, step = member, ()
            if get_origin(member) is list:
                inner, step = get_args(member)[0], (0,)
            elif get_origin(member) is dict:
                inner, step = get_args(member)[1], ("k",)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                found += numeric_fields(inner, (*at, name, *step))
            elif inner in (int, float):
                found.append((*at, name, *step))
    return found


# Each benchmark's config shares the base's settings and adds its own.
CONFIG_NUMBERS = [
    (config_model, location)
    for config_model in (EvalConfig, ConsultConfig, SnomedConfig)
    for location in numeric_fields(config_model)
]
YAML_BOOLEANS = [
    spelling
    for word in ("yes", "no", "on", "off", "true", "false")
    for spelling in (word, word.title(), word.upper())
]


def config_with(location: tuple, value: Any) -> dict:
    """A minimal config with `value` at `location` (each model on the way named by its required `model`)."""
    config: dict = {"models": [{"model": "openai/m"}]}
    node: Any = config
    for step in location[:-1]:
        if not isinstance(step, int):
            node.setdefault(step, {"model": "openai/m"} if step in ("judge", "patient") else {})
        node = node[step]
    node[location[-1]] = value
    return config


@given(number=st.sampled_from(CONFIG_NUMBERS), spelling=st.sampled_from(YAML_BOOLEANS))
def test_any_yaml_boolean_under_any_numeric_setting_is_refused_naming_it(tmp_path_factory, number, spelling):
    config_model, location = number
    path = tmp_path_factory.mktemp("config") / "eval.yaml"
    path.write_text(yaml.safe_dump(config_with(location, "BOOLEAN")).replace("BOOLEAN", spelling))
    with pytest.raises(UserError) as refused:
        load_config(path, config_model)
    field, inside = (location[:-1], "['k']: ") if location[-1] == "k" else (location, "")
    flag = yaml.safe_load(spelling)
    assert str(refused.value) == f"{path}: {'.'.join(map(str, field))}: {inside}{flag} {BOOLEAN_NOT_NUMBER}"


# Resolves a run's settings in a fresh interpreter and prints which of litellm and openai it imported.
RESOLVE_AND_LIST_IMPORTS = """
import sys
from tasks.evals.config import RunOverrides, resolve_settings
overrides = RunOverrides(models=["threadmed/retrieval", "openai/gpt-4o"], batch=sys.argv[1:])
resolve_settings(dataset_dir="build", run_dir="run", overrides=overrides)
print("\\n" + ",".join(name for name in ("litellm", "openai") if name in sys.modules))
"""


@pytest.mark.parametrize(("batch", "imported"), [([], ""), (["model"], "litellm,openai")])
def test_resolving_settings_imports_litellm_only_for_a_batch_role(batch, imported):
    """Every command resolves its settings before its first line: litellm (seconds to import) waits until
    a role in batch mode needs its provider table."""
    resolved = subprocess.run(
        [sys.executable, "-c", RESOLVE_AND_LIST_IMPORTS, *batch],
        cwd=Path(__file__).parents[3],
        capture_output=True,
        text=True,
        check=True,
    )
    # litellm prints a line of its own for a model string it does not know (threadmed/...): the last is ours
    assert resolved.stdout.splitlines()[-1] == imported
