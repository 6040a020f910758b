"""A judge's verdict read from its reply: tolerant in form, strict in substance, for any rubric's scale.

A rubric asks for one JSON field (ThReadMed: `SCORE` in 0, 0.5, 1; the consultation's FQR judge:
`correct`, true or false). The grade is read from that field (any JSON object in the reply, at any depth,
or an object left unclosed whose pair is whole), from a line that is only `FIELD: value`, or from a reply
that is only a grade. Anything else stating the field (`Score: 1/10`, `score: 1 is too generous`, a number
float() reads but prose does not write, `"0_1"` or `"1e0"`, two different grades, a duplicated key) makes
the reply unparseable: a misread grade would be a fake score, while an unparseable one is asked again,
then excluded and counted, never scored 0.

A grade stated any other way must agree with it too, and is never the grade alone: under the field's name
or another name for a grade (`Grade: 0`, `Score (0-1): 0`, `Score for turn 2: 0`, `score 0`,
`<score>0</score>`, `the score should be 0.5`, `Revised score -> 0`, `Verdict: incorrect`), a number or
a true or false off the scale (`Score: 0` beside `"correct": true`, `Verdict: false` beside `"SCORE":
1`), as the rubric's word for a grade (`The answer is incorrect.`), alone on a line (`0`, `**Incorrect**`),
or in the JSON under another key naming a grade (`"REVISED_SCORE": 0`, `"final_grade": 0`,
`"revised_correct": false`, `"correctness": false`, a list's items: `"revised_score": [0]`). JSON text is
read as its prose is, as the line `<key>: <text>`: `"final_score": "0/1"` is a grade on another scale and
a reason `"The answer is incorrect."` states a grade, as they do on lines of prose. On a yes/no scale
every true or false in a JSON value holding the field is a grade too, whatever its key: the rubric's grade
holds all its criteria at once, so `"intent_matched": false` beside `"correct": true` contradicts it (a
JSON value without the field, a plan the judge quotes, is not read for them). A JSON value holding an
object is read apart from the prose around it, as a line of its own. The reply is read after Unicode NFKC
normalisation, so a full-width `ＳＣＯＲＥ： ０` is `SCORE: 0`. A clinical score in the judge's notes that
happens to be on the scale (`Wells score 0`) costs a re-ask, never a wrong grade.

JSON that does not decode (a trailing comma, single quotes, a `//` comment, a line break inside a string,
a missing closing brace) is read key by key as decoded JSON is: the field as above, and every other key in
either quotes with its value (text, a list of plain values, a number or boolean whole when a comma or
bracket ends it), so `{'SCORE': 1.0, 'final_grade': 0}` is conflicting, and a key naming a grade whose
value is not read whole (cut off, a template's placeholder, text left open) is off the scale. On a yes/no
scale every boolean in it is a grade: no object can be told apart there. Such JSON is not unparseable as
a whole: an unclosed object whose pairs are all whole (`{"SCORE": 0.5, "REASON": "No red flag."`) was
always a verdict, and reading every key leaves no grade in it unread, so refusing it would only cost
re-asks. The JSON form and the prose form of the same statements read alike, decoded or not.

Every reply gets a `Verdict` or an `Unparseable` naming why, in time linear in its length: the JSON is
found by `tasks/core/json_text.scan_json` (a reply whose scan stopped at its token budget, or that nests
JSON deeper than it decodes, is unparseable: a value not read might state a grade), each pattern below
runs once over the text (a label's value once over its line) and once over the JSON's text as the lines
`<key>: <text>`, its repeats possessive or bounded, so no input makes it backtrack, and each distinct value
is graded once. A reply cut at the judge's max_tokens (finish_reason 'length') is unparseable whatever it
reads as: the grade read may be the first of two, and the reason is cut off.

A grade stated word for word as the graded answer states one (the same JSON object holding the field, or
the same `FIELD: value` line) is unparseable too: a judge that quotes a grade injected into the answer
and declines to grade cannot be told from one that gives it. An honest judge's JSON with its reason never
matches; a bare `SCORE: 1` beside an answer's "Centor score: 1" costs a re-ask. The answer is read as the
reply is, in one more linear pass.
"""

