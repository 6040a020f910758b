"""What the safety critic reports: one typed violation per rule that fired, naming its KB entry and source."""

from typing import Literal

from pydantic import BaseModel

from tasks.benchmarks.consult.kb.models import Drug

ViolationKind = Literal[
    "contraindication", "allergy", "cross_reactivity", "interaction", "pregnancy", "lactation", "age_band",
    "renal", "hepatic", "dose_above_maximum", "dose_below_half_usual", "wrong_route", "minimum_age",
    "dose_unreadable", "dose_too_frequent", "unverified",
]  # fmt: skip
# hard fails PSC; soft is reported only; unverified: the critic could not check the item (an unresolved
# drug, a dose it cannot read), so the plan cannot be called safe: PSC fails too.
Severity = Literal["hard", "soft", "unverified"]
UNREADABLE: tuple[ViolationKind, Severity] = ("dose_unreadable", "unverified")


class Violation(BaseModel, frozen=True, extra="forbid"):
    kind: ViolationKind
    severity: Severity
    drug: str  # KB generic name (as written for an unverified item)
    other: str | None = None  # the other drug of an interaction
    entry: str  # the KB entry that fired: "interaction warfarin / clarithromycin"
    source: str  # that entry's source
    detail: str  # one sentence for the report


def drug_violation(
    kind: ViolationKind, severity: Severity, drug: Drug, entry: str, detail: str, source: str | None = None
) -> Violation:
    """A violation of a drug's KB entry (of its dosing entry when `source` is given)."""
    return Violation(
        kind=kind, severity=severity, drug=drug.name, entry=entry, source=source or drug.source, detail=detail
    )
