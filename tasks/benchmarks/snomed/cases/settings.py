"""How a SNOMED case set is built: reference date, gold set, observation cap, split and sample."""

from datetime import date
from typing import Literal

from pydantic import Field

from tasks.core.strict import StrictModel

SourceFormat = Literal["fhir", "synthea_csv", "omop", "reference"]

# The reference benchmark kept 10 observations per patient; 30 leaves room for the labs and surveys
# of a chronic patient while keeping a patient prompt short.
DEFAULT_MAX_OBSERVATIONS = 30


class CaseSetSettings(StrictModel, frozen=True):
    """Every choice that changes the cases; all of it is recorded in the case set's manifest.

    - reference_date: the date the record is read at; None = each patient's last record date (the latest
      encounter, condition onset, observation, medication start or allergy onset).
    - gold_scope: `all` conditions of the record (the reference's reading) or only those `active` at the
      reference date (no stop before it).
    - gold_tags: semantic tags kept in the gold set; a condition whose tag is unknown is kept.
    - max_observations: observation kinds kept per case, the most recently observed first; None keeps all.
    - train_share: share of patients put in the `train` split (by a seeded hash of the patient id).
    - sample_size: keep this many cases (a seeded choice independent of input order); None keeps all.
    """

    reference_date: date | None = None
    gold_scope: Literal["all", "active"] = "all"
    gold_tags: tuple[str, ...] = ("disorder", "finding")
    max_observations: int | None = Field(default=DEFAULT_MAX_OBSERVATIONS, ge=0)
    train_share: float = Field(default=0.0, ge=0.0, le=1.0)
    sample_size: int | None = Field(default=None, ge=0)
    seed: int = 0
