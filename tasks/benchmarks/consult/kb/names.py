"""Text normalisation shared by the KB's name lookups and the ICD-11 and drug normalisers, and the message
for a name the KB does not know."""

import difflib
import re
import unicodedata

_APOSTROPHES = re.compile(r"['’`]")
_NON_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")


def normalise_text(text: str) -> str:
    """`"Bell's Palsy (acute)"` -> `"bells palsy acute"`: accents, case, apostrophes and punctuation go."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _NON_ALPHANUMERIC.sub(" ", _APOSTROPHES.sub("", ascii_text.lower())).strip()


def unknown_name(name: str, allowed: str, names: list[str], file: str) -> str:
    """ "'x' is not <allowed> of the KB (<its file>)", with the closest known name when one is close."""
    close = difflib.get_close_matches(name, names, n=1)
    hint = f", did you mean '{close[0]}'?" if close else ""
    return f"'{name}' is not {allowed} of the KB (tasks/benchmarks/consult/kb/data/{file}){hint}"