import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tasks.core.json_text import scan_json

# Why a reply holds no grade: cut at max_tokens; no text; more brackets and strings than the JSON scan
# reads (json_text.MAX_TOKENS) or text that normalisation more than doubles; JSON nested deeper than the
# scan decodes (json_text.MAX_DEPTH); no grade in the rubric's form; a grade that is not a whole value of
# the scale (off it, on another scale, cut mid-number, a template's placeholder); grades that disagree; a
# grade stated word for word as the graded answer states one (or an answer too long to tell).
UnparseableReason = Literal[
    "cut", "empty", "too_long", "too_deep", "no_grade", "off_scale", "conflicting", "quoted"
]
# NFKC can lengthen a text 18-fold (the ligature U+FDFA): no prose a judge writes grows by half as much, so
# a reply that grows more is not read, nor one with a longer run of non-ASCII characters than a judge's
# reply holds (a run is normalised whole); reading stays linear in the reply as received.
MAX_NORMALISED_GROWTH = 2
MAX_NON_ASCII_RUN = 50_000
# The parse status of a judgment whose judge reply was cut at max_tokens (every other unparseable reply's
# is 'unparseable'): its count, `n_judge_cut`, is shown beside the unparseable count of every benchmark.
JUDGE_CUT = "judge_cut"


@dataclass(frozen=True)
class Verdict:
    grade: Any  # a value of the scale (ThReadMed: a float; the FQR judge: a bool)
    reason: str | None


@dataclass(frozen=True)
class Unparseable:
    """A reply from which no grade can be scored, and why (`UnparseableReason`)."""

    reason: UnparseableReason

    @property
    def status(self) -> str:
        """The judgment's parse status: JUDGE_CUT for a cut reply, else 'unparseable'."""
        return JUDGE_CUT if self.reason == "cut" else "unparseable"


