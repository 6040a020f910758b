import difflib
from typing import Any, get_args, get_origin

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field, ValidationError

from tasks.core.preflight import validation_message
from tasks.core.strict import NEAREST_CUTOFF, StrictModel, bool_as_number, unknown_name


class Sample(StrictModel):
    split: str = "test"
    limit: int | None = Field(None, ge=1)


class Limits(StrictModel, frozen=True):
    max_concurrency: int = 8


class Config(StrictModel):
    models: list[str]
    conditions: list[str] = Field(["baseline"])
    sample: Sample = Sample()
    providers: dict[str, Limits] = Field({})
    runs: list[Sample] = Field([])


class Empty(StrictModel):
    """A model without fields (a report with no settings of its own)."""


@pytest.mark.parametrize(
    ("name", "known", "expected"),
    [
        ("condtions", ["conditions", "models"], "not a setting; did you mean conditions?"),
        ("setings", ["roles", "settings", "split"], "not a setting; did you mean settings?"),
        ("colour", ["models", "sample"], "not a setting; the settings here: models, sample"),
        ("anything", [], "not a setting; there is none here"),
        (3, ["limit"], "not a setting; the settings here: limit"),  # a YAML key may be a number
    ],
)
def test_an_unknown_name_is_worded_with_the_nearest_known_one_or_all_of_them(name, known, expected):
    assert unknown_name(name, known) == expected


def test_the_kind_of_name_is_said():
    assert unknown_name("juge", ["judge", "patient"], "role") == "not a role; did you mean judge?"


def errors(model: type[StrictModel], data: object) -> list[tuple[tuple, str]]:
    with pytest.raises(ValidationError) as raised:
        model.model_validate(data)
    return [(item["loc"], item["msg"]) for item in raised.value.errors()]


def test_an_unknown_key_is_refused_where_it_is_with_the_nearest_field_at_every_depth():
    data = {
        "models": ["m"],
        "condtions": ["oracle"],
        "sample": {"limt": 2},
        "providers": {"openai": {"max_concurency": 1}},
        "runs": [{}, {"splt": "val"}],
    }
    assert sorted(errors(Config, data)) == [
        (("condtions",), "not a setting; did you mean conditions?"),
        (("providers", "openai", "max_concurency"), "not a setting; did you mean max_concurrency?"),
        (("runs", 1, "splt"), "not a setting; did you mean split?"),
        (("sample", "limt"), "not a setting; did you mean limit?"),
    ]


def test_other_errors_keep_their_own_messages_beside_an_unknown_key():
    assert sorted(errors(Config, {"modls": ["m"], "sample": {"limit": 0}})) == [
        (("models",), "Field required"),
        (("modls",), "not a setting; did you mean models?"),
        (("sample", "limit"), "Input should be greater than or equal to 1"),
    ]


def test_a_model_without_fields_refuses_every_key():
    assert errors(Empty, {"seed": 1}) == [(("seed",), "not a setting; there is none here")]


def test_the_command_line_shows_every_error_on_one_line():
    with pytest.raises(ValidationError) as raised:
        Config.model_validate({"models": ["m"], "condtions": [], "sample": {"limt": 2}})
    assert validation_message(raised.value) == (
        "sample.limt: not a setting; did you mean limit?; condtions: not a setting; did you mean conditions?"
    )


def test_valid_settings_and_instances_pass_unchanged():
    config = Config(models=["m"], sample={"limit": 3}, providers={"openai": Limits()})
    assert config.sample == Sample(limit=3)
    assert Config.model_validate(config) is config
    assert Config.model_validate(config.model_dump()) == config


def test_the_schema_refuses_unknown_keys_too():
    """A deployment's parameter schema: the Prefect server refuses a misspelt key when a run is created."""
    schema = Config.model_json_schema()
    assert schema["additionalProperties"] is False
    assert {name: schema["$defs"][name]["additionalProperties"] for name in ("Limits", "Sample")} == {
        "Limits": False,
        "Sample": False,
    }


NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=20)


