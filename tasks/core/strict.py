"""Settings that refuse what they do not know: a misspelt key is an error naming it and the nearest name.

Every settings model (YAML configs, flow parameters and the objects inside them) derives from
`StrictModel`. pydantic's `extra="forbid"` refuses an unknown key, and puts `additionalProperties: false`
in a deployment's parameter schema, so that the Prefect server refuses it when a flow run is created. The
message of each such error names the nearest known name (difflib), whoever reads it: the command line,
Prefect's parameter validation when a flow run starts, a flow's own checks (`unknown_name`).

A boolean where a number is expected is refused too (`bool_not_number`). YAML reads `yes`, `no`, `on`,
`off`, `true` and `false` as booleans, and pydantic's lax mode would take True as 1 and False as 0:
`max_tokens: yes` would cut every reply at one token. Lax mode stays otherwise (an int for a float field, a
JSON-dumped path read back), so only this one reading is closed, at every depth of a field (a quota in
`sample.quotas`).
"""

import difflib
import functools
import types
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, Self, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

# How alike (difflib's ratio) a known name must be to be offered; difflib's own default.
NEAREST_CUTOFF = 0.6
# pydantic's error type for a key that a model with extra="forbid" does not have.
EXTRA_FORBIDDEN = "extra_forbidden"
# The error type of a boolean given where a number is expected.
BOOL_NOT_NUMBER = "bool_not_number"


def unknown_name(name: object, known: Iterable[str], kind: str = "setting") -> str:
    """Why `name` is refused and what was likely meant: 'not a setting; did you mean conditions?'; the known
    names when none is near (or 'there is none')."""
    names = sorted(set(known))
    nearest = difflib.get_close_matches(str(name), names, n=1, cutoff=NEAREST_CUTOFF)
    if nearest:
        return f"not a {kind}; did you mean {nearest[0]}?"
    if not names:
        return f"not a {kind}; there is none here"
    return f"not a {kind}; the {kind}s here: {', '.join(names)}"


class StrictModel(BaseModel):
    """A settings model: an unknown key is an error whose message names the nearest field, a boolean for a
    number is an error (`bool_not_number`)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="wrap")
    @classmethod
    def _check_names_and_numbers(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        # Looked for first: pydantic's lax mode reads a boolean as a number without an error.
        refusals = _bools_as_numbers(cls, data)
        try:
            model = handler(data)
        except ValidationError as error:
            if not refusals and not any(_is_own_extra_key(item) for item in error.errors()):
                raise  # nested models' errors carry their own messages already
            raise _with_nearest_fields(error, cls, refusals) from None
        if refusals:
            raise ValidationError.from_exception_data(cls.__name__, refusals)
        return model


def _is_own_extra_key(item: Any) -> bool:
    """An unknown key of this model itself (not of a model inside it: those have longer locations)."""
    return item["type"] == EXTRA_FORBIDDEN and len(item["loc"]) == 1


def _with_nearest_fields(
    error: ValidationError, model: type[BaseModel], refusals: list[InitErrorDetails]
) -> ValidationError:
    """`error` with each unknown key of `model` worded by `unknown_name` and `refusals` in place of the errors
    at their fields; every other message kept as is."""
    refused = {refusal["loc"] for refusal in refusals}
    items = list(refusals)
    for item in error.errors():
        if item["loc"][:1] in refused:
            continue
        message = unknown_name(item["loc"][0], model.model_fields) if _is_own_extra_key(item) else item["msg"]
        items.append(
            {"type": PydanticCustomError(item["type"], message), "loc": item["loc"], "input": item["input"]}
        )
    return ValidationError.from_exception_data(error.title, items)


def _bools_as_numbers(model: type[BaseModel], data: Any) -> list[InitErrorDetails]:
    """An error for each field of `model` in `data` (a dict of settings) that has a boolean for a number."""
    if not isinstance(data, dict):
        return []  # a model instance, already validated
    refusals: list[InitErrorDetails] = []
    for name, annotation in _number_fields(model).items():
        if name not in data or (where := bool_as_number(annotation, data[name])) is None:
            continue
        item = data[name]
        for key in where:
            item = item[key]
        inside = "".join(f"[{key!r}]" for key in where) + ": " if where else ""
        message = (
            f"{inside}{item} is a boolean, not a number (YAML reads yes/no, on/off, true/false as booleans)"
        )
        refusals.append(
            {"type": PydanticCustomError(BOOL_NOT_NUMBER, message), "loc": (name,), "input": data[name]}
        )
    return refusals


def bool_as_number(annotation: Any, value: Any) -> tuple[Any, ...] | None:
    """Where in `value` a boolean stands for a number of `annotation`: () for `value` itself, the keys and
    indexes down to it inside dicts, lists and tuples; None when there is none. A boolean is a number's
    only where the type takes an int or a float and no bool (nor Any, nor a Literal of booleans)."""
    if not isinstance(value, bool | dict | list | tuple):
        return None  # the usual setting: a number, a string, a model
    members = _union_members(annotation)
    if isinstance(value, bool):
        takes_number = any(member in (int, float) for member in members)
        return () if takes_number and not any(_takes_bool(member) for member in members) else None
    for member in members:
        for key, item, item_type in _items_with_types(member, value):
            if (where := bool_as_number(item_type, item)) is not None:
                return (key, *where)
    return None


@functools.cache
def _number_fields(model: type[BaseModel]) -> dict[str, Any]:
    """The fields of `model` whose type holds a number somewhere, with their types: only they are checked."""
    fields = model.model_fields.items()
    return {name: field.annotation for name, field in fields if _holds_number(field.annotation)}


def _holds_number(annotation: Any) -> bool:
    if annotation in (int, float):
        return True
    return any(_holds_number(arg) for arg in get_args(annotation) if arg is not Ellipsis)


def _union_members(annotation: Any) -> list[Any]:
    """The types of `annotation` a value may be: each member of a union, an Annotated type's own type."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _union_members(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [member for arg in get_args(annotation) for member in _union_members(arg)]
    return [annotation]


def _takes_bool(member: Any) -> bool:
    if get_origin(member) is Literal:
        return any(isinstance(choice, bool) for choice in get_args(member))
    return member in (bool, Any, object)


def _items_with_types(container_type: Any, value: Any) -> list[tuple[Any, Any, Any]]:
    """(key or index, item, its type) of each item of `value` that `container_type` types; none when the
    type is no dict, list, tuple or set type of `value`'s kind (a model checks its own fields)."""
    origin, args = get_origin(container_type), get_args(container_type)
    if isinstance(value, dict) and origin in (dict, Mapping) and len(args) == 2:
        return [(key, item, args[1]) for key, item in value.items()]
    if isinstance(value, list | tuple) and origin in (list, tuple, set, frozenset):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return [
                (index, item, item_type)
                for index, (item, item_type) in enumerate(zip(value, args, strict=False))
            ]
        return [(index, item, args[0]) for index, item in enumerate(value)] if args else []
    return []