@dataclass(frozen=True)
class Scale:
    """A rubric's answer field and its grades: `grade` maps a stated value (decoded JSON or the text of a
    bare token) to its grade, None when it is off the scale; `token` is a regex of one value as written
    outside JSON, whose repeats are possessive (it is matched inside patterns that must not backtrack)."""

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
        # Each pattern starts at a name or a quote and, where it fails, has read only runs of blanks, stars
        # and a bounded window after it; where it matches, the next search starts after the match: one pass.
        patterns = {
            # The field in JSON that did not decode (cut off, or an echoed template), with its value: whole
            # only when a comma or brace ends it, so `{"SCORE": 0.` (maybe 0.5) is not read as 0.
            "quoted_field": re.compile(
                rf"[\"']{name}[\"']\s*+:(?:\s*+([\"']?+)({self.token})\1\s*+[,}}])?", flags=re.IGNORECASE
            ),
            # `FIELD: x` (`field = x`, `**Field:** x`) outside JSON: a grade only when x is the whole line.
            "label": re.compile(
                rf"(?<![\"'])\b{name}\b(?![\"'])\**+\s*+[:=]\**+[ \t]*+([^\n]*+)", flags=re.IGNORECASE
            ),
            "label_value": re.compile(rf"\**+({self.token})\.?\**+\s*+", flags=re.IGNORECASE),
            "bare": re.compile(self.token, flags=re.IGNORECASE),
            # A line that is only a grade (`1`, `**No.**`) or the rubric's word for one (`**Incorrect**`): a
            # grade stated beside the others, which must agree with them (`bare` reads a reply that is only
            # a grade).
            "bare_line": re.compile(
                rf"^[ \t]*+\**+(?:(?P<value>{self.token})|(?P<negation>not[ \t]++)?+(?P<word>{words}))"
                r"\.?\**+[ \t]*+$",
                flags=re.IGNORECASE | re.MULTILINE,
            ),
            "stated": re.compile(
                rf"(?<![\w\"'])(?P<name>{name}|{_GRADE_NAMES})(?![\w\"'])\**+"
                # Between a name and its grade: the scale (`(0-1)`, `[0/0.5/1]`) or what is graded
                # (`for turn 2`, only before a colon)
                r"(?:[ \t]*+(?:\([^()\n]{0,40}+\)|\[[^\[\]\n]{0,40}+\]"
                r"|for\b[^:=\n]{0,40}?(?=\*{0,40}+[ \t]{0,40}+[:=])))?"
                rf"\**+[ \t]*+(?P<separator>{_SEPARATORS}|\bis\b|\bof\b|)\**+[ \t]*+"
                # a true or false is no number: off a numeric scale, as it is in the JSON
                rf"(?P<value>{self.token}|{_NUMBER}|\b(?:true|false)\b)"
                r"(?P<other_scale>[ \t]*+(?:/|\bout[ \t]++of\b)[ \t]*+\d)?",
                flags=re.IGNORECASE,
            ),
            "grade_word": re.compile(
                r"\b(?:answer|reply|response)[ \t]++(?:is|was)(?P<negation>[ \t]++not|n't)?[ \t]++"
                r"(?:(?:entirely|fully|completely|medically|clinically|factually)[ \t]++)?"
                # A whole clause ("The answer is incorrect."), not "is correct about the dose but ..."
                rf"(?P<word>{words})[ \t]*+(?:[.;!]|$)",
                flags=re.IGNORECASE | re.MULTILINE,
            ),
            # The rubric's word for a grade under a grade's name (`Verdict: incorrect`, `Grade: partially
            # correct.`), a whole clause.
            "stated_word": re.compile(
                rf"(?<![\w\"'])(?:{name}|{_GRADE_NAMES})(?![\w\"'])\**+[ \t]*+(?:{_SEPARATORS})\**+[ \t]*+"
                rf"(?P<negation>not[ \t]++)?(?P<word>{words})\**+[ \t]*+(?:[.;!]|$)",
                flags=re.IGNORECASE | re.MULTILINE,
            ),
        }
        object.__setattr__(self, "_patterns", patterns)


_NUMBER = r"[-+]?+(?:\d++(?:\.\d*+)?+|\.\d++)"
_WHOLE_NUMBER = re.compile(_NUMBER)
# Names a judge may state its grade under besides the rubric's field.
_GRADE_NAMES = "score|grade|rating|verdict|correctness"
# What joins a grade's name to the grade it states as a label would (`Score: 0`, `score -> 0`, `score - 0`,
# `the score should be 0`, `revise the score to 0`); `is` and `of` join it only to a grade of the scale.
_SEPARATORS = r"[:=>]|->|[-\u2013\u2014](?=[ \t])|\bto\b|\b(?:should|would|must)[ \t]++be\b"
# Where a JSON key splits into words: `REVISED_SCORE`, `final-grade`, `finalScore`.
_KEY_WORD_BREAK = re.compile(r"[^A-Za-z0-9]++|(?<=[a-z0-9])(?=[A-Z])")
# A quoted key in JSON that did not decode (a trailing comma, single quotes, a comment, a line break in a
# string, a missing brace) and its value: text in either quotes (closed or not), a list of plain values, an
# object, or a bare value, whole when a comma or a bracket ends it. A key is a bounded window that holds no
# quote, so each run of blanks after one is read by one attempt: one pass.
_QUOTED_KEY = re.compile(
    r"""(?:"(?P<double_key>[^"\n]{1,60}+)"|'(?P<single_key>[^'\s]{1,60}+)')\s*+:\s*+"""
    r"""(?:"(?P<double>[^"\n]*+)(?P<double_end>")?+|'(?P<single>[^'\n]*+)(?P<single_end>')?+"""
    r"""|\[(?P<items>[^\[\]{}\n]{0,200}+)(?P<items_end>\])?+|(?P<object>\{)"""
    r"""|(?P<bare>[^\s,:\[\]{}"']{1,40}+))?+(?P<whole>\s*+[,\]}])?+"""
)
# A value in JSON that did not decode that was not read whole: under a key naming a grade, no grade.
_UNREAD = object()
_REASON_FIELD = re.compile(r"\breason\b[\"']?+\s*+[:=]\s*+[\"']?+([^\"'\n]++)", flags=re.IGNORECASE)

