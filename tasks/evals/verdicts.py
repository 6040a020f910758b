"""A judge's verdict read from its reply: tolerant in form, strict in substance, for any rubric's scale.

A rubric asks for one JSON field (ThReadMed: `SCORE` in 0, 0.5, 1; the consultation's FQR judge:
`correct`, true or false). The grade is read from that field (any JSON object in the reply, at any depth,
or a truncated object whose pair is whole), from a line that is only `FIELD: value`, or from a reply that
is only a grade. Anything else stating the field (`Score: 1/10`, `score: 1 is too generous`, two different
grades, a duplicated key) makes the reply unparseable: a misread grade would be a fake score, while an
unparseable one is asked again, then excluded and counted, never scored 0.

A grade stated any other way outside the JSON must agree with it too: under the field's name or another
name for a grade (`Grade: 0`, `Score (0-1): 0`, `Score for turn 2: 0`, `score 0`, `<score>0</score>`), or
as the rubric's word for a grade (`The answer is incorrect.`). The reply is read after Unicode NFKC
normalisation, so a full-width `ＳＣＯＲＥ： ０` is `SCORE: 0`. A clinical score in the judge's notes that
happens to be on the scale (`Wells score 0`) costs a re-ask, never a wrong grade.
"""

import json
import re
import unicodedata
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
    # The rubric's words for its grades (`incorrect` is 0.0 or false), as in "The answer is incorrect."
    grade_words: dict[str, Any] = field(default_factory=dict)
    # Whether "is not <word>" states the opposite grade (true only on a yes/no scale).
    negatable: bool = False
    _patterns: dict[str, re.Pattern[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = re.escape(self.field)
        words = "|".join(sorted(map(re.escape, self.grade_words), key=len, reverse=True)) or "(?!)"
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
            "stated": re.compile(
                rf"(?<![\w\"'])(?P<name>{name}|{_GRADE_NAMES})(?![\w\"'])\**"
                # Between a name and its grade: the scale (`(0-1)`, `[0/0.5/1]`) or what is graded
                # (`for turn 2`, only before a colon)
                r"(?:[ \t]*(?:\([^()\n]{0,40}\)|\[[^\[\]\n]{0,40}\]|for\b[^:=\n]{0,40}?(?=\**[ \t]*[:=])))?"
                rf"\**[ \t]*(?P<separator>[:=>]|\bis\b|\bof\b|)\**[ \t]*(?P<value>{self.token})"
                r"(?P<other_scale>[ \t]*(?:/|\bout[ \t]+of\b)[ \t]*\d)?",
                flags=re.IGNORECASE,
            ),
            "grade_word": re.compile(
                r"\b(?:answer|reply|response)[ \t]+(?:is|was)(?P<negation>[ \t]+not|n't)?[ \t]+"
                r"(?:(?:entirely|fully|completely|medically|clinically|factually)[ \t]+)?"
                # A whole clause ("The answer is incorrect."), not "is correct about the dose but ..."
                rf"(?P<word>{words})[ \t]*(?:[.;!]|$)",
                flags=re.IGNORECASE | re.MULTILINE,
            ),
        }
        object.__setattr__(self, "_patterns", patterns)


_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)"
# Names a judge may state its grade under besides the rubric's field.
_GRADE_NAMES = "score|grade|rating|verdict"
_REASON_FIELD = re.compile(r"\breason\b[\"']?\s*[:=]\s*[\"']?([^\"'\n]+)", flags=re.IGNORECASE)

# A grade claim found in a reply: the grade (None when it is off the scale) and the reason given beside it.
Claim = tuple[Any | None, str | None]


def numeric_scale(
    field_name: str, grades: tuple[float, ...], grade_words: dict[str, float] | None = None
) -> Scale:
    """A scale of numbers (`1`, `"0.5"`, `1.0` alike); booleans are not numbers here."""

    def grade(value: Any) -> float | None:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return None
        try:
            number = float(value)
        except ValueError:
            return None
        return next((g for g in grades if abs(number - g) < 1e-9), None)

    return Scale(field=field_name, grade=grade, token=_NUMBER, grade_words=grade_words or {})


_BOOLEAN_WORDS = {"true": True, "yes": True, "false": False, "no": False}


def boolean_scale(field_name: str, grade_words: dict[str, bool] | None = None) -> Scale:
    """A yes/no scale: JSON true/false, or the words true, false, yes, no (any case)."""

    def grade(value: Any) -> bool | None:
        if isinstance(value, bool):
            return value
        return _BOOLEAN_WORDS.get(value.strip().lower()) if isinstance(value, str) else None

    return Scale(
        field=field_name,
        grade=grade,
        token=r"\b(?:true|false|yes|no)\b",
        grade_words=grade_words or {},
        negatable=True,
    )


def parse_verdict(text: str | None, scale: Scale) -> Verdict | None:
    """The reply's grade when every grade it states is the same grade of `scale`, else None."""
    if not text or not text.strip():
        return None
    objects, prose = _split_json(unicodedata.normalize("NFKC", text))
    claims = [claim for obj in objects for claim in _json_claims(obj, scale)] + _prose_claims(prose, scale)
    if not claims and not objects:
        claims = [(_bare_grade(prose, scale), None)]
    grades = [grade for grade, _ in claims] + _stated_grades(prose, scale)
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


def _stated_grades(prose: str, scale: Scale) -> list[Any | None]:
    """The grades stated in prose under a grade's name or in the rubric's words; None for a grade stated on
    another scale (`score: 8/10`, `Grade: 5`). An off-scale number after a bare name (`Wells score of 2`)
    is a clinical score, not a grade, and is left out."""
    grades: list[Any | None] = []
    for stated in scale._patterns["stated"].finditer(prose):
        named_by_label = stated["separator"] in (":", "=", ">")
        if (
            not named_by_label
            and stated["name"].lower() != scale.field.lower()
            and stated["separator"] != "is"
        ):
            continue  # "a grade 1 sprain", "rating of 2 stars": not a grade of the rubric
        grade = None if stated["other_scale"] else scale.grade(stated["value"])
        if grade is not None or named_by_label or stated["other_scale"]:
            grades.append(grade)
    for stated in scale._patterns["grade_word"].finditer(prose):
        grade = scale.grade_words[stated["word"].lower()]
        if not stated["negation"]:
            grades.append(grade)
        elif scale.negatable:
            grades.append(not grade)
    return grades


def _bare_grade(text: str, scale: Scale) -> Any | None:
    """The grade of a reply that is nothing but a grade (`1`, `0.5.`, a fenced `true`), else None."""
    bare = text.strip().removeprefix("```").removesuffix("```").strip().removesuffix(".")
    return scale.grade(bare) if scale._patterns["bare"].fullmatch(bare) else None
