"""Case builders of the SNOMED benchmark: FHIR bundles, Synthea CSV, OMOP CDM and the reference JSON."""

from tasks.benchmarks.snomed.cases.case_set import build_case_set, build_cases, detect_source_format
from tasks.benchmarks.snomed.cases.records import read_fhir_cases, read_omop_cases, read_synthea_csv_cases
from tasks.benchmarks.snomed.cases.reference import read_reference_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings, SourceFormat
from tasks.data.patients.omop import eunomia_duckdb_path

__all__ = [
    "CaseSetSettings",
    "SourceFormat",
    "build_case_set",
    "build_cases",
    "detect_source_format",
    "eunomia_duckdb_path",
    "read_fhir_cases",
    "read_omop_cases",
    "read_reference_cases",
    "read_synthea_csv_cases",
]
