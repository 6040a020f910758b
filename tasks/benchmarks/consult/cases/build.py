"""The Prefect task that builds a consultation case set: in a module of its own, so that case_set.py's
functions, which a command's input checks read before its first line, import no Prefect (seconds)."""

from pathlib import Path

from prefect import task

from tasks.benchmarks.consult.cases.case_set import load_case_file, write_case_set
from tasks.benchmarks.consult.cases.generate import CaseGenerationSettings, generate_cases
from tasks.benchmarks.consult.cases.synthea_profiles import read_synthea_demographics
from tasks.benchmarks.consult.kb.loading import load_kb


@task(name="build-consult-case-set")
def build_case_set(out_dir: str, settings: CaseGenerationSettings, from_file: str | None = None) -> str:
    """Generated cases (or a hand-written file's) -> `<out_dir>/cases.jsonl` + `manifest.json`; out_dir."""
    kb = load_kb(settings.kb_version)
    if from_file is None:
        demographics = (
            read_synthea_demographics(Path(settings.profiles_from)) if settings.profiles_from else []
        )
        cases, recorded = generate_cases(kb, settings, demographics), settings.model_dump(mode="json")
    else:
        cases = load_case_file(Path(from_file), kb)
        recorded = {"from_file": Path(from_file).name, "kb_version": settings.kb_version}
    return str(write_case_set(cases, Path(out_dir), recorded, kb_version=settings.kb_version))
