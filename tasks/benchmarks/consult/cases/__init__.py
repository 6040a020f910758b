"""Consultation cases: seeded generation from the KB, hand-written files, case sets on disk."""

from tasks.benchmarks.consult.cases.case_set import (
    case_set_fingerprint,
    case_set_manifest,
    check_case,
    load_case_file,
    load_case_set,
    write_case_set,
)
from tasks.benchmarks.consult.cases.generate import CaseGenerationSettings, generate_cases

__all__ = [
    "CaseGenerationSettings",
    "case_set_fingerprint",
    "case_set_manifest",
    "check_case",
    "generate_cases",
    "load_case_file",
    "load_case_set",
    "write_case_set",
]
