"""Leak check: does a patient reply name a gold condition (its display, a close variant, or its code)?

A name is the gold display without its semantic tag, its core (the display cut before "of", "with", ...
and stripped of qualifiers such as "acute" or "essential": "Essential hypertension" -> "hypertension"),
and any extra names a caller gives (the lexicon's synonyms, such as "covid"). A reply leaks a name when a
window of its content words, lightly stemmed, is a close fuzzy match of the name's (rapidfuzz ratio >= 85):
inflections and misspellings count ("hypertensive", "hypertenshun"), lay paraphrases do not
("high blood pressure"). Decision: "sinus infection" is not a leak of "Viral sinusitis": it is how
patients describe the complaint, the clinical term is what a clinician must supply. Cores that are plain
lay words ("pain", "sore throat") are not names, or every complaint would leak.

`LeakMatcher` compiles the names of a set of conditions once (exact names in a dictionary, fuzzy ones in
one rapidfuzz table per window size) and reads a reply in one pass per window size: its cost grows with the
reply's length times the number of fuzzy names, never with a loop over conditions in Python, so the
oracle data can check every answer against a whole vocabulary. `find_leaks` is that matcher over gold items.

What the check reads (`reading_text`): Unicode compatibility forms folded (full-width letters and digits,
ligatures), accents dropped, zero-width and soft-hyphen characters removed, any script's decimal digits
as ASCII digits, case folded. A word broken by a hyphen is read both ways ("hyper-tension" as one word and
as two), a one-word name split by a space ("hyper tension") is read as one word (each two adjacent words
joined, against the one-word names), and a code written in groups ("5962 1000", "5962-1000", "59,621,000")
is read whole.
A letter the check cannot
read (any script but Latin, such as a Cyrillic look-alike in "hypertеnsion") leaves the reply unverified
(`unread_letters`): callers count it apart, never as a reply that named nothing.
"""

import itertools
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
from rapidfuzz import fuzz, process

LEAK_THRESHOLD = 85.0
MIN_FUZZY_LENGTH = 6

_TAG = re.compile(r"\s*\([^()]*\)\s*$")
_WORD = re.compile(r"[a-z0-9]+")
# A SNOMED CT identifier has 6 to 18 digits.
MIN_CODE_DIGITS, MAX_CODE_DIGITS = 6, 18
# Digit groups a code may be written in: joined by white space (a line break too), a dash, dot, comma, slash
# or underscore (up to four of them: "5962 -- 1000").
_DIGIT_GROUPS = re.compile(r"[0-9]+(?:[\s,._/-]{1,4}[0-9]+)*")
_DIGITS = re.compile(r"[0-9]+")
# A hyphen inside a word, as a word broken in two ("hyper-tension") writes it.
_INNER_HYPHEN = re.compile(r"(?<=[a-z])-(?=[a-z])")
# Any digit (Unicode's too) run that holds an identifier's length, however long the run.
_DIGIT_RUN = re.compile(rf"\d{{{MIN_CODE_DIGITS},}}")
# Windows scored per rapidfuzz call: bounds the score table's memory (rows x fuzzy names x 8 bytes).
_WINDOW_CHUNK = 512


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_STOPWORDS = _word_set(
    "a an and are as at be been but by do for from had has have he her his i im in is it its me my no not "
    "of on or our she so than that the their them they this to was we were with without you your"
)
_CORE_CUT = frozenset({"of", "in", "with", "without", "due", "to", "caused", "associated", "by", "on"})
_QUALIFIERS = _word_set(
    "acute chronic essential viral bacterial suspected history normal child childhood primary secondary "
    "localized localised complete partial single recurrent intractable mild moderate severe stage type "
    "mellitus injury finding x"
)
_LAY_CORES = frozenset(
    {"pain", "sore throat", "throat", "kidney", "heart", "ear", "nose", "skin", "bone", "cough", "fever",
     "headache", "molars", "burn", "cut", "disease", "disorder", "syndrome"}
)  # fmt: skip
# Longest first; one suffix is removed, and the stem keeps at least four letters.
_SUFFIXES = ("ations", "ation", "ancy", "ency", "ions", "ives", "ion", "ive", "ics", "ies", "ant", "ent",
             "ing", "ed", "ic", "ia", "es", "al", "s", "y")  # fmt: skip


class LeakHit(NamedTuple):
    """A gold item a reply leaked: its code, the name or code matched and the reply words that matched."""

    code: str
    name: str
    matched: str


def normalise_display(display: str) -> str:
    """Lower case, the trailing semantic tag ("(disorder)", "(finding)", ...) removed, spaces collapsed."""
    return " ".join(_TAG.sub("", display).lower().split())