# A grade claim found in JSON: the grade (None when it is off the scale) and the reason given beside it.
Claim = tuple[Any | None, str | None]


def numeric_scale(
    field_name: str, grades: tuple[float, ...], grade_words: dict[str, float] | None = None
) -> Scale:
    """A scale of numbers (`1`, `"0.5"`, `1.0` alike); booleans are not numbers here, nor is text that
    float() reads but no judge writes as a grade (`"0_1"`, `"1e0"`, `"inf"`): text is a number as prose
    writes one."""

    def grade(value: Any) -> float | None:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return None
        if isinstance(value, str) and not _WHOLE_NUMBER.fullmatch(value.strip()):
            return None
        try:
            number = float(value)
        except OverflowError:  # an integer past a float's range (JSON decodes up to 4,300 digits)
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


def read_verdict(
    text: str | None, scale: Scale, finish_reason: str | None = None, graded: str | None = None
) -> Verdict | Unparseable:
    """The reply's grade when every grade it states is the same grade of `scale`, else why not.

    `finish_reason` is the call's (OpenAI's names, as litellm maps every provider's): 'length' means the
    reply was cut at max_tokens, and a cut reply is unparseable whatever it reads as. `graded` is the answer
    the judge graded: a reply stating its grade word for word as the answer states one (`_statements`) is
    unparseable, 'quoted', since a judge quoting a grade injected into the answer ("The answer contains
    {"SCORE": 1.0}. I decline to grade it.") cannot be told from one giving that grade."""
    if finish_reason == "length":
        return Unparseable("cut")
    if not text or not text.strip():
        return Unparseable("empty")
    normalised = _normalised(text)
    if normalised is None:
        return Unparseable("too_long")
    text = normalised
    scan = scan_json(text, object_pairs_hook=_Pairs)
    if scan.stopped_at is not None:
        return Unparseable("too_long")
    if scan.too_deep:
        return Unparseable("too_deep")
    objects, pieces = _split_json(text, scan.found)
    prose = "\n".join(pieces)
    claims_of = [_json_claims(obj, scale) for obj in objects]
    json_claims = [claim for claims in claims_of for claim in claims]
    claimed = _prose_grades(prose, scale)
    reasons = [reason for _, reason in json_claims]
    if claimed and (reason_field := _REASON_FIELD.search(prose)):
        reasons.append(reason_field.group(1).strip())
    if not json_claims and not claimed and not objects and (bare := _bare_grade(prose, scale)) is not None:
        claimed = {bare}
    if not json_claims and not claimed:
        return Unparseable("no_grade")
    stated = _stated_grades(prose, scale) | _json_stated(objects, claims_of, pieces, scale)
    grades = {grade for grade, _ in json_claims} | claimed | stated
    if None in grades:
        return Unparseable("off_scale")
    if len(grades) != 1:
        return Unparseable("conflicting")
    if graded is not None:
        answer_statements = _graded_statements(graded, scale)
        if answer_statements is None or not answer_statements.isdisjoint(_statements(objects, prose, scale)):
            return Unparseable("quoted")
    return Verdict(grades.pop(), next((reason for reason in reversed(reasons) if reason is not None), None))


def parse_verdict(text: str | None, scale: Scale) -> Verdict | None:
    """The reply's grade as `read_verdict` reads it, None when it has none (whatever the reason)."""
    verdict = read_verdict(text, scale)
    return verdict if isinstance(verdict, Verdict) else None


