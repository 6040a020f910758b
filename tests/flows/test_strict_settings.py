"""A misspelt key anywhere in a flow's parameters or an example config is refused, naming it and the nearest
name: every settings model reachable from a flow's parameters, every field of each, every example YAML.

The Prefect server's side (a deployment's parameter schema refusing the key when a run is created) is
tested with a real server in tests/flows/test_deployments.py.
"""

import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml
from prefect import Flow
from prefect.exceptions import ParameterTypeError
from pydantic import BaseModel

from tasks.benchmarks.consult.config import ConsultConfig
from tasks.benchmarks.registry import BENCHMARKS
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.core.preflight import UserError
from tasks.core.strict import StrictModel
from tasks.evals.config import EvalConfig, RunConfig, load_config
from tests.eval_fixtures import write_dataset
from tests.flows.cli.terminal import assert_usage_error, threadmed_before_any_flow
from tests.test_conventions import project_flows

ROOT = Path(__file__).resolve().parents[2]
# Every example config and the model that reads it (its comments name the flow taking it as config_file).
EXAMPLE_CONFIGS: dict[str, type[RunConfig]] = {
    "eval.demo.yaml": EvalConfig,
    "eval.example.yaml": EvalConfig,
    "snomed.demo.yaml": SnomedConfig,
    "snomed.example.yaml": SnomedConfig,
    "consult.example.yaml": ConsultConfig,
}
FLOWS = project_flows()


def misspelt(name: str) -> str:
    """The name with its middle letter typed twice: 'conditions' -> 'condittions'."""
    middle = len(name) // 2
    return name[:middle] + name[middle] + name[middle:]


def models_in(annotation: Any) -> Iterator[tuple[tuple[str | int, ...], type[BaseModel]]]:
    """(where, model) of every model a value of this type may hold at its top: itself, a list's or a dict's
    items ('0', 'key'), an optional's model."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield (), annotation
        return
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list:
        for where, model in models_in(arguments[0]):
            yield (0, *where), model
    elif origin is dict:
        for where, model in models_in(arguments[1]):
            yield ("key", *where), model
    else:  # a union (optional) or a plain type
        for argument in arguments:
            yield from models_in(argument)


class Setting(NamedTuple):
    """A field of a settings model inside a flow parameter, and where that model sits in the parameter."""

    flow: str
    parameter: str
    where: tuple[str | int, ...]
    model: type[BaseModel]
    field: str

    def __str__(self) -> str:
        return f"{self.flow}:{'.'.join(map(str, (self.parameter, *self.where, self.field)))}"


def settings_in(
    flow: str, parameter: str, where: tuple[str | int, ...], model: type[BaseModel], seen: frozenset
) -> Iterator[Setting]:
    for field, info in model.model_fields.items():
        yield Setting(flow, parameter, where, model, field)
        for inner_where, inner in models_in(info.annotation):
            if inner not in seen:  # a model holding itself would recurse for ever
                yield from settings_in(flow, parameter, (*where, field, *inner_where), inner, seen | {model})


def flow_settings() -> list[Setting]:
    """Every field of every settings model reachable from every flow's parameters."""
    found = []
    for flow in FLOWS.values():
        for parameter, annotation in typing.get_type_hints(flow.fn).items():
            if parameter == "return":
                continue
            for where, model in models_in(annotation):
                found.extend(settings_in(flow.name, parameter, where, model, frozenset()))
    return found


SETTINGS = flow_settings()


def nested(where: tuple[str | int, ...], leaf: dict[str, Any]) -> Any:
    """`leaf` placed at `where`: a list at an index, a dict at a key."""
    value: Any = leaf
    for step in reversed(where):
        value = [value] if isinstance(step, int) else {step: value}
    return value


def test_every_settings_model_of_every_flow_and_benchmark_is_strict():
    reachable = {setting.model for setting in SETTINGS}
    reachable |= {bench.config_model for bench in BENCHMARKS.values()}
    reachable |= {bench.report_settings for bench in BENCHMARKS.values()}
    # The walk reaches them (a broken walk would pass the check below): a few at every depth.
    names = {model.__qualname__ for model in reachable}
    assert {"EvalConfig", "RunOverrides", "RunnerSettings", "JudgeSpec", "ProviderLimits", "Prices"} <= names
    assert sorted(model.__qualname__ for model in reachable if not issubclass(model, StrictModel)) == []


