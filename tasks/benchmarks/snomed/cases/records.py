"""A patient's record (tasks/data/patients/) read at a reference date: the one function that turns it into a
Case, and the SNOMED case readers of each record format.

Reading the record at the reference date, keeping the latest observation per kind and choosing the gold
set happen here, once, so the formats cannot drift apart.
"""

from collections import Counter
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import NamedTuple

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordItem, RecordObservation
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings, SourceFormat
from tasks.benchmarks.snomed.vocabulary import Vocabulary, semantic_tag
from tasks.data.patients.fhir import fhir_bundle_paths, read_fhir_bundle
from tasks.data.patients.omop import read_omop_records
from tasks.data.patients.records import (
    PatientRecord,
    SourceCondition,
    SourceItem,
    checked_age,
    located,
    normalize_sex,
)
from tasks.data.patients.synthea_csv import read_synthea_csv_records


class SourceCases(NamedTuple):
    """A reader's cases, and what it skipped by reason (`conditions without a SNOMED code`: 3)."""

    cases: list[Case]
    skipped: Counter[str]


def is_on_or_before(day: date | None, reference_date: date | None) -> bool:
    """Undated facts and any fact when there is no reference date belong to the record."""
    return day is None or reference_date is None or day <= reference_date


def condition_tag(display: str, code: str, vocabulary: Vocabulary | None) -> str | None:
    """The display's own tag, else the vocabulary's, else None (unknown)."""
    entry = (vocabulary or {}).get(code)
    return semantic_tag(display) or (entry.semantic_tag if entry else None)


def conditions_at(
    episodes: Iterable[SourceCondition], reference_date: date | None, vocabulary: Vocabulary | None
) -> tuple[RecordCondition, ...]:
    """One condition per code as known at the reference date, ordered by onset then code.

    Episodes starting after the reference date are unknown yet. A code is active when any known episode
    has no stop before the reference date; its `stop` is then None (a later stop is not known yet),
    otherwise the last stop. Onset is the first episode's, display the first episode's.
    """
    by_code: dict[str, list[SourceCondition]] = {}
    for episode in episodes:
        if is_on_or_before(episode.onset, reference_date):
            by_code.setdefault(episode.code, []).append(episode)
    conditions = []
    for code, known in by_code.items():
        known.sort(key=lambda e: (e.onset or date.min, e.stop or date.max, e.display))
        stops = [e.stop for e in known]
        is_active = any(
            stop is None or (reference_date is not None and stop >= reference_date) for stop in stops
        )
        display = known[0].display or ((vocabulary or {}).get(code) or known[0]).display or code
        conditions.append(
            RecordCondition(
                code=code,
                display=display,
                onset=known[0].onset,
                stop=None if is_active else max(s for s in stops if s is not None),
                semantic_tag=condition_tag(display, code, vocabulary),
            )
        )
    return tuple(sorted(conditions, key=lambda c: (c.onset or date.min, c.code)))


def gold_conditions(
    conditions: Iterable[RecordCondition], settings: CaseSetSettings
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(gold codes, sorted and unique; their displays): conditions in scope whose tag is kept or unknown."""
    gold = {
        c.code: c.display
        for c in conditions
        if (settings.gold_scope == "all" or c.stop is None)
        and (c.semantic_tag is None or c.semantic_tag in settings.gold_tags)
    }
    codes = tuple(sorted(gold))
    return codes, tuple(gold[code] for code in codes)


def latest_observations(
    observations: Iterable[RecordObservation], reference_date: date | None, max_observations: int | None
) -> tuple[RecordObservation, ...]:
    """The latest value per observation code at the reference date, most recent first then by code, capped."""
    latest: dict[str, RecordObservation] = {}
    for item in observations:
        if not is_on_or_before(item.observed_on, reference_date):
            continue
        held = latest.get(item.code)
        # Same-day readings are ordered by value so the choice never depends on input order.
        if held is None or _observation_order(item) > _observation_order(held):
            latest[item.code] = item
    ordered = sorted(latest.values(), key=lambda o: (-(o.observed_on or date.min).toordinal(), o.code))
    return tuple(ordered if max_observations is None else ordered[:max_observations])


def _observation_order(item: RecordObservation) -> tuple[date, str, str]:
    return (item.observed_on or date.min, item.value, item.unit or "")


def current_items(
    items: Iterable[SourceItem] | None, reference_date: date | None
) -> tuple[RecordItem, ...] | None:
    """Items started by the reference date and not stopped before it, one per code, sorted by code; None
    (the source does not say) stays None, so a patient never denies what its source left unread."""
    if items is None:
        return None
    current = {
        item.code: RecordItem(code=item.code, display=item.display)
        for item in sorted(items, key=lambda i: (i.code, i.start or date.min, i.display))
        if is_on_or_before(item.start, reference_date)
        and (item.stop is None or reference_date is None or item.stop >= reference_date)
    }
    return tuple(current[code] for code in sorted(current))


def build_case(
    record: PatientRecord, source: SourceFormat, settings: CaseSetSettings, vocabulary: Vocabulary | None
) -> Case:
    """Read one record at the settings' reference date (else its last record date) -> a Case (split: test)."""
    reference_date = settings.reference_date or record.last_record_date
    conditions = conditions_at(record.conditions, reference_date, vocabulary)
    gold_codes, gold_displays = gold_conditions(conditions, settings)
    return Case(
        case_id=record.patient_id,
        source=source,
        patient_id=record.patient_id,
        reference_date=reference_date,
        age_years=checked_age(record.patient_id, record.birth_date, reference_date),
        sex=normalize_sex(record.sex),
        conditions=conditions,
        observations=latest_observations(record.observations, reference_date, settings.max_observations),
        medications=current_items(record.medications, reference_date),
        allergies=current_items(record.allergies, reference_date),
        gold_codes=gold_codes,
        gold_displays=gold_displays,
    )


def read_fhir_cases(
    folder: Path, settings: CaseSetSettings, vocabulary: Vocabulary | None = None
) -> SourceCases:
    """A folder of FHIR R4 bundles -> one Case per patient bundle in file-name order, and what was skipped."""
    cases, skipped = [], Counter[str]()
    for path in fhir_bundle_paths(folder):
        with located(path):
            record = read_fhir_bundle(path, skipped)
            if record is not None:
                cases.append(build_case(record, "fhir", settings, vocabulary))
    return SourceCases(cases, skipped)


def read_synthea_csv_cases(
    folder: Path, settings: CaseSetSettings, vocabulary: Vocabulary | None = None
) -> SourceCases:
    """A Synthea CSV export folder -> one Case per patient, sorted by patient id, and what was skipped."""
    skipped = Counter[str]()
    with located(folder):
        records = read_synthea_csv_records(folder, settings.reference_date, skipped)
        cases = [build_case(r, "synthea_csv", settings, vocabulary) for r in records]
    return SourceCases(cases, skipped)


def read_omop_cases(
    source: Path, settings: CaseSetSettings, vocabulary: Vocabulary | None = None
) -> SourceCases:
    """An OMOP CDM (DuckDB file or table folder) -> one Case per person, sorted by patient id, and what
    was skipped."""
    skipped = Counter[str]()
    with located(source):
        records = read_omop_records(source, settings.reference_date, skipped)
        cases = [build_case(r, "omop", settings, vocabulary) for r in records]
    return SourceCases(cases, skipped)
