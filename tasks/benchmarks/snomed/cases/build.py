"""The Prefect task that builds a SNOMED case set: in a module of its own, so that case_set.py's functions,
which a command's input checks read before its first line, import no Prefect (seconds)."""

from pathlib import Path
from typing import Any

from prefect import task

from tasks.benchmarks.snomed.cases.case_set import (
    CASE_SET_FILES,
    build_cases,
    case_set_manifest,
    case_set_vocabulary,
    detect_source_format,
    write_case_set,
)
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings, SourceFormat
from tasks.benchmarks.snomed.vocabulary import derive_synthea_vocabulary
from tasks.core.files import check_replaceable_folder


@task(name="build-snomed-case-set")
def build_case_set(
    source: str,
    out_dir: str,
    settings: CaseSetSettings,
    source_format: SourceFormat | None = None,
    allow_empty: bool = False,
) -> str:
    """Source records -> `<out_dir>/cases.parquet` and `manifest.json`, written together; return out_dir."""
    source_path, out_path = Path(source).resolve(), Path(out_dir)
    check_replaceable_folder(out_path, CASE_SET_FILES)  # before the work, not after it
    source_format = source_format or detect_source_format(source_path)
    modules_vocabulary = derive_synthea_vocabulary()
    cases, skipped = build_cases(source_path, source_format, settings, modules_vocabulary, allow_empty)
    vocabulary = case_set_vocabulary(cases, modules_vocabulary)

    def manifest(cases_sha256: str) -> dict[str, Any]:
        built = case_set_manifest(cases, source_path, source_format, settings, vocabulary, cases_sha256)
        return {**built, "skipped": dict(sorted(skipped.items()))}

    write_case_set(cases, manifest, out_path)
    return str(out_path)
