"""Build a consultation case set: seeded cases from the knowledge base, or a hand-written case file."""

from prefect import flow

from tasks.benchmarks.consult.cases import CaseGenerationSettings
from tasks.benchmarks.consult.cases.build import build_case_set


@flow(name="consult-cases")
def consult_cases(
    out_dir: str, settings: CaseGenerationSettings | None = None, from_file: str | None = None
) -> str:
    """Write `<out_dir>/cases.jsonl` and `manifest.json` (generated from `settings`, or read from
    `from_file`, a YAML or JSON list of cases checked against the KB); return out_dir."""
    return build_case_set(out_dir=out_dir, settings=settings or CaseGenerationSettings(), from_file=from_file)
