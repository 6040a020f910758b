"""What one episode recorded, as the metrics read it: history turns and the differential.

The solver fills these from the conversation (every question's template and the AIUs it revealed are
the simulator's, recorded as it answered); the metrics (metrics.py) are pure functions of them.
"""

from typing import Literal

from pydantic import BaseModel

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


class Episode(BaseModel, frozen=True, extra="forbid"):
    case_id: str
    turns: tuple[HistoryTurn, ...]
    differential: tuple[DiagnosisItem, ...] = ()
    diagnosis_parse: ParseStatus = "ok"  # unparseable after the bounded re-ask: scored as empty
