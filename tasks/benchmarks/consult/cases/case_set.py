"""Case sets on disk: `cases.jsonl` (one case a line, in order) and `manifest.json` (written last).

Hand-written case files (a YAML or JSON list of cases in the ConsultCase schema) are read and checked
against the KB by `load_case_file`.
"""

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from prefect import task
from pydantic import BaseModel, ValidationError

from tasks.benchmarks.consult.case import ConsultCase
from tasks.benchmarks.consult.cases.generate import CaseGenerationSettings, generate_cases
from tasks.benchmarks.consult.cases.synthea_profiles import read_synthea_demographics
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.core.files import read_verified_bytes, write_bytes_atomic, write_text_atomic
from tasks.core.preflight import UserError
from tasks.evals.config import SampleSpec

CASES_FILE, MANIFEST_FILE = "cases.jsonl", "manifest.json"


def check_case(case: ConsultCase, kb: KnowledgeBase) -> None:
    """Raise ValueError naming the first reference of the case the KB does not know."""
    for aiu in case.aius:
        aiu_type = kb.aiu_type(aiu.aiu_id)
        if aiu_type is None:
            raise ValueError(f"unknown AIU type '{aiu.aiu_id}'")
        if aiu.template != aiu_type.template:
            raise ValueError(
                f"AIU '{aiu.aiu_id}' has template '{aiu.template}', the KB says '{aiu_type.template}'"
            )
    for gold in case.gold:
        condition = kb.condition(gold.condition_id)
        if condition is None:
            raise ValueError(f"unknown condition '{gold.condition_id}'")
        if gold.icd11 != condition.icd11:
            raise ValueError(
                f"condition '{gold.condition_id}' has code {gold.icd11}, the KB says {condition.icd11}"
            )


def load_case_file(path: Path, kb: KnowledgeBase | None = None) -> list[ConsultCase]:
    """A hand-written YAML or JSON list of cases -> validated cases; a ValueError names the file and case."""
    path, kb = Path(path), kb or load_kb()
    try:
        items = yaml.safe_load(path.read_text(encoding="utf-8"))  # YAML reads JSON too
    except yaml.YAMLError as error:
        raise ValueError(f"{path.name}: not valid YAML or JSON: {error}") from None
    if not isinstance(items, list):
        raise ValueError(f"{path.name}: expected a list of cases")
    cases, seen = [], set()
    for position, item in enumerate(items):
        name = item.get("case_id", f"#{position + 1}") if isinstance(item, dict) else f"#{position + 1}"
        try:
            case = ConsultCase.model_validate(item)
            check_case(case, kb)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in e['loc']) or 'case'}: {e['msg']}" for e in error.errors()
            )
            raise ValueError(f"{path.name}: case '{name}': {problems}") from None
        except ValueError as error:
            raise ValueError(f"{path.name}: case '{name}': {error}") from None
        if case.case_id in seen:
            raise ValueError(f"{path.name}: case '{name}': duplicate case_id")
        seen.add(case.case_id)
        cases.append(case)
    return cases


def cases_jsonl(cases: list[ConsultCase]) -> bytes:
    return "".join(case.model_dump_json() + "\n" for case in cases).encode("utf-8")


def case_set_counts(cases: list[ConsultCase]) -> dict[str, Any]:
    return {
        "cases": len(cases),
        "departments": dict(sorted(Counter(c.department for c in cases).items())),
        "difficulty": dict(sorted(Counter(c.difficulty for c in cases).items())),
        "core_diagnoses": sum(len(c.core_gold) for c in cases),
        "aius": sum(len(c.aius) for c in cases),
    }


def write_case_set(
    cases: list[ConsultCase], out_dir: Path, settings: BaseModel | dict[str, Any], kb_version: int = 1
) -> Path:
    """Write `cases.jsonl` then `manifest.json` (settings, counts, KB version, sha256) to out_dir."""
    out_dir = Path(out_dir)
    data = cases_jsonl(cases)
    write_bytes_atomic(out_dir / CASES_FILE, data)
    manifest = {
        "table": "consult_cases",
        "cases_file": CASES_FILE,
        "cases_sha256": hashlib.sha256(data).hexdigest(),
        "kb_version": kb_version,
        "settings": settings.model_dump(mode="json") if isinstance(settings, BaseModel) else settings,
        "counts": case_set_counts(cases),
    }
    write_text_atomic(out_dir / MANIFEST_FILE, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return out_dir


def case_set_manifest(case_set_dir: Path) -> dict[str, Any]:
    path = Path(case_set_dir) / MANIFEST_FILE
    if not path.exists():
        raise ValueError(f"{case_set_dir}: no {MANIFEST_FILE}; build it with `threadmed consult cases`")
    return json.loads(path.read_text(encoding="utf-8"))


def case_set_fingerprint(case_set_dir: Path) -> str:
    """The sha256 of cases.jsonl, as the manifest records it."""
    return case_set_manifest(case_set_dir)["cases_sha256"]


def load_case_set(case_set_dir: Path) -> list[ConsultCase]:
    """The cases of a written case set, in order; raises ValueError when the file is not the manifest's."""
    data = read_verified_bytes(Path(case_set_dir) / CASES_FILE, case_set_fingerprint(case_set_dir))
    return [ConsultCase.model_validate_json(line) for line in data.splitlines() if line.strip()]


def check_case_set(case_set_dir: Path) -> None:
    """Raise UserError unless the folder holds a case set that `threadmed consult cases` wrote."""
    for name in (CASES_FILE, MANIFEST_FILE):
        if not (Path(case_set_dir) / name).is_file():
            raise UserError(
                f"{case_set_dir} is not a consultation case set (no {name}); "
                "pass the --out folder of `threadmed consult cases`",
                "--cases",
            )


def load_sample(case_set_dir: Path, sample: SampleSpec) -> list[ConsultCase]:
    """The cases of `sample.split` in a seeded order (independent of the file's order), the first `limit`."""
    check_case_set(case_set_dir)
    cases = load_case_set(case_set_dir)
    chosen = [case for case in cases if case.split == sample.split]
    if not chosen:
        splits = sorted({case.split for case in cases})
        raise UserError(f"the case set has no {sample.split!r} cases; its splits: {splits}", "--split")
    order = {
        case.case_id: hashlib.sha256(f"{sample.seed}:{case.case_id}".encode()).digest() for case in chosen
    }
    return sorted(chosen, key=lambda case: order[case.case_id])[: sample.limit]


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
