"""Build a SNOMED benchmark case set from Synthea output (FHIR, CSV), an OMOP CDM or the reference JSON."""

from prefect import flow

from tasks.benchmarks.snomed.cases.build import build_case_set
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings, SourceFormat


@flow(name="snomed-cases")
def snomed_cases(
    source: str,
    out_dir: str,
    settings: CaseSetSettings | None = None,
    source_format: SourceFormat | None = None,
    allow_empty: bool = False,
) -> str:
    """Write `<out_dir>/cases.parquet` and `manifest.json` from `source`; return out_dir.

    The format is detected from `source` unless given: a reference `.json` file, an OMOP `.duckdb` file,
    a folder with `patients.csv` (Synthea CSV), `person.csv`/`.parquet` (OMOP) or `*.json` bundles (FHIR).
    A source without any gold code fails unless `allow_empty`.
    """
    return build_case_set(
        source=source,
        out_dir=out_dir,
        settings=settings or CaseSetSettings(),
        source_format=source_format,
        allow_empty=allow_empty,
    )
