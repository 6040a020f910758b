"""One consultation case: the patient, its atomic information units (AIUs), gold diagnoses and MNI target.

Generated from the knowledge base (cases/generate.py) or written by hand in the same schema (a YAML or
JSON list of these). Every builder, the simulator and the scorer see only this shape.
"""

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from tasks.benchmarks.consult.kb.models import AgeBand, Department, HepaticSeverity, SafetyTag

AiuRole = Literal["supporting", "ruling_out", "distractor"]
RENAL_IMPAIRMENT_EGFR = 60  # CKD stage 3 and worse (NICE NG203: chronic kidney disease)


class CaseAiu(BaseModel, frozen=True, extra="forbid"):
    """One clinical fact of the case. `present` False is a ruled-out item ("no chest pain")."""

    aiu_id: str  # the KB AIU type id: one unit per type in a case
    template: str  # the question template that reveals it
    value: str | None = None  # fills the KB type's `{value}` slot ("3 days"); None when it has none
    present: bool = True
    role: AiuRole = "supporting"
    safety: tuple[SafetyTag, ...] = ()


class GoldDiagnosis(BaseModel, frozen=True, extra="forbid"):
    condition_id: str
    icd11: str
    title: str
    core: bool = True
    severity: int = Field(ge=1, le=3)


class PatientProfile(BaseModel, frozen=True, extra="forbid"):
    """The patient. `egfr` (mL/min/1.73 m2) and `hepatic_severity` (Child-Pugh A/B/C as mild, moderate,
    severe) are optional bands: given, they imply the impairment flag (eGFR under 60: renal) and let the
    critic apply a drug's limits; the flags alone keep working as before."""

    age: int = Field(ge=0, le=120)
    sex: Literal["female", "male"]
    pregnant: bool = False
    breastfeeding: bool = False
    renal_impairment: bool = False
    hepatic_impairment: bool = False
    allergies: tuple[str, ...] = ()  # drugs (any name the KB knows), drug classes or terms for them
    medications: tuple[str, ...] = ()  # drugs, any name the KB knows
    egfr: float | None = Field(default=None, gt=0, le=200, allow_inf_nan=False)
    hepatic_severity: HepaticSeverity | None = None
    # known: a child's doses are checked per kg
    weight_kg: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _bands_imply_flags(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("egfr") is not None and data["egfr"] < RENAL_IMPAIRMENT_EGFR:
            data = {"renal_impairment": True, **data}
        if isinstance(data, dict) and data.get("hepatic_severity") is not None:
            data = {"hepatic_impairment": True, **data}
        return data

    @model_validator(mode="after")
    def _bands_agree_with_flags(self) -> "PatientProfile":
        if self.egfr is not None and self.renal_impairment != (self.egfr < RENAL_IMPAIRMENT_EGFR):
            raise ValueError(f"renal_impairment {self.renal_impairment} contradicts egfr {self.egfr:g} "
                             f"(impairment is an eGFR under {RENAL_IMPAIRMENT_EGFR})")  # fmt: skip
        if self.hepatic_severity is not None and not self.hepatic_impairment:
            raise ValueError(f"hepatic_impairment False contradicts hepatic_severity {self.hepatic_severity}")
        return self

    @property
    def age_band(self) -> AgeBand:
        return "child" if self.age < 12 else "older" if self.age >= 65 else "adult"


class FollowUp(BaseModel, frozen=True, extra="forbid"):
    """A follow-up the patient raises after the plan (part 2 scores them): a new constraint or a question."""

    kind: Literal["constraint", "question"]
    text: str  # what the patient says
    # For a constraint: allergy:<class>, pregnancy, no_tablets, cost:<drug>, takes:<drug>.
    constraint: str | None = None
    core: bool = False  # a core concern counts double


class ConsultCase(BaseModel, frozen=True, extra="forbid"):
    case_id: str
    department: Department
    difficulty: Literal["easy", "medium", "hard"] = "medium"
    opening: str  # the patient's first words
    profile: PatientProfile
    gold: tuple[GoldDiagnosis, ...] = Field(min_length=1)
    aius: tuple[CaseAiu, ...]
    mni_target: tuple[str, ...]  # AIU ids: the union of the core diagnoses' MNI sets present in the case
    follow_ups: tuple[FollowUp, ...] = ()
    split: str = "test"

    @model_validator(mode="after")
    def _mni_in_case(self) -> "ConsultCase":
        ids = {aiu.aiu_id for aiu in self.aius}
        if len(ids) != len(self.aius):
            raise ValueError(f"case {self.case_id}: an AIU type appears twice")
        if missing := sorted(set(self.mni_target) - ids):
            raise ValueError(f"case {self.case_id}: mni_target names AIUs not in the case: {missing}")
        return self

    def aiu(self, aiu_id: str) -> CaseAiu:
        return next(aiu for aiu in self.aius if aiu.aiu_id == aiu_id)

    @property
    def core_gold(self) -> tuple[GoldDiagnosis, ...]:
        return tuple(g for g in self.gold if g.core)
