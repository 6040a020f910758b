"""Versioned prompt files, loaded and hashed in one place.

A prompt file is `key: value` header lines (one is `version: <name>_v<N>`, so every output row can name
the prompt that made it), then `=== name ===` sections whose `$placeholders` are filled at render time.
The sha256 of the whole file goes into run manifests: a prompt edited without a new version shows there.
"""

import hashlib
import re
import string
from pathlib import Path

from pydantic import BaseModel

_SECTION = re.compile(r"^=== (\w+) ===\n", flags=re.MULTILINE)


class PromptTemplate(BaseModel, frozen=True):
    """A versioned prompt file: `key: value` header lines (one is `version`), then `=== name ===` sections."""

    version: str
    sections: dict[str, str]
    sha256: str

    def render(self, section: str, **values: str) -> str:
        return string.Template(self.sections[section]).substitute(values)


def load_prompt(path: Path) -> PromptTemplate:
    """Parse a prompt file; its version is required so every output row can name it."""
    text = Path(path).read_text(encoding="utf-8")
    header, *parts = _SECTION.split(text)
    meta = dict(line.split(":", 1) for line in header.splitlines() if ":" in line)
    if "version" not in meta:
        raise ValueError(f"{path}: the header needs a 'version: <name>_v<N>' line")
    sections = {name: body.strip("\n") for name, body in zip(parts[::2], parts[1::2], strict=True)}
    return PromptTemplate(
        version=meta["version"].strip(), sections=sections, sha256=hashlib.sha256(text.encode()).hexdigest()
    )