def core_name(display: str) -> str | None:
    """The display's head term ("Sprain of ankle" -> "sprain"), or None when that is only a lay word."""
    words = _WORD.findall(normalise_display(display))
    cut = next((i for i, word in enumerate(words) if word in _CORE_CUT and i > 0), len(words))
    core = " ".join(word for word in words[:cut] if word not in _QUALIFIERS and not word.isdigit())
    return core if core and core not in _LAY_CORES and len(core) >= 4 else None


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _content_stems(text: str) -> list[str]:
    return [_stem(word) for word in _WORD.findall(text.lower().replace("'", "")) if word not in _STOPWORDS]


def _joined_pair_stems(text: str) -> list[str]:
    """Each two adjacent words of `text` written as one ("hyper tension" -> "hypertens"), stemmed: where a
    one-word name split by a space is read."""
    words = _WORD.findall(text.lower().replace("'", ""))
    return [_stem(first + second) for first, second in itertools.pairwise(words)]


def _reading_char(char: str) -> str:
    category = unicodedata.category(char)
    if category in ("Mn", "Cf"):  # an accent, or a zero-width space, joiner or soft hyphen
        return ""
    if category == "Nd":
        return str(unicodedata.decimal(char))
    return "-" if category == "Pd" else char


def reading_text(text: str) -> str:
    """`text` as the check reads it (module docstring): NFKD-folded, accents and format characters
    removed, digits in ASCII, dashes as "-", case folded. Linear in the text's length."""
    if text.isascii():
        return text.lower()
    return "".join(_reading_char(char) for char in unicodedata.normalize("NFKD", text)).casefold()


def word_readings(read: str) -> tuple[str, ...]:
    """The readings of read text (`reading_text`) whose words the check matches: the text, and, when a
    hyphen breaks a word, the text with such hyphens removed ("hyper-tension" as "hypertension")."""
    return (read, _INNER_HYPHEN.sub("", read)) if _INNER_HYPHEN.search(read) else (read,)


def unread_letters(text: str) -> str:
    """The letters of `text` the check cannot read (outside a-z once read), each once in order of first
    appearance; "" when the check reads every letter. A reply holding one is not vouched for."""
    if text.isascii():
        return ""
    read = reading_text(text)
    return "".join(dict.fromkeys(char for char in read if not char.isascii() and char.isalpha()))


def _code_mentions(read: str) -> dict[str, str]:
    """Every digit string a code may be written as in read text -> how it was written: a run of digits,
    or consecutive groups of one ("5962 1000"), MIN_CODE_DIGITS to MAX_CODE_DIGITS digits in all. Never part
    of a group: "1596210001" holds no 8-digit code. Linear: a start's groups stop at MAX_CODE_DIGITS."""
    mentions: dict[str, str] = {}
    for written in _DIGIT_GROUPS.finditer(read):
        groups = list(_DIGITS.finditer(written.group()))
        for first, group in enumerate(groups):
            digits = ""
            for last in range(first, len(groups)):
                digits += groups[last].group()
                if len(digits) > MAX_CODE_DIGITS:
                    break
                if len(digits) >= MIN_CODE_DIGITS:
                    mentions.setdefault(digits, written.group()[group.start() : groups[last].end()])
    return mentions


def leak_names(display: str, extra_names: Sequence[str] = ()) -> tuple[str, ...]:
    """The names whose mention leaks a condition: normalised display, core name, extras; once each."""
    names = [normalise_display(display), core_name(display), *(normalise_display(n) for n in extra_names)]
    # A finding named by a lay word ("Fever (finding)") is what a patient may say it feels.
    return tuple(dict.fromkeys(name for name in names if name and name not in _LAY_CORES))


def digit_run(text: str) -> str | None:
    """The first run of at least MIN_CODE_DIGITS digits in `text` (where a code could be), or None."""
    match = _DIGIT_RUN.search(text)
    return match.group() if match else None


class _Name(NamedTuple):
    """One name of a condition as matched: the name, and the table entry that holds its stems."""

    name: str
    entry: int


class _SizeTable(NamedTuple):
    """The names of one size (content words): exact ones by their stems, fuzzy ones in rapidfuzz's order."""

    exact: dict[str, int]  # stems joined -> entry
    fuzzy_targets: list[str]
    fuzzy_entries: list[int]