# A run of non-ASCII characters and the ASCII one before it (a base its combining marks compose with): NFKC
# of each such run, the ASCII between them kept, is NFKC of the whole text, as no ASCII character composes
# with one before it.
_NON_ASCII_RUN = re.compile(r"[\x00-\x7f]?[^\x00-\x7f]++")


def _normalised(text: str) -> str | None:
    """NFKC of `text`, run by run; None once it has grown past MAX_NORMALISED_GROWTH times the text, or at
    a run of more than MAX_NON_ASCII_RUN characters."""
    if unicodedata.is_normalized("NFKC", text):
        return text
    budget = MAX_NORMALISED_GROWTH * len(text)
    pieces, position = [], 0
    for run in _NON_ASCII_RUN.finditer(text):
        if run.end() - run.start() > MAX_NON_ASCII_RUN:
            return None
        pieces += [text[position : run.start()], unicodedata.normalize("NFKC", run.group())]
        budget -= len(pieces[-1]) + len(pieces[-2])
        if budget < 0:
            return None
        position = run.end()
    pieces.append(text[position:])  # the ASCII after the last run counts too: it may pass the budget alone
    return "".join(pieces) if budget >= len(pieces[-1]) else None


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its key-value pairs, so that a duplicated key is seen rather than overwritten."""


def _holds_object(value: Any) -> bool:
    if isinstance(value, _Pairs):
        return True
    return isinstance(value, list) and any(map(_holds_object, value))


def _split_json(text: str, found: tuple[Any, ...]) -> tuple[list[Any], list[str]]:
    """The JSON values in `text` that hold an object (outermost only), and the pieces of text before, between
    and after them (the prose, read joined by line breaks): a list of plain values (`Score [0, 0.5, 1]: 0`)
    stays prose, to be read there."""
    objects, pieces, position = [], [], 0
    for value, start, end in found:
        if _holds_object(value):
            objects.append(value)
            pieces.append(text[position:start])
            position = end
    pieces.append(text[position:])
    return objects, pieces


def _statements(objects: list[Any], prose: str, scale: Scale) -> set[str]:
    """Where a text states the scale's field, each in one form: a JSON object holding it (at any depth, as
    canonical JSON) and a label or quoted field outside JSON, from the field's name to the end of its line
    (lower case, blanks collapsed)."""
    found = {json.dumps(holder) for value in objects for holder in _field_holders(value, scale)}
    for pattern in ("label", "quoted_field"):
        found |= {
            " ".join(match.group(0).lower().split()) for match in scale._patterns[pattern].finditer(prose)
        }
    return found


def _graded_statements(graded: str, scale: Scale) -> set[str] | None:
    """The graded answer's `_statements`, read as a reply is; None when it cannot be read whole."""
    normalised = _normalised(graded)
    if normalised is None:
        return None
    scan = scan_json(normalised, object_pairs_hook=_Pairs)
    if scan.stopped_at is not None:
        return None  # (JSON nested too deep to decode does not matter: a reply quoting it is too deep too)
    objects, pieces = _split_json(normalised, scan.found)
    return _statements(objects, "\n".join(pieces), scale)


def _field_holders(value: Any, scale: Scale) -> list[Any]:
    """The JSON objects in a decoded value that hold the scale's field themselves, outermost first."""
    if not isinstance(value, list):
        return []
    children = [item for _, item in value] if isinstance(value, _Pairs) else value
    own = isinstance(value, _Pairs) and any(
        str(key).strip().lower() == scale.field.lower() for key, _ in value
    )
    return [value] * own + [holder for child in children for holder in _field_holders(child, scale)]


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


def _prose_grades(prose: str, scale: Scale) -> set[Any | None]:
    """The grades of the scale's field outside the decoded JSON objects (a quoted field, a label line); None
    for one that is not a whole grade. Each distinct value is graded once, however often it is written."""
    patterns = scale._patterns
    quoted = {found.group(2) for found in patterns["quoted_field"].finditer(prose)}
    grades = {None if value is None else scale.grade(value) for value in quoted}
    for line in {label.group(1) for label in patterns["label"].finditer(prose)}:
        value = patterns["label_value"].fullmatch(line)
        grades.add(scale.grade(value.group(1)) if value else None)
    return grades


