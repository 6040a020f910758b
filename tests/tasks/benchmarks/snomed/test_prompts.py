"""The SNOMED prompt files: each version's rendered text is a golden file (tests/golden/)."""

from datetime import date

import pytest

from tasks.benchmarks.snomed.case import PatientRecord, RecordCondition, RecordObservation
from tasks.benchmarks.snomed.config import CLINICIAN_PROMPT, PATIENT_PROMPTS
from tasks.benchmarks.snomed.interview import DISCLOSURE_RULES, record_text
from tasks.llm.prompts import load_prompt
from tests.golden_files import assert_matches_golden, render_sections

# Hypertension and a resolved ankle sprain have lay sentences; "Fetus with unknown complication" has none.
RECORD = PatientRecord(
    reference_date=date(2024, 1, 1),
    age_years=52,
    sex="female",
    conditions=(
        RecordCondition(code="59621000", display="Essential hypertension (disorder)", onset=date(2015, 1, 1)),
        RecordCondition(
            code="44465007", display="Sprain of ankle", onset=date(2021, 3, 1), stop=date(2021, 4, 1)
        ),
        RecordCondition(code="156073000", display="Fetus with unknown complication"),
    ),
    observations=(
        RecordObservation(code="8480-6", display="Systolic Blood Pressure", value="150", unit="mm[Hg]"),
    ),
)


def test_the_clinician_prompt_renders_its_golden_file():
    prompt = load_prompt(CLINICIAN_PROMPT)
    assert_matches_golden(prompt.version, render_sections(prompt))


@pytest.mark.parametrize("form", ["lay", "named"])
def test_each_patient_prompt_form_renders_its_golden_file(form):
    prompt = load_prompt(PATIENT_PROMPTS[form])
    values = {
        "disclosure_rule": DISCLOSURE_RULES["symptoms"],
        "record": record_text(RECORD, form, "symptoms"),
    }
    assert_matches_golden(prompt.version, render_sections(prompt, **values))