class LeakMatcher:
    """The names of a set of conditions, compiled once; `hits` finds what a reply leaks, as `find_leaks`
    defines it (module docstring). Entries are distinct (stems, exact) pairs, so conditions sharing a name
    are scored once."""

    def __init__(
        self,
        codes: Sequence[str],
        displays: Sequence[str],
        extra_names: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.codes = tuple(codes)
        self.names: list[tuple[_Name, ...]] = []  # per condition, in leak_names order
        self._items_of_code: dict[str, list[int]] = {}
        self._items_of_entry: list[list[int]] = []
        self._tables: dict[int, _SizeTable] = {}
        entries: dict[tuple[str, bool], int] = {}
        for item, (code, display) in enumerate(zip(self.codes, displays, strict=True)):
            self._items_of_code.setdefault(code, []).append(item)
            names = []
            for name in leak_names(display, (extra_names or {}).get(code, ())):
                stems = _content_stems(name)
                if not stems:
                    continue
                # A short name one letter away is another word ("gout" and "out"): it must match exactly.
                target, exact = " ".join(stems), len(name) < MIN_FUZZY_LENGTH
                if (target, exact) not in entries:
                    entries[target, exact] = len(self._items_of_entry)
                    self._items_of_entry.append([])
                    table = self._tables.setdefault(len(stems), _SizeTable({}, [], []))
                    if exact:
                        table.exact[target] = entries[target, exact]
                    else:
                        table.fuzzy_targets.append(target)
                        table.fuzzy_entries.append(entries[target, exact])
                entry = entries[target, exact]
                if not self._items_of_entry[entry] or self._items_of_entry[entry][-1] != item:
                    self._items_of_entry[entry].append(item)
                names.append(_Name(name, entry))
            self.names.append(tuple(names))

    @property
    def name_count(self) -> int:
        """Distinct names matched (stems and exactness), over every condition."""
        return len(self._items_of_entry)

    def hits(self, reply: str) -> tuple[LeakHit, ...]:
        """The conditions `reply` leaks, in condition order, one hit each (a code mention before a name).
        Letters it cannot read are not in any hit: `unread_letters` says whether the reply was read whole."""
        read = reading_text(reply)
        reply_codes = _code_mentions(read)
        first_windows: dict[int, str] = {}
        for reading in word_readings(read):
            found = self._first_windows(_content_stems(reading))
            first_windows |= {entry: window for entry, window in found.items() if entry not in first_windows}
        split = self._first_windows(_joined_pair_stems(read), sizes=(1,))
        first_windows |= {entry: window for entry, window in split.items() if entry not in first_windows}
        items = {item for code in reply_codes for item in self._items_of_code.get(code, ())}
        items.update(item for entry in first_windows for item in self._items_of_entry[entry])
        hits = []
        for item in sorted(items):
            code = self.codes[item]
            if code in reply_codes:
                hits.append(LeakHit(code, code, reply_codes[code]))
                continue
            name = next(name for name in self.names[item] if name.entry in first_windows)
            hits.append(LeakHit(code, name.name, first_windows[name.entry]))
        return tuple(hits)

    def _first_windows(
        self, reply_stems: Sequence[str], sizes: Sequence[int] | None = None
    ) -> dict[int, str]:
        """Each matched entry's first matching window of the reply's stems, among names of `sizes` content
        words (all names when none is given)."""
        found: dict[int, str] = {}
        for size, table in self._tables.items():
            if sizes and size not in sizes:
                continue
            windows = [
                " ".join(reply_stems[start : start + size]) for start in range(len(reply_stems) - size + 1)
            ]
            for window in windows:
                entry = table.exact.get(window)
                if entry is not None and entry not in found:
                    found[entry] = window
            if not table.fuzzy_targets:
                continue
            for offset in range(0, len(windows), _WINDOW_CHUNK):
                chunk = windows[offset : offset + _WINDOW_CHUNK]
                scores = process.cdist(
                    chunk,
                    table.fuzzy_targets,
                    scorer=fuzz.ratio,
                    score_cutoff=LEAK_THRESHOLD,
                    dtype=np.float64,
                )
                matched = scores >= LEAK_THRESHOLD
                for column in np.flatnonzero(matched.any(axis=0)):
                    entry = table.fuzzy_entries[column]
                    if entry not in found:
                        found[entry] = chunk[int(matched[:, column].argmax())]
        return found


def find_leaks(
    reply: str,
    gold_codes: Sequence[str],
    gold_displays: Sequence[str],
    extra_names: Mapping[str, Sequence[str]] | None = None,
) -> tuple[LeakHit, ...]:
    """The gold items `reply` leaks, in gold order, one hit each (a code mention before a name)."""
    return LeakMatcher(gold_codes, gold_displays, extra_names).hits(reply)
