"""The clinician's final answer: find it, parse its SNOMED codes, check them against a vocabulary.

Pure functions. A final answer is the text after the reply's last marker, up to a blank line or a closing
code fence. A reply without a marker parses to None; a final answer naming no code parses to an empty
tuple, so "the model did not answer" and "the model answered: nothing" stay apart; a final answer that
cannot be read whole parses to an `UnparseableAnswer` naming why. Every reply is read in time linear in
its length: the patterns' repeats are possessive and none reads past a line it cannot match in, and a
JSON list is found by `tasks/core/json_text.scan_json` (never a recursive decode of the text).
"""

import functools
import itertools
import json
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from tasks.benchmarks.snomed.leak import normalise_display
from tasks.benchmarks.snomed.vocabulary import derive_synthea_vocabulary
from tasks.core.json_text import MAX_DEPTH, MAX_TOKENS, scan_json

CodeStatus = Literal["valid", "invalid", "malformed"]
MIN_CODE_DIGITS, MAX_CODE_DIGITS = 6, 18

# `<Final Answer>` anywhere (models wrap it in prose or bold) where a colon, a list or the line's end
# follows it, or a bare `Final Answer:` opening a line, so that a question that merely mentions the final
# answer ("Before my <Final Answer>, do you smoke?") is not taken for one. The blanks before a bare one
# stay on its line: a run of line breaks would otherwise be read again from each line's start. The bold
# or italics closing after its colon (`**Final Answer:**`) belong to the marker, not to the answer.
_MARKER = re.compile(
    r"<\s*+final[\s_-]*+answer\s*+>(?:[^\S\n]|[*_`])*+(?::[*_]*+|(?=\[)|$)"
    r"|^(?:[^\S\n]|[>#*_`-])*+final[\s_-]*+answer[\s*_`]*+:[*_]*+",
    re.IGNORECASE | re.MULTILINE,
)
# A digit run not glued to letters or part of a decimal ("CODE123456789" and "440540.06" are not codes).
_DIGIT_RUN = re.compile(r"(?<![0-9A-Za-z])(?<![0-9]\.)[0-9]++(?![0-9A-Za-z])(?!\.[0-9])")
# A decimal digit other than 0-9 (`４`, `٤`): a code written in it is no code the patterns read, and a
# vocabulary of ASCII codes never holds it, so an item holding one is not read rather than dropped.
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")
_FENCE_OPENING = re.compile(r"^\s*+(```[a-z]*+\s*+)?", re.IGNORECASE)
# An answer ends at a blank line or a code fence (its closing one: the opening one is passed before).
_ANSWER_END = re.compile(r"```|\n[^\S\n]*+(?:\n|\Z)")
_BRACKET_RUN = re.compile(r"\[++|\]++")
_ITEM_SEPARATOR = re.compile(r"[,;\n]")
_ITEM_PADDING = " \t\"'`[]*"
# A number opening an item (after a list number or bullet), not a list number ("1." or "2)") nor a decimal.
_LEADING_NUMBER = re.compile(
    r"^[\s\"'`\[*]*+(?:(?:[0-9]{1,3}+[.)]|[-\u2022])[ \t]++)?+([0-9]++)(?![0-9A-Za-z.)])"
)
# How an item offering a code is written whole (snomed.md, "Scoring": `123456789`, `"123456789 - name"`),
# after an optional list number or bullet: the code alone; the code, a separator and a name (`44054006 -
# Diabetes [type 2]`, `38341003 |Hypertension|`); or a name and the code in brackets (`Type 2 diabetes
# (44054006)`). A name starts with a letter and holds words and their punctuation, no `?`; anything else
# around a code (`not 59621000`, `59621000 (ruled out)`, `59621000?`, two codes) is not read.
_NAME_CHARS = r"[\w ,'\u2019/\[\].&+-]"
_CODE_ITEM = re.compile(
    r"(?:(?:[0-9]{1,3}+[.)]|[-\u2022])[ \t]++)?+(?:(?P<code>[0-9]++)(?:[ \t]*+[-\u2013\u2014:|=][ \t]*+"
    rf"(?P<name>[^\W\d_](?:{_NAME_CHARS}|[()])*+))?+[ \t]*+\|?+"
    rf"|(?P<named>[^\W\d_]{_NAME_CHARS}*+)\([ \t]*+(?P<bracketed>[0-9]++)[ \t]*+\))"
)

