"""A judge's verdict read from its reply: tolerant in form, strict in substance, for any rubric's scale.

A rubric asks for one JSON field (ThReadMed: `SCORE` in 0, 0.5, 1; the consultation's FQR judge:
`correct`, true or false). The grade is read from that field (any JSON object in the reply, at any depth,
or a truncated object whose pair is whole), from a line that is only `FIELD: value`, or from a reply that
is only a grade. Anything else stating the field (`Score: 1/10`, `score: 1 is too generous`, two different
grades, a duplicated key) makes the reply unparseable: a misread grade would be a fake score, while an
unparseable one is asked again, then excluded and counted, never scored 0.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Verdict:
    grade: Any  # a value of the scale (ThReadMed: a float; the FQR judge: a bool)
    reason: str | None


@dataclass(frozen=True)
class Scale:
    """A rubric's answer field and its grades: `grade` maps a stated value (decoded JSON or the text of a
    bare token) to its grade, None when it is off the scale; `token` is a regex of one value as written
    outside JSON."""

    field: str
    grade: Callable[[Any], Any | None]
    token: str
    _patterns: dict[str, re.Pattern[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = re.escape(self.field)
        patterns = {
            # The field in JSON that did not decode (cut off, or an echoed template): whole only when a
            # comma or brace ends its value, so `{"SCORE": 0.` (maybe 0.5) is not read as 0.
            "quoted_field": re.compile(rf"[\"']{name}[\"']\s*:", flags=re.IGNORECASE),
            "quoted_value": re.compile(rf"\s*([\"']?)({self.token})\1\s*[,}}]", flags=re.IGNORECASE),
            # `FIELD: x` (`field = x`, `**Field:** x`) outside JSON: a grade only when x is the whole line.
            "label": re.compile(
                rf"(?<![\"'])\b{name}\b(?![\"'])\**\s*[:=]\**[ \t]*([^\n]*)", flags=re.IGNORECASE
            ),
            "label_value": re.compile(rf"\**({self.token})\.?\**\s*", flags=re.IGNORECASE),
            "bare": re.compile(self.token, flags=re.IGNORECASE),
        }
        object.__setattr__(self, "_patterns", patterns)


_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
_REASON_FIELD = re.compile(r"\breason\b[\"']?\s*[:=]\s*[\"']?([^\"'\n]+)", flags=re.IGNORECASE)

# A grade claim found in a reply: the grade (None when it is off the scale) and the reason given beside it.
Claim = tuple[Any | None, str | None]


def numeric_scale(field_name: str, grades: tuple[float, ...]) -> Scale:
    """A scale of numbers (`1`, `"0.5"`, `1.0` alike); booleans are not numbers here."""

    def grade(value: Any) -> float | None:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return None
        try:
            number = float(value)
        except ValueError:
            return None
        return next((g for g in grades if abs(number - g) < 1e-9), None)

    return Scale(field=field_name, grade=grade, token=_NUMBER)


_BOOLEAN_WORDS = {"true": True, "yes": True, "false": False, "no": False}


def boolean_scale(field_name: str) -> Scale:
    """A yes/no scale: JSON true/false, or the words true, false, yes, no (any case)."""

    def grade(value: Any) -> bool | None:
        if isinstance(value, bool):
            return value
        return _BOOLEAN_WORDS.get(value.strip().lower()) if isinstance(value, str) else None

    return Scale(field=field_name, grade=grade, token=r"\b(?:true|false|yes|no)\b")


def parse_verdict(text: str | None, scale: Scale) -> Verdict | None:
    """The reply's grade when every grade it states is the same grade of `scale`, else None."""
    if not text or not text.strip():
        return None
    objects, prose = _split_json(text)
    claims = [claim for obj in objects for claim in _json_claims(obj, scale)] + _prose_claims(prose, scale)
    if not claims and not objects:
        claims = [(_bare_grade(text, scale), None)]
    grades = [grade for grade, _ in claims]
    if None in grades or len(set(grades)) != 1:
        return None
    reason = next((reason for _, reason in reversed(claims) if reason is not None), None)
    return Verdict(grades[0], reason)


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its key-value pairs, so that a duplicated key is seen rather than overwritten."""


def _split_json(text: str) -> tuple[list[_Pairs], str]:
    """The JSON objects in `text` (outermost only), and the text around them."""
    decoder = json.JSONDecoder(object_pairs_hook=_Pairs)
    objects, prose, position = [], [], 0
    for brace in re.finditer(r"\{", text):
        if brace.start() < position:
            continue
        try:
            value, end = decoder.raw_decode(text, brace.start())
        except json.JSONDecodeError:
            continue
        objects.append(value)
        prose.append(text[position : brace.start()])
        position = end
    prose.append(text[position:])
    return objects, "\n".join(prose)


def _json_claims(value: Any, scale: Scale) -> list[Claim]:
    """Every field of the scale in a decoded JSON value, with the `reason` of the same object."""
    if isinstance(value, list) and not isinstance(value, _Pairs):
        return [claim for item in value for claim in _json_claims(item, scale)]
    if not isinstance(value, _Pairs):
        return []
    fields = [(str(key).strip().lower(), item) for key, item in value]
    reason = next((str(item) for key, item in fields if key == "reason" and item is not None), None)
    claims: list[Claim] = [(scale.grade(item), reason) for key, item in fields if key == scale.field.lower()]
    return claims + [claim for _, item in fields for claim in _json_claims(item, scale)]


def _prose_claims(prose: str, scale: Scale) -> list[Claim]:
    """Grade claims outside the decoded JSON objects; a claim that is not a whole grade counts as None."""
    patterns = scale._patterns
    found = [patterns["quoted_value"].match(prose, f.end()) for f in patterns["quoted_field"].finditer(prose)]
    grades = [scale.grade(value.group(2)) if value else None for value in found]
    for label in patterns["label"].finditer(prose):
        value = patterns["label_value"].fullmatch(label.group(1))
        grades.append(scale.grade(value.group(1)) if value else None)
    reason = _REASON_FIELD.search(prose)
    return [(grade, reason.group(1).strip() if reason else None) for grade in grades]


def _bare_grade(text: str, scale: Scale) -> Any | None:
    """The grade of a reply that is nothing but a grade (`1`, `0.5.`, a fenced `true`), else None."""
    bare = text.strip().removeprefix("```").removesuffix("```").strip().removesuffix(".")
    return scale.grade(bare) if scale._patterns["bare"].fullmatch(bare) else None
