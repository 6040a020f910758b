from pathlib import Path

import orjson
import pytest

from tasks.benchmarks.snomed.case import Case, RecordCondition, RecordObservation
from tasks.benchmarks.snomed.cases.reference import (
    ReferenceFormatError,
    parse_gold_entry,
    read_reference_cases,
)
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.benchmarks.snomed.vocabulary import VocabularyEntry

REFERENCE = (
    Path(__file__).resolve().parents[5]
    / "shared"
    / "data"
    / "snomed-reference"
    / "synthea_oracle_context.json"
)
ITEM = {
    "patient_id": "r1",
    "oracle_context": "Age: 27\nGender: M\nLocation: Boston, Massachusetts\n"
    "Conditions: Sprain of ankle; Refugee (person)\nObservations:\n"
    "- Body Height: 166.8\n- Pain severity - 0-10 verbal numeric rating [Score] - Reported: 3.0\n"
    "- Tobacco smoking status NHIS: Never smoker",
    "snomed_gold": ["44465007 - Sprain of ankle", "446654005 - Refugee (person)"],
}
VOCABULARY = {
    "44465007": VocabularyEntry(
        code="44465007",
        display="Sprain of ankle (disorder)",
        semantic_tag="disorder",
        sources=("sprain.json",),
    ),
}


def test_reference_entry_becomes_a_case_whose_conditions_come_only_from_the_gold_list(tmp_path):
    path = tmp_path / "reference.json"
    path.write_bytes(orjson.dumps([ITEM]))
    assert read_reference_cases(path, CaseSetSettings(), VOCABULARY).cases == [
        Case(
            case_id="r1",
            source="reference",
            patient_id="r1",
            reference_date=None,
            age_years=27,
            sex="male",
            conditions=(
                RecordCondition(code="44465007", display="Sprain of ankle", semantic_tag="disorder"),
                RecordCondition(code="446654005", display="Refugee (person)", semantic_tag="person"),
            ),
            observations=(
                RecordObservation(code="Body Height", display="Body Height", value="166.8"),
                RecordObservation(
                    code="Pain severity - 0-10 verbal numeric rating [Score] - Reported",
                    display="Pain severity - 0-10 verbal numeric rating [Score] - Reported",
                    value="3.0",
                ),
                RecordObservation(
                    code="Tobacco smoking status NHIS",
                    display="Tobacco smoking status NHIS",
                    value="Never smoker",
                ),
            ),
            medications=None,  # the reference has no such section: not recorded, never "none"
            allergies=None,
            gold_codes=("44465007",),
            gold_displays=("Sprain of ankle",),
        )
    ]


def test_gold_entry_must_be_code_dash_display():
    assert parse_gold_entry("15777000 - Prediabetes") == ("15777000", "Prediabetes")
    with pytest.raises(ReferenceFormatError):
        parse_gold_entry("Prediabetes")


@pytest.mark.skipif(not REFERENCE.exists(), reason="shared reference data not present")
def test_all_500_reference_cases_build_and_the_conditions_line_reaches_no_observation():
    items = orjson.loads(REFERENCE.read_bytes())
    cases = read_reference_cases(REFERENCE, CaseSetSettings(gold_tags=()), None).cases
    assert len(cases) == len({c.case_id for c in cases}) == 500
    for item, case in zip(items, cases, strict=True):
        # Eight cases have no gold and no Conditions line.
        lines = [line for line in item["oracle_context"].splitlines() if line.startswith("Conditions:")]
        names = [name.strip() for line in lines for name in line.removeprefix("Conditions:").split(";")]
        seen = " ".join(f"{o.code} {o.display} {o.value}" for o in case.observations)
        assert "Conditions" not in seen and not any(name in seen for name in names)
        assert sorted(c.display for c in case.conditions) == sorted(names)
        assert len(case.observations) == 10
