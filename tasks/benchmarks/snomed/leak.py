"""Leak check: does a patient reply name a gold condition (its display, a close variant, or its code)?

A name is the gold display without its semantic tag, its core (the display cut before "of", "with", ...
and stripped of qualifiers such as "acute" or "essential": "Essential hypertension" -> "hypertension"),
and any extra names a caller gives (the lexicon's synonyms, such as "covid"). A reply leaks a name when a
window of its content words, lightly stemmed, is a close fuzzy match of the name's (rapidfuzz ratio >= 85):
inflections and misspellings count ("hypertensive", "hypertenshun"), lay paraphrases do not
("high blood pressure"). Decision: "sinus infection" is not a leak of "Viral sinusitis": it is how
patients describe the complaint, the clinical term is what a clinician must supply. Cores that are plain
lay words ("pain", "sore throat") are not names, or every complaint would leak.
"""

import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from rapidfuzz import fuzz

LEAK_THRESHOLD = 85.0
MIN_FUZZY_LENGTH = 6

_TAG = re.compile(r"\s*\([^()]*\)\s*$")
_WORD = re.compile(r"[a-z0-9]+")
_CODE = re.compile(r"(?<![0-9])[0-9]{6,18}(?![0-9])")


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


def leak_names(display: str, extra_names: Sequence[str] = ()) -> tuple[str, ...]:
    """The names whose mention leaks a condition: normalised display, core name, extras; once each."""
    names = [normalise_display(display), core_name(display), *(normalise_display(n) for n in extra_names)]
    # A finding named by a lay word ("Fever (finding)") is what a patient may say it feels.
    return tuple(dict.fromkeys(name for name in names if name and name not in _LAY_CORES))


def _matching_window(reply_stems: Sequence[str], name: str) -> str | None:
    name_stems = _content_stems(name)
    if not name_stems:
        return None
    target, size = " ".join(name_stems), len(name_stems)
    # A short name one letter away is another word ("gout" and "out"): it must match exactly.
    threshold = LEAK_THRESHOLD if len(name) >= MIN_FUZZY_LENGTH else 100.0
    for start in range(len(reply_stems) - size + 1):
        window = " ".join(reply_stems[start : start + size])
        if fuzz.ratio(window, target) >= threshold:
            return window
    return None


def find_leaks(
    reply: str,
    gold_codes: Sequence[str],
    gold_displays: Sequence[str],
    extra_names: Mapping[str, Sequence[str]] | None = None,
) -> tuple[LeakHit, ...]:
    """The gold items `reply` leaks, in gold order, one hit each (a code mention before a name)."""
    reply_codes = set(_CODE.findall(reply))
    reply_stems = _content_stems(reply)
    hits = []
    for code, display in zip(gold_codes, gold_displays, strict=True):
        if code in reply_codes:
            hits.append(LeakHit(code, code, code))
            continue
        for name in leak_names(display, (extra_names or {}).get(code, ())):
            window = _matching_window(reply_stems, name)
            if window is not None:
                hits.append(LeakHit(code, name, window))
                break
    return tuple(hits)
