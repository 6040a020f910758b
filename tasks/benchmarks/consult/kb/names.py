"""Text normalisation shared by the KB's name lookups and the ICD-11 and drug normalisers."""

import re
import unicodedata

_APOSTROPHES = re.compile(r"['’`]")
_NON_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")


def normalise_text(text: str) -> str:
    """`"Bell's Palsy (acute)"` -> `"bells palsy acute"`: accents, case, apostrophes and punctuation go."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return _NON_ALPHANUMERIC.sub(" ", _APOSTROPHES.sub("", ascii_text.lower())).strip()