@given(name=NAMES, known=st.lists(NAMES, max_size=12))
def test_the_suggestion_is_a_known_name_no_other_is_nearer_than(name, known):
    message = unknown_name(name, known)
    assert "\n" not in message and message.startswith("not a setting; ")
    ratios = {candidate: difflib.SequenceMatcher(None, name, candidate).ratio() for candidate in known}
    if message.startswith("not a setting; did you mean "):
        suggested = message.removeprefix("not a setting; did you mean ").removesuffix("?")
        assert ratios[suggested] == max(ratios.values()) >= NEAREST_CUTOFF
    else:
        assert all(ratio < NEAREST_CUTOFF for ratio in ratios.values())


@given(field=NAMES.filter(lambda name: name not in Sample.model_fields), value=st.integers())
def test_any_key_that_is_not_a_field_is_refused_never_dropped(field, value):
    with pytest.raises(ValidationError) as raised:
        Sample.model_validate({field: value})
    assert [(item["type"], item["loc"]) for item in raised.value.errors()] == [("extra_forbidden", (field,))]


class Numbers(StrictModel):
    seed: int = 0
    share: float | None = None
    quotas: dict[str, int] = Field({})
    sizes: tuple[int, float] = (1, 1.0)
    sample: Sample = Sample()
    flag: bool = False
    extra: dict[str, Any] = Field({})


YAML_HINT = "is a boolean, not a number (YAML reads yes/no, on/off, true/false as booleans)"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"seed": True}, [(("seed",), f"True {YAML_HINT}")]),
        ({"share": False}, [(("share",), f"False {YAML_HINT}")]),
        ({"quotas": {"short": 2, "long": True}}, [(("quotas",), f"['long']: True {YAML_HINT}")]),
        ({"sizes": [1, False]}, [(("sizes",), f"[1]: False {YAML_HINT}")]),
        ({"sample": {"limit": True}}, [(("sample", "limit"), f"True {YAML_HINT}")]),
    ],
)
def test_a_boolean_where_a_number_is_expected_is_refused_where_it_is(data, expected):
    """pydantic's lax mode read True as 1: `max_tokens: yes` cut every reply at one token."""
    assert errors(Numbers, data) == expected


def test_a_boolean_for_a_number_is_refused_beside_the_other_errors():
    assert sorted(errors(Numbers, {"seed": True, "sede": 1, "share": "half"})) == [
        (("sede",), "not a setting; did you mean seed?"),
        (("seed",), f"True {YAML_HINT}"),
        (("share",), "Input should be a valid number, unable to parse string as a number"),
    ]


def test_booleans_where_booleans_are_taken_and_numbers_of_any_kind_pass():
    numbers = Numbers(seed=3, share=1, quotas={"short": 0}, sizes=(2, 3), flag=True, extra={"stream": False})
    assert numbers.model_dump() == {
        "seed": 3,
        "share": 1.0,
        "quotas": {"short": 0},
        "sizes": (2, 3.0),
        "sample": {"split": "test", "limit": None},
        "flag": True,
        "extra": {"stream": False},
    }
    assert Numbers.model_validate(numbers.model_dump(mode="json")) == numbers


NUMBER_TYPES = st.recursive(
    st.sampled_from([int, float, int | None, float | str]),
    lambda inner: st.one_of(
        inner.map(lambda item: dict[str, item]),
        inner.map(lambda item: list[item]),
        inner.map(lambda item: tuple[item, ...]),
    ),
    max_leaves=4,
)


def with_bool_inside(annotation: Any, flag: bool) -> tuple[object, tuple]:
    """A value of `annotation` holding `flag` where its innermost number goes, and where that is."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is dict:
        value, where = with_bool_inside(args[1], flag)
        return {"k": value}, ("k", *where)
    if origin in (list, tuple):
        value, where = with_bool_inside(args[0], flag)
        return [value], (0, *where)
    return flag, ()


@given(annotation=NUMBER_TYPES, flag=st.booleans())
def test_a_boolean_is_no_number_at_any_depth(annotation, flag):
    value, where = with_bool_inside(annotation, flag)
    assert bool_as_number(annotation, value) == where
    assert bool_as_number(annotation | bool, flag) is None