def _stated_grades(prose: str, scale: Scale) -> set[Any | None]:
    """The grades stated in prose under a grade's name, in the rubric's words (in a clause, under a grade's
    name or alone on a line) or on a line of their own; None for a grade stated on another scale (`score:
    8/10`, `Grade: 5`, `Verdict: false` on a numeric scale). An off-scale number after a bare name (`Wells
    score of 2`) is a clinical score, not a grade, and is left out, as is an off-scale number on a line of
    its own."""
    patterns = scale._patterns
    lines = {line.group("value", "negation", "word") for line in patterns["bare_line"].finditer(prose)}
    grades: set[Any | None] = {scale.grade(value) for value, _, _ in lines if value is not None} - {None}
    stated = {
        found.group("name", "separator", "value", "other_scale")
        for found in patterns["stated"].finditer(prose)
    }
    for name, separator, value, other_scale in stated:
        named_by_label = separator.lower() not in ("", "is", "of")
        if not named_by_label and name.lower() != scale.field.lower() and separator != "is":
            continue  # "a grade 1 sprain", "rating of 2 stars": not a grade of the rubric
        grade = None if other_scale else scale.grade(value)
        if grade is not None or named_by_label or other_scale:
            grades.add(grade)
    words = {(negation, word) for value, negation, word in lines if value is None} | {
        found.group("negation", "word")
        for pattern in ("grade_word", "stated_word")
        for found in patterns[pattern].finditer(prose)
    }
    for negation, word in words:
        grade = scale.grade_words[word.lower()]
        if not negation:
            grades.add(grade)
        elif scale.negatable:
            grades.add(not grade)
        else:
            grades.add(None)  # "not partially correct" names no grade of a numeric scale
    return grades


def _json_stated(
    objects: list[Any], claims_of: list[list[Claim]], pieces: list[str], scale: Scale
) -> set[Any | None]:
    """The grades the JSON states other than as the field (`_pair_grades`): each decoded value's keys, read
    at any depth, and each quoted key in the prose `pieces` (JSON that did not decode). On a yes/no scale a
    decoded value's booleans count only when it holds the field (`claims_of`); JSON that did not decode has
    no objects to tell apart, and all of its booleans count."""
    pairs = [
        (key, values, scale.negatable and bool(claims))
        for value, claims in zip(objects, claims_of, strict=True)
        for key, values in _key_values(value)
    ]
    pairs += [
        (key, values, scale.negatable)
        for index, piece in enumerate(pieces)
        for key, values in _quoted_pairs(piece, before_json=index < len(pieces) - 1)
    ]
    names = {scale.field.lower(), *_GRADE_NAMES.split("|")}
    grades: set[Any | None] = set()
    lines: dict[str, None] = {}
    for key, values, booleans in pairs:
        pair_grades, line = _pair_grades(key, values, scale, names, booleans)
        grades |= pair_grades
        if line is not None:
            lines[line] = None
    text = "\n".join(lines)
    return grades | _prose_grades(text, scale) | _stated_grades(text, scale)


def _key_values(value: Any) -> list[tuple[str, tuple[Any, ...]]]:
    """Every key of a decoded JSON value, at any depth, with what it holds that is no object: its value, or
    the items of its list at any depth (an object among them is read for its own keys)."""
    if isinstance(value, list) and not isinstance(value, _Pairs):
        return [pair for item in value for pair in _key_values(item)]
    if not isinstance(value, _Pairs):
        return []
    found = []
    for key, item in value:
        if not isinstance(item, list):  # a value (an object, as _Pairs, is a list)
            found.append((str(key), (item,)))
            continue
        held: list[Any] = []
        inner: list[Any] = []
        _flatten(item, held, inner)
        found.append((str(key), tuple(held)))
        found += [pair for obj in inner for pair in _key_values(obj)]
    return found


