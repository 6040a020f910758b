"""The reference benchmark's JSON (`[{"patient_id", "oracle_context", "snomed_gold"}]`) -> Cases.

`oracle_context` gives age, sex and observations (name and value, no unit, no date). Its `Conditions:`
line is exactly the gold list: it becomes the record's conditions (from `snomed_gold`, which also has the
codes) and nothing else, so a patient prompt built from a case never carries it verbatim. It has no
medications or allergies: a case's are None (not recorded), never an empty list that would deny them.
"""

from collections import Counter
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordObservation
from tasks.benchmarks.snomed.cases.records import SourceCases, condition_tag, gold_conditions
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.benchmarks.snomed.vocabulary import Vocabulary
from tasks.data.patients.records import SourceError, located, normalize_sex, read_json_file

ENTRY_SHAPE = '{"patient_id": ..., "oracle_context": "...", "snomed_gold": ["<code> - <display>", ...]}'


class ReferenceFormatError(SourceError):
    """A line of `oracle_context` or an entry of `snomed_gold` that the reference format does not allow."""


def parse_gold_entry(entry: str) -> tuple[str, str]:
    """`"44465007 - Sprain of ankle"` -> ("44465007", "Sprain of ankle")."""
    code, separator, display = entry.partition(" - ")
    if not separator or not code.strip().isdigit():
        raise ReferenceFormatError(f"gold entry is not '<code> - <display>': {entry!r}")
    return code.strip(), display.strip()


def parse_oracle_context(context: str) -> dict[str, Any]:
    """The context's header fields (`Age`, `Gender`, ...) and its `- name: value` observation lines."""
    fields: dict[str, str] = {}
    observations: list[tuple[str, str]] = []
    in_observations = False
    for line in context.splitlines():
        if not line.strip():
            continue
        if in_observations and line.startswith("- "):
            # Names hold " - " and "[Score]" but never ": ", so the last ": " splits name from value.
            name, separator, value = line[2:].rpartition(": ")
            if not separator:
                raise ReferenceFormatError(f"observation line without a value: {line!r}")
            observations.append((name.strip(), value.strip()))
            continue
        key, separator, value = line.partition(":")
        if not separator:
            raise ReferenceFormatError(f"context line is not 'Key: value': {line!r}")
        in_observations = key.strip() == "Observations"
        fields[key.strip()] = value.strip()
    return {"fields": fields, "observations": observations}


def check_entry(item: object) -> None:
    """Raise ReferenceFormatError unless the entry has the reference's keys with their JSON types."""
    if not isinstance(item, dict):
        raise ReferenceFormatError(f"{item!r} is not an object; write each entry as {ENTRY_SHAPE}")
    if not isinstance(item.get("patient_id"), str | int) or item["patient_id"] == "":
        raise ReferenceFormatError(f"patient_id is missing or empty; each entry is {ENTRY_SHAPE}")
    if not isinstance(item.get("oracle_context"), str):
        raise ReferenceFormatError(f"oracle_context is {item.get('oracle_context')!r}, not text; fix it")
    gold = item.get("snomed_gold")
    if not isinstance(gold, list) or not all(isinstance(entry, str) for entry in gold):
        raise ReferenceFormatError(f"snomed_gold is {gold!r}, not a list of '<code> - <display>'; fix it")


def case_from_reference(
    item: dict[str, Any], settings: CaseSetSettings, vocabulary: Vocabulary | None
) -> Case:
    """One reference entry -> a Case without dates; every condition is active (the record has no stops)."""
    check_entry(item)
    context = parse_oracle_context(item["oracle_context"])
    fields = context["fields"]
    conditions = []
    for code, display in dict(parse_gold_entry(entry) for entry in item["snomed_gold"]).items():
        conditions.append(
            RecordCondition(code=code, display=display, semantic_tag=condition_tag(display, code, vocabulary))
        )
    # The reference has no LOINC codes and no dates: an observation is keyed by its name, and all lines
    # are kept in file order (ten cases list one name twice).
    observations = [
        RecordObservation(code=name, display=name, value=value) for name, value in context["observations"]
    ]
    gold_codes, gold_displays = gold_conditions(conditions, settings)
    age = fields.get("Age", "")
    return Case(
        case_id=str(item["patient_id"]),
        source="reference",
        patient_id=str(item["patient_id"]),
        reference_date=None,
        age_years=int(age) if age.isdigit() else None,
        sex=normalize_sex(fields.get("Gender")),
        conditions=tuple(sorted(conditions, key=lambda c: c.code)),
        observations=tuple(observations[: settings.max_observations]),
        medications=None,
        allergies=None,
        gold_codes=gold_codes,
        gold_displays=gold_displays,
    )


def read_reference_cases(
    path: Path, settings: CaseSetSettings, vocabulary: Vocabulary | None = None
) -> SourceCases:
    """The reference benchmark's JSON file -> one Case per entry, in file order (nothing is skipped)."""
    with located(path):
        entries = read_json_file(path)
        if not isinstance(entries, list):
            raise SourceError(f"the top level is not a list; the reference format is [{ENTRY_SHAPE}, ...]")
        cases = []
        for number, item in enumerate(entries):
            with located(f"entry {number}"):
                cases.append(case_from_reference(item, settings, vocabulary))
    return SourceCases(cases, Counter())
