"""Settings that refuse what they do not know: a misspelt key is an error naming it and the nearest name.

Every settings model (YAML configs, flow parameters and the objects inside them) derives from
`StrictModel`. pydantic's `extra="forbid"` refuses an unknown key, and puts `additionalProperties: false`
in a deployment's parameter schema, so that the Prefect server refuses it when a flow run is created. The
message of each such error names the nearest known name (difflib), whoever reads it: the command line,
Prefect's parameter validation when a flow run starts, a flow's own checks (`unknown_name`).
"""

import difflib
from collections.abc import Iterable
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ModelWrapValidatorHandler, ValidationError, model_validator
from pydantic_core import PydanticCustomError

# How alike (difflib's ratio) a known name must be to be offered; difflib's own default.
NEAREST_CUTOFF = 0.6
# pydantic's error type for a key that a model with extra="forbid" does not have.
EXTRA_FORBIDDEN = "extra_forbidden"


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
    """A settings model: an unknown key is an error whose message names the nearest field."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="wrap")
    @classmethod
    def _name_nearest_field(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        try:
            return handler(data)
        except ValidationError as error:
            if not any(_is_own_extra_key(item) for item in error.errors()):
                raise  # nested models' errors carry their own messages already
            raise _with_nearest_fields(error, cls) from None


def _is_own_extra_key(item: Any) -> bool:
    """An unknown key of this model itself (not of a model inside it: those have longer locations)."""
    return item["type"] == EXTRA_FORBIDDEN and len(item["loc"]) == 1


def _with_nearest_fields(error: ValidationError, model: type[BaseModel]) -> ValidationError:
    """`error` with each unknown key of `model` worded by `unknown_name`; every other message kept as is."""
    items = []
    for item in error.errors():
        message = unknown_name(item["loc"][0], model.model_fields) if _is_own_extra_key(item) else item["msg"]
        items.append(
            {"type": PydanticCustomError(item["type"], message), "loc": item["loc"], "input": item["input"]}
        )
    return ValidationError.from_exception_data(error.title, items)