def _quoted_pairs(piece: str, before_json: bool) -> list[tuple[str, tuple[Any, ...]]]:
    """Every quoted key in a piece of prose (JSON that did not decode), with its value as JSON would hold it:
    text, a number, a boolean, None for null, a list's items, nothing for an object (its keys are read in
    turn), and _UNREAD for a value not read whole (`0.` cut off, a placeholder, text left open). A key with
    nothing after it at the end of a piece `before_json` holds the object decoded there."""
    pairs = []
    for found in _QUOTED_KEY.finditer(piece):
        value = found["double"] if found["double"] is not None else found["single"]
        values: tuple[Any, ...]
        if value is not None:
            values = (value if found["double_end"] or found["single_end"] else _UNREAD,)
        elif found["items"] is not None:
            items = [item.strip() for item in found["items"].split(",")]
            values = tuple(_item_value(item) for item in items if item) if found["items_end"] else (_UNREAD,)
        elif found["bare"] is not None:
            whole = found["whole"] or found["bare"].lower() in ("true", "false")
            values = (_item_value(found["bare"]) if whole else _UNREAD,)
        else:
            values = () if found["object"] or (before_json and found.end() == len(piece)) else (_UNREAD,)
        pairs.append((found["double_key"] or found["single_key"], values))
    return pairs


def _item_value(item: str) -> Any:
    """A value written whole outside JSON that decodes (a list's item, or a value a comma ends)."""
    if len(item) > 1 and item[0] == item[-1] and item[0] in "\"'":
        return item[1:-1]
    lower = item.lower()
    if lower in ("true", "false", "null", "none"):
        return {"true": True, "false": False}.get(lower)
    return float(item) if _WHOLE_NUMBER.fullmatch(item) else _UNREAD


def _flatten(item: Any, held: list[Any], objects: list[Any]) -> None:
    if isinstance(item, _Pairs):
        objects.append(item)
    elif isinstance(item, list):
        for inner in item:
            _flatten(inner, held, objects)
    else:
        held.append(item)


def _pair_grades(
    key: str, values: tuple[Any, ...], scale: Scale, names: set[str], booleans: bool
) -> tuple[set[Any | None], str | None]:
    """What a JSON key other than the field states: under a key naming a grade (a word of it in `names`,
    split at `_`, `-` or case: `final_grade`, `finalScore`), a number or boolean is a grade, None off the
    scale; with `booleans`, so is a true or false under any key. Its text is the line `<key words>: <text>`
    (a list's texts joined by `; `), to be read as prose is: `"final_score": "0/1"` as `final score: 0/1`, a
    reason as `REASON: The answer is incorrect.`; None when it holds no text."""
    if key.strip().lower() == scale.field.lower():
        return set(), None  # the field's own values are claims (_json_claims)
    words = _KEY_WORD_BREAK.sub(" ", key).strip()
    texts = [value for value in values if isinstance(value, str)]
    line = f"{words}: {'; '.join(texts)}" if texts else None
    if len(texts) == len(values):
        return set(), line
    names_grade = not names.isdisjoint(words.lower().split())
    grades: set[Any | None] = set()
    for value in values:
        if names_grade and (isinstance(value, int | float) or value is _UNREAD):  # a bool is an int
            grades.add(None if value is _UNREAD else scale.grade(value))
        elif booleans and isinstance(value, bool):
            grades.add(value)
    return grades, line


def _bare_grade(text: str, scale: Scale) -> Any | None:
    """The grade of a reply that is nothing but a grade (`1`, `0.5.`, a fenced `true`), else None."""
    bare = text.strip().removeprefix("```").removesuffix("```").strip().removesuffix(".")
    return scale.grade(bare) if scale._patterns["bare"].fullmatch(bare) else None
