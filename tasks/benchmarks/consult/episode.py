"""What one episode recorded, as the metrics read it: history turns, differential, plan and follow-ups.

The solver fills these from the conversation (every question's template and the AIUs it revealed are
the simulator's, recorded as it answered); the metrics (metrics.py) are pure functions of them.
"""

from typing import Literal

from pydantic import BaseModel, Field

EpisodeStatus = Literal["completed", "failed"]
ParseStatus = Literal["ok", "unparseable"]


class HistoryTurn(BaseModel, frozen=True, extra="forbid"):
    """One question of the history-taking stage (turns count from 1)."""

    turn: int
    question: str
    template: str | None  # None: the question matched no template
    revealed: tuple[str, ...] = ()  # AIU ids this turn revealed for the first time
    deflected: bool = False  # the simulator answered with a deflection


class DiagnosisItem(BaseModel, frozen=True, extra="forbid"):
    """One item of the agent's ranked differential, with its normalisation to the knowledge base."""

    rank: int  # 1 = first listed
    diagnosis: str
    icd11: str | None = None
    core: bool = False
    rationale: str = ""
    condition_id: str | None = None  # None: unmatched
    match: Literal["code", "exact", "fuzzy", "unmatched"] = "unmatched"


class PlanItem(BaseModel, frozen=True, extra="forbid"):
    """One drug of a treatment plan as the agent wrote it, with the KB drugs it resolved to.

    Every field but `drug` may be missing (plan completeness counts them); `dose` is in `unit`. A range
    ("1-2 tablets", "every 4-6 hours") is read at its worst case (2 tablets, 6 a day). `ingredients` is every
    KB drug of the item (both of co-amoxiclav's). `ingredients` and the fields after `route` are what the
    parser read besides the contract's fields (SCORES leaves them out; it keeps `generic`). Numbers are
    finite and above 0 by construction: what was written otherwise is in `unreadable`.
    """

    drug: str
    generic: str | None = None  # the one KB drug of a single-drug item; None: a combination, or unmatched
    ingredients: tuple[str, ...] = ()
    dose: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    unit: str | None = None
    frequency_per_day: float | None = Field(default=None, gt=0, allow_inf_nan=False)  # once a week = 1/7
    days: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    route: str | None = None
    # The drug in one tablet, capsule or puff (strength_unit a mass: "mg") or in one ml ("mg/ml"), as the
    # plan states it; None: the critic uses the KB's standard strengths.
    strength: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    strength_unit: str | None = None
    as_needed: bool = False  # "as needed": frequency_per_day is then the stated maximum a day
    # (field, why it cannot be read, quoting what was written): the critic calls the item unverified.
    unreadable: tuple[tuple[str, str], ...] = ()


class TreatmentPlan(BaseModel, frozen=True, extra="forbid"):
    items: tuple[PlanItem, ...] = ()
    advice: str = ""

    @property
    def generics(self) -> tuple[str, ...]:
        """The KB drugs the plan names (every ingredient of a combination), in plan order, each once."""
        return tuple(
            dict.fromkeys(
                drug
                for item in self.items
                for drug in item.ingredients or ((item.generic,) if item.generic is not None else ())
            )
        )


class FollowUpTurn(BaseModel, frozen=True, extra="forbid"):
    """One scripted follow-up (`index` in the case's script), the agent's answer and any revised plan."""

    index: int
    answer: str
    cut: bool = False  # the answer kept was cut at max_tokens (finish_reason 'length')
    revised_plan: TreatmentPlan | None = None  # None: no revision that parsed
    revision_parse: ParseStatus = "ok"  # unparseable: the answer tried a revision that did not parse

    def plan_after(self, before: TreatmentPlan | None) -> TreatmentPlan | None:
        """The plan in force after this follow-up, `before` the one in force before it (None: unread). A
        revision that did not parse leaves no plan that can be read: the agent meant to change the plan
        and what it changed it to is unknown, so the plan before is not credited to it."""
        if self.revision_parse == "unparseable":
            return None
        return self.revised_plan if self.revised_plan is not None else before


class Episode(BaseModel, frozen=True, extra="forbid"):
    case_id: str
    turns: tuple[HistoryTurn, ...]
    differential: tuple[DiagnosisItem, ...] = ()
    diagnosis_parse: ParseStatus = "ok"  # unparseable after the bounded re-ask: its metrics score the worst
    plan: TreatmentPlan = TreatmentPlan()
    plan_parse: ParseStatus = "ok"  # unparseable after the bounded re-ask: its metrics score the worst
    follow_ups: tuple[FollowUpTurn, ...] = ()
    # What a reader raised on a reply kept as unparseable: "<stage>: <error>" (reading.py).
    parse_errors: tuple[str, ...] = ()

    @property
    def first_plan(self) -> TreatmentPlan | None:
        """The treatment stage's plan; None when it did not parse (an unread plan, never an empty one)."""
        return self.plan if self.plan_parse == "ok" else None

    @property
    def revisions_unparseable(self) -> int:
        """Follow-up answers that tried to revise the plan and did not parse after the re-ask."""
        return sum(turn.revision_parse == "unparseable" for turn in self.follow_ups)
