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
from pydantic import BaseModel, ValidationError

from tasks.benchmarks.consult.case import ConsultCase, FollowUp, PatientProfile
from tasks.benchmarks.consult.critic import (
    CONSTRAINT_FORMS,
    allergy_problem,
    constraint_problem,
    drug_problem,
)
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.benchmarks.consult.kb.names import unknown_name
from tasks.core.files import read_verified_bytes, safe_load_yaml, write_bytes_atomic, write_text_atomic
from tasks.core.preflight import UserError, remedy
from tasks.evals.config import RunConfig, SampleSpec

CASES_FILE, MANIFEST_FILE = "cases.jsonl", "manifest.json"


def check_case(case: ConsultCase, kb: KnowledgeBase) -> None:
    """Raise ValueError naming every field of the case that refers to what the KB does not know, or breaks
    the follow-up grammar, with what is allowed there."""
    if problems := case_problems(case, kb):
        raise ValueError("; ".join(problems))


def case_problems(case: ConsultCase, kb: KnowledgeBase) -> list[str]:
    """`field: problem` for each field of the case the KB or the follow-up grammar does not allow."""
    follow_ups = [
        f"follow_ups.{position}.{problem}"
        for position, follow_up in enumerate(case.follow_ups)
        for problem in _follow_up_problems(follow_up, case.profile, kb)
    ]
    return [
        *_aiu_problems(case, kb),
        *_gold_problems(case, kb),
        *profile_problems(case.profile, kb),
        *follow_ups,
    ]


def _aiu_problems(case: ConsultCase, kb: KnowledgeBase) -> list[str]:
    problems = []
    for position, aiu in enumerate(case.aius):
        field, aiu_type = f"aius.{position}", kb.aiu_type(aiu.aiu_id)
        if aiu_type is None:
            names = [known.id for known in kb.aiu_types]
            problem = unknown_name(aiu.aiu_id, "an AIU type", names, f"aiu_types_v{kb.version}.yaml")
            problems.append(f"{field}.aiu_id: {problem}")
        elif aiu.template != aiu_type.template:
            problems.append(
                f"{field}.template: AIU '{aiu.aiu_id}' has template '{aiu.template}', "
                f"the KB says '{aiu_type.template}'"
            )
        elif aiu.present and aiu.value is None and "{value}" in aiu_type.positive:
            problems.append(f"{field}.value: AIU '{aiu.aiu_id}' is present and its reply needs a value")
    return problems


def _gold_problems(case: ConsultCase, kb: KnowledgeBase) -> list[str]:
    problems = []
    for position, gold in enumerate(case.gold):
        field, condition = f"gold.{position}", kb.condition(gold.condition_id)
        if condition is None:
            names = [known.id for known in kb.conditions]
            problem = unknown_name(gold.condition_id, "a condition", names, f"conditions_v{kb.version}.yaml")
            problems.append(f"{field}.condition_id: {problem}")
            continue
        for name, known in (("icd11", condition.icd11), ("severity", condition.severity)):
            if getattr(gold, name) != known:
                problems.append(
                    f"{field}.{name}: condition '{gold.condition_id}' has {getattr(gold, name)}, "
                    f"the KB says {known}"
                )
    return problems


def profile_problems(profile: PatientProfile, kb: KnowledgeBase) -> list[str]:
    problems = [
        f"profile.{flag}: a male patient cannot be {flag}"
        for flag in ("pregnant", "breastfeeding")
        if profile.sex == "male" and getattr(profile, flag)
    ]
    for field, names, check in (
        ("allergies", profile.allergies, allergy_problem),
        ("medications", profile.medications, drug_problem),
    ):
        problems += [
            f"profile.{field}.{position}: {problem}"
            for position, name in enumerate(names)
            if (problem := check(name, kb)) is not None
        ]
    return problems


def _follow_up_problems(follow_up: FollowUp, profile: PatientProfile, kb: KnowledgeBase) -> list[str]:
    constraint = follow_up.constraint
    if follow_up.kind == "question":
        return (
            []
            if constraint is None
            else ["constraint: a question has none (a follow-up with one is kind: constraint)"]
        )
    if constraint is None:
        return [f"constraint: missing (allowed: {CONSTRAINT_FORMS})"]
    if (problem := constraint_problem(constraint, kb)) is not None:
        return [f"constraint: {problem}"]
    if constraint == "pregnancy" and profile.sex == "male":
        return ["constraint: 'pregnancy' for a male patient"]
    return []


def load_case_file(path: Path, kb: KnowledgeBase | None = None) -> list[ConsultCase]:
    """A hand-written YAML or JSON list of cases -> validated cases; a ValueError names the file and case."""
    path = Path(path)
    try:
        items = safe_load_yaml(path.read_text(encoding="utf-8"))  # YAML reads JSON too
    except yaml.YAMLError as error:
        raise ValueError(f"{path.name}: not valid YAML or JSON: {error}") from None
    if not isinstance(items, list):
        raise ValueError(f"{path.name}: expected a list of cases")
    return checked_cases(items, kb or load_kb(), path.name)


def checked_cases(items: list[Any], kb: KnowledgeBase, source: str) -> list[ConsultCase]:
    """Cases as read from a file -> cases valid in the schema and against the KB (`check_case`), ids
    unique; the first bad case raises a ValueError naming `source`, the case and every field at fault."""
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
            raise ValueError(f"{source}: case '{name}': {problems}") from None
        except ValueError as error:
            raise ValueError(f"{source}: case '{name}': {error}") from None
        if case.case_id in seen:
            raise ValueError(f"{source}: case '{name}': duplicate case_id")
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
    """The cases of a written case set, in order, checked against the KB version it was written with;
    raises ValueError when the file is not the manifest's or a case is not valid."""
    path = Path(case_set_dir) / CASES_FILE
    manifest = case_set_manifest(case_set_dir)
    data = read_verified_bytes(path, manifest["cases_sha256"])
    try:
        items = [json.loads(line) for line in data.splitlines() if line.strip()]
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not one JSON case a line: {error}") from None
    return checked_cases(items, load_kb(manifest.get("kb_version", 1)), str(path))


def check_case_set(case_set_dir: Path) -> None:
    """Raise UserError unless the folder holds a case set that `threadmed consult cases` wrote."""
    for name in (CASES_FILE, MANIFEST_FILE):
        if not (Path(case_set_dir) / name).is_file():
            fix = remedy(
                "pass the --out folder of `threadmed consult cases`",
                "pass the out_dir of a consult-cases run",
            )
            raise UserError(f"{case_set_dir} is not a consultation case set (no {name}); {fix}", "--cases")


def load_sample(case_set_dir: Path, sample: SampleSpec) -> list[ConsultCase]:
    """The cases of `sample.split` in a seeded order (independent of the file's order), the first `limit`."""
    check_case_set(case_set_dir)
    try:
        cases = load_case_set(case_set_dir)
    except ValueError as error:  # the command line reports it before any flow starts (bench.plan)
        raise UserError(str(error), "--cases") from None
    chosen = [case for case in cases if case.split == sample.split]
    if not chosen:
        splits = sorted({case.split for case in cases})
        raise UserError(f"the case set has no {sample.split!r} cases; its splits: {splits}", "--split")
    order = {
        case.case_id: hashlib.sha256(f"{sample.seed}:{case.case_id}".encode()).digest() for case in chosen
    }
    return sorted(chosen, key=lambda case: order[case.case_id])[: sample.limit]


def check_sample_split(case_set_dir: Path, config: RunConfig) -> None:
    """Raise UserError when the run's sampled split holds no case of the case set."""
    load_sample(case_set_dir, config.sample)