@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_a_misspelt_key_in_a_flow_parameter_is_refused_at_flow_start_naming_it_and_the_nearest(setting):
    """What Prefect's parameter validation says when a flow run starts (any deployment, the command line)."""
    typo = misspelt(setting.field)
    flow: Flow = next(flow for flow in FLOWS.values() if flow.name == setting.flow)
    with pytest.raises(ParameterTypeError) as refused:
        flow.validate_parameters({setting.parameter: nested(setting.where, {typo: 1})})
    location = ".".join(map(str, (setting.parameter, *setting.where, typo)))
    assert f"\n - {location}: not a setting; did you mean {setting.field}?" in str(refused.value)


def yaml_keys(data: Any, model: type[BaseModel], where: tuple[str | int, ...] = ()) -> Iterator[tuple]:
    """(where, model, field) of every key of `data` that is a field of the model it is read by."""
    for key, value in data.items():
        yield where, model, key
        for inner_where, inner in models_in(model.model_fields[key].annotation):
            for place, item in _at(value, inner_where):
                yield from yaml_keys(item, inner, (*where, key, *place))


def _at(value: Any, where: tuple[str | int, ...]) -> Iterator[tuple[tuple, Any]]:
    """The values of `value` at the places `where` describes (every item of a list or a dict's values)."""
    if not where:
        if isinstance(value, dict):
            yield (), value
        return
    items = enumerate(value) if isinstance(value, list) else value.items() if isinstance(value, dict) else ()
    for index, item in items:
        for place, inner in _at(item, where[1:]):
            yield (index, *place), inner


def with_key_renamed(data: Any, where: tuple[str | int, ...], key: str, new: str) -> Any:
    if not where:
        return {(new if k == key else k): v for k, v in data.items()}
    step, *rest = where
    copy = list(data) if isinstance(data, list) else dict(data)
    copy[step] = with_key_renamed(data[step], tuple(rest), key, new)
    return copy


def test_the_examples_are_every_yaml_config_there_is():
    assert sorted(path.name for path in (ROOT / "deployments").glob("*.yaml")) == sorted(EXAMPLE_CONFIGS)


@pytest.mark.parametrize("name", sorted(EXAMPLE_CONFIGS))
def test_a_misspelt_key_anywhere_in_an_example_config_is_refused_naming_the_file_key_and_nearest(
    name, tmp_path
):
    model = EXAMPLE_CONFIGS[name]
    data = yaml.safe_load((ROOT / "deployments" / name).read_text())
    load_config(ROOT / "deployments" / name, model)  # as written, it is read
    keys = list(yaml_keys(data, model))
    assert len(keys) >= 10
    for where, owner, key in keys:
        typo = misspelt(key)
        path = tmp_path / name
        path.write_text(yaml.safe_dump(with_key_renamed(data, where, key, typo)))
        with pytest.raises(UserError) as refused:
            load_config(path, model)
        # pydantic reports a model's fields first, then the keys it does not know.
        required = [f"{'.'.join(map(str, (*where, key)))}: Field required; "]
        expected = "".join(required if owner.model_fields[key].is_required() else [])
        expected += f"{'.'.join(map(str, (*where, typo)))}: not a setting; did you mean {key}?"
        assert str(refused.value) == f"{path}: {expected}"
        assert refused.value.option == "--config"


def test_the_command_line_refuses_a_misspelt_config_key_before_any_flow_or_call(tmp_path):
    """The issue's case: `condtions:` was read as the default conditions and the dry run planned both."""
    write_dataset(tmp_path / "build")
    demo = (ROOT / "deployments" / "eval.demo.yaml").read_text()
    (tmp_path / "eval.yaml").write_text(demo.replace("\nconditions:", "\ncondtions:"))
    result = threadmed_before_any_flow(
        "evaluate", "--dataset", "build", "--out", "run", "--config", "eval.yaml", "--dry-run", cwd=tmp_path
    )
    assert_usage_error(
        result, "Invalid value for '--config': eval.yaml: condtions: not a setting; did you mean conditions?"
    )
    assert not (tmp_path / "run").exists()