# Words that deny or hedge a condition. Beside a code they say it is excluded or uncertain (`44054006 - ruled
# out`, `No diabetes (44054006)`, `44054006 - Diabetes (possible)`, `44054006 - Diabetes, unlikely`), so an
# answer offering a code is not read when any of its items holds one: which code a remark denies cannot be
# told, and reading it as a prediction counts what the clinician excluded. An item that is a code and its
# own display in the installed Synthea's vocabulary is read (`741062008 - Not in labor force`, `162573006 -
# Suspected lung cancer (situation)`): the words are the condition's name, not a remark on it.
NEGATING_WORDS = (
    "no", "not", "none", "ruled out", "rule out", "r/o", "excluded", "exclude", "absent", "negative",
    "unlikely", "possible", "possibly", "probable", "probably", "maybe", "suspected", "query", "uncertain",
    "unconfirmed", "doubtful", "questionable", "denies", "denied",
)  # fmt: skip
_NEGATING = re.compile(
    r"\b(?:" + "|".join(re.escape(word).replace("\\ ", "[ -]") for word in NEGATING_WORDS) + r")\b",
    re.IGNORECASE,
)

# Verhoeff's dihedral-group multiplication, position permutation and inverse tables (SNOMED CT's check digit).
_VERHOEFF_MULTIPLY = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 2, 3, 4, 0, 6, 7, 8, 9, 5),
    (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
    (3, 4, 0, 1, 2, 8, 9, 5, 6, 7),
    (4, 0, 1, 2, 3, 9, 5, 6, 7, 8),
    (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
    (6, 5, 9, 8, 7, 1, 0, 4, 3, 2),
    (7, 6, 5, 9, 8, 2, 1, 0, 4, 3),
    (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
    (9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
)
_VERHOEFF_PERMUTE = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
    (1, 5, 7, 6, 2, 8, 3, 0, 9, 4),
    (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
    (8, 9, 1, 6, 0, 4, 3, 5, 2, 7),
    (9, 4, 5, 3, 1, 2, 6, 8, 7, 0),
    (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
    (2, 7, 9, 3, 8, 0, 6, 4, 1, 5),
    (7, 0, 4, 6, 9, 1, 3, 2, 5, 8),
)


class AnswerItems(NamedTuple):
    """A final answer's items: the codes offered (valid or not, checked later) and the items that are not."""

    codes: tuple[str, ...]
    not_codes: tuple[str, ...]


@dataclass(frozen=True)
class UnparseableAnswer:
    """A final answer that could not be read whole: a JSON list nested deeper than the JSON scan decodes
    ('too_deep'), more brackets and strings than it reads ('too_long'), a reply cut at the clinician's
    max_tokens ('cut': the list may have gone on), an item offering a code with more beside it than its
    name ('unread_item': `not 59621000`), a line after the answer's list offering a code ('unread_lines'),
    a marker followed by nothing ('blank': the codes may be in a part of the reply not read), a list no
    `]` closes ('unclosed': `["44054006", "3834`, cut or unfinished, may have gone on), a last marker
    naming no code after one that names some ('conflicting_markers': a remark may have erased the answer),
    an item denying or hedging in an answer offering a code ('negated_item': `44054006 - ruled out`), or
    an item holding a digit other than 0-9 ('other_digits': `４４０５４００６`).
    A value left unread might hold a code, so no part of the answer is taken. (Not a tuple, so never
    mistaken for the codes read.)"""

    reason: Literal[
        "too_deep",
        "too_long",
        "cut",
        "unread_item",
        "unread_lines",
        "blank",
        "unclosed",
        "conflicting_markers",
        "negated_item",
        "other_digits",
    ]
    item: str | None = None  # the item not read (all but 'too_deep', 'too_long', 'cut' and 'blank')

    def describe(self) -> str:
        if self.reason == "too_deep":
            return f"final answer not read: a JSON list nested deeper than {MAX_DEPTH} levels"
        if self.reason == "unread_item":
            return f"final answer not read: {self.item!r} is no code, nor a code and its name"
        if self.reason == "unread_lines":
            return f"final answer not read: {self.item!r}, on a line after its list, offers a code"
        if self.reason == "blank":
            return "final answer not read: nothing follows its marker"
        if self.reason == "unclosed":
            return "final answer not read: no ] closes its list, and a code may be missing"
        if self.reason == "other_digits":
            return f"final answer not read: {self.item!r} writes digits other than 0-9"
        if self.reason == "negated_item":
            return f"final answer not read: {self.item!r} denies or hedges, so a code beside it may be none"
        if self.reason == "conflicting_markers":
            return "final answer not read: its last marker names no code, and an earlier one does"
        if self.reason == "cut":
            return "final answer not read: the reply was cut at max_tokens, and a code may be missing"
        return f"final answer not read: more than {MAX_TOKENS:,} brackets and strings"


class CodeCheck(NamedTuple):
    """Predicted codes split by the vocabulary; `malformed` is the part of `invalid` failing Verhoeff."""

    valid: tuple[str, ...]
    invalid: tuple[str, ...]
    malformed: tuple[str, ...]


def find_final_answer(reply: str) -> str | UnparseableAnswer | None:
    """The text of the last final answer in `reply`: after its marker (and a code fence's opening), from
    its first non-blank line to a blank line, a closing code fence or the end of the reply. A later marker
    corrects an earlier one, unless it names no code while an earlier one does ('conflicting_markers')."""
    markers = list(_MARKER.finditer(reply))
    if not markers:
        return None
    rest = reply[markers[-1].end() :]
    rest = rest[_FENCE_OPENING.match(rest).end() :]  # type: ignore[union-attr]
    end = _ANSWER_END.search(rest)
    answer = rest[: end.start()] if end else rest
    earlier = (reply[marker.end() : then.start()] for marker, then in itertools.pairwise(markers))
    if len(markers) > 1 and not _offers_code(answer) and any(_offers_code(text) for text in earlier):
        return UnparseableAnswer("conflicting_markers")
    return answer


def _list_end(text: str) -> int | None:
    """Where the list opening `text`, no JSON, ends: past the `]` closing its `[` (display names may hold
    brackets); None when none closes it; the end of `text` after MAX_TOKENS runs of brackets."""
    depth = 0
    for count, run in enumerate(_BRACKET_RUN.finditer(text)):
        if count == MAX_TOKENS:
            return len(text)
        size = run.end() - run.start()
        if run.group().startswith("["):
            depth += size
        elif size >= depth:
            return run.start() + depth
        else:
            depth -= size
    return None


def read_answer(answer: str) -> AnswerItems | UnparseableAnswer:
    """Every item a final answer offered, as a code or as not a code; codes in order, once each.

    An answer opening with `[` is that list and the rest of its line: its items are a JSON list's, else
    the text's between commas and semicolons, and a later line offering a code (or holding a digit other
    than 0-9) leaves the answer unparseable (a line with none is a remark: `Thank you.`). Any other
    answer's items are the text's between commas, semicolons and line breaks, on every line, and an
    answer with none is unparseable.

    An item holding 6-18 digit runs offers a code, one that starts with a number offers it as a code of
    the wrong length (`"12345"`: malformed, not dropped), and such an item is read only when written whole
    as a code (`_CODE_ITEM`: `"38341003 - Hypertension"`, `"Type 2 diabetes (44054006)"`, `- 44054006`),
    else the answer is an `UnparseableAnswer` naming it (`"not 59621000"`, a JSON object). Any other
    non-empty item is not a code (`"Hypertension"`, `"440540.06"`, `"A44054006"`). An answer offering a
    code with an item holding one of NEGATING_WORDS (`"44054006 - ruled out"`, `"ruled out"` after it),
    an item holding a digit other than 0-9 (`"４４０５４００６"`), and an answer that may be a JSON list the
    scan could not read whole, are `UnparseableAnswer`s too.
    """
    stripped = answer.strip()
    if not stripped.startswith("["):
        items = _read_items(_ITEM_SEPARATOR.split(stripped))
        return UnparseableAnswer("blank") if items == AnswerItems((), ()) else items
    scan = scan_json(stripped)
    if scan.stopped_at is not None:
        return UnparseableAnswer("too_long")
    decoded = scan.found[0] if scan.found and scan.found[0].start == 0 else None
    end = decoded.end if decoded else _list_end(stripped)
    if end is None:
        return UnparseableAnswer("unclosed")
    after, _, following = stripped[end:].partition("\n")
    remarks = _ITEM_SEPARATOR.split(following)
    unread = next((item for item in remarks if _offers_item_code(item) or _OTHER_DIGIT.search(item)), None)
    if unread is not None:
        return UnparseableAnswer("unread_lines", unread.strip())
    # The rest of the list's line is read too: "] -- on reflection, none of these" is not a full stop.
    listed = stripped[:end] + after if after.strip(" \t.`*") else stripped[:end]
    parsed = decoded.value if decoded and len(listed) == end else None
    if parsed is None and scan.too_deep:
        return UnparseableAnswer("too_deep")
    return _read_items(
        [str(item) for item in parsed] if isinstance(parsed, list) else _ITEM_SEPARATOR.split(listed)
    )


def _read_items(items: Iterable[str]) -> AnswerItems | UnparseableAnswer:
    codes, not_codes, negating = [], [], None
    for item in items:
        if _OTHER_DIGIT.search(item):
            return UnparseableAnswer("other_digits", item.strip())
        own_display = False
        if _offers_item_code(item):
            written = _CODE_ITEM.fullmatch(item.strip(_ITEM_PADDING))
            code = written and (written.group("code") or written.group("bracketed"))
            name = written and (written.group("name") or written.group("named") or "")
            if not code or _offers_code(name):
                return UnparseableAnswer("unread_item", item.strip())  # no code read whole, or two
            codes.append(code)
            own_display = _NEGATING.search(name) is not None and _normalised_name(
                name
            ) in synthea_display_names().get(code, ())
        elif item.strip(_ITEM_PADDING):
            not_codes.append(item.strip(_ITEM_PADDING))
        if negating is None and not own_display and _NEGATING.search(item):
            negating = item.strip()
    if codes and negating is not None:
        return UnparseableAnswer("negated_item", negating)
    return AnswerItems(tuple(dict.fromkeys(codes)), tuple(not_codes))


def _normalised_name(name: str) -> str:
    return " ".join(name.lower().split())


@functools.cache
def synthea_display_names() -> dict[str, frozenset[str]]:
    """Each code of the installed Synthea's vocabulary -> its display as an answer may write it (lower case,
    with and without its semantic tag). Read once a process, when an item first holds a negating word."""
    return {
        code: frozenset({_normalised_name(entry.display), normalise_display(entry.display)})
        for code, entry in derive_synthea_vocabulary().items()
    }


def _offers_item_code(item: str) -> bool:
    return _offers_code(item) or _LEADING_NUMBER.match(item) is not None


def _offers_code(text: str) -> bool:
    return any(MIN_CODE_DIGITS <= len(run) <= MAX_CODE_DIGITS for run in _DIGIT_RUN.findall(text))


def read_final_answer(reply: str, cut: bool = False) -> AnswerItems | UnparseableAnswer | None:
    """The items of the reply's final answer; None when the reply has no final-answer marker. `cut`: the
    reply was cut at max_tokens (finish_reason 'length'), so its final answer is not read."""
    answer = find_final_answer(reply)
    if answer is None:
        return None
    if cut:
        return UnparseableAnswer("cut")
    return answer if isinstance(answer, UnparseableAnswer) else read_answer(answer)


def parse_final_answer(reply: str, cut: bool = False) -> tuple[str, ...] | UnparseableAnswer | None:
    """The codes of the reply's final answer (`read_final_answer`)."""
    read = read_final_answer(reply, cut)
    return read.codes if isinstance(read, AnswerItems) else read


def format_final_answer(codes: Iterable[str]) -> str:
    """The final-answer line the clinician prompt asks for."""
    return f"<Final Answer>: {json.dumps(list(codes))}"


def has_valid_check_digit(code: str) -> bool:
    """True when the last digit of `code` is its Verhoeff check digit (every SNOMED CT id has one)."""
    if not code.isdigit():
        return False
    check = 0
    for position, digit in enumerate(reversed(code)):
        check = _VERHOEFF_MULTIPLY[check][_VERHOEFF_PERMUTE[position % 8][int(digit)]]
    return check == 0


def classify_code(code: str, vocabulary: Collection[str]) -> CodeStatus:
    """valid (in the vocabulary), malformed (not, and no SNOMED id either), else invalid.

    The vocabulary is asked first: Synthea emits codes that fail Verhoeff (10939881000119104). A SNOMED CT
    id has 6 to 18 digits (SNOMED CT Technical Implementation Guide, "SCTID"), so a number of another
    length is malformed whatever its check digit.
    """
    if code in vocabulary:
        return "valid"
    if MIN_CODE_DIGITS <= len(code) <= MAX_CODE_DIGITS and has_valid_check_digit(code):
        return "invalid"
    return "malformed"


def check_codes(codes: Sequence[str], vocabulary: Collection[str]) -> CodeCheck:
    """Split `codes` into valid, invalid (malformed ones included) and malformed, order kept."""
    statuses = [classify_code(code, vocabulary) for code in codes]
    return CodeCheck(
        valid=tuple(c for c, s in zip(codes, statuses, strict=True) if s == "valid"),
        invalid=tuple(c for c, s in zip(codes, statuses, strict=True) if s != "valid"),
        malformed=tuple(c for c, s in zip(codes, statuses, strict=True) if s == "malformed"),
    )
