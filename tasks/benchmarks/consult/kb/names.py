"""Text normalisation shared by the KB's name lookups and the ICD-11 and drug normalisers, the fuzzy match
they share, and the message for a name the KB does not know."""

import difflib
import re
import unicodedata
from collections.abc import Mapping

from rapidfuzz import fuzz, process

DEFAULT_THRESHOLD = 90.0  # rapidfuzz ratio a fuzzy name match needs
_APOSTROPHES = re.compile(r"['’`]")
_NON_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")
_NON_ALPHANUMERIC_OR_HYPHEN = re.compile(r"[^a-z0-9-]+")


def normalise_text(text: str, keep_hyphens: bool = False) -> str:
    """`"Bell's Palsy (acute)"` -> `"bells palsy acute"`: accents, case, apostrophes and punctuation go
    (hyphens stay when asked: "co-codamol")."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    separators = _NON_ALPHANUMERIC_OR_HYPHEN if keep_hyphens else _NON_ALPHANUMERIC
    return " ".join(separators.sub(" ", _APOSTROPHES.sub("", ascii_text.lower())).split())


def unknown_name(name: str, allowed: str, names: list[str], file: str) -> str:
    """ "'x' is not <allowed> of the KB (<its file>)", with the closest known name when one is close."""
    close = difflib.get_close_matches(name, names, n=1)
    hint = f", did you mean '{close[0]}'?" if close else ""
    return f"'{name}' is not {allowed} of the KB (tasks/benchmarks/consult/kb/data/{file}){hint}"


def best_fuzzy_match(wanted: str, names: Mapping[str, str], threshold: float) -> tuple[str, float] | None:
    """The name of `names` closest to `wanted` by rapidfuzz's ratio (0-100) at or above `threshold`."""
    if not wanted:
        return None
    # Sorted choices make ties resolve the same way on every run.
    found = process.extractOne(wanted, sorted(names), scorer=fuzz.ratio, score_cutoff=threshold)
    return (found[0], float(found[1])) if found is not None else None
