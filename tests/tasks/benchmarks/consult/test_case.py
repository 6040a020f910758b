"""The patient profile's optional renal and hepatic bands imply, and must agree with, the impairment flags."""

import re

import pytest
from pydantic import ValidationError

from tasks.benchmarks.consult.case import PatientProfile


@pytest.mark.parametrize(
    ("bands", "flags"),
    [
        ({}, (False, False)),
        ({"egfr": 59}, (True, False)),
        ({"egfr": 60}, (False, False)),
        ({"hepatic_severity": "mild"}, (False, True)),
        ({"egfr": 25, "renal_impairment": True, "hepatic_severity": "severe"}, (True, True)),
    ],
)
def test_a_band_implies_its_impairment_flag(bands, flags):
    profile = PatientProfile(age=50, sex="female", **bands)
    assert (profile.renal_impairment, profile.hepatic_impairment) == flags


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"egfr": 80, "renal_impairment": True},
         "renal_impairment True contradicts egfr 80 (impairment is an eGFR under 60)"),
        ({"egfr": 30, "renal_impairment": False},
         "renal_impairment False contradicts egfr 30 (impairment is an eGFR under 60)"),
        ({"hepatic_severity": "moderate", "hepatic_impairment": False},
         "hepatic_impairment False contradicts hepatic_severity moderate"),
    ],
)  # fmt: skip
def test_a_band_that_contradicts_its_flag_is_rejected(fields, message):
    with pytest.raises(ValidationError, match=re.escape(message)):
        PatientProfile(age=50, sex="female", **fields)
