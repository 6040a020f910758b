"""The clinical knowledge base's entries: AIU types, conditions, drugs, interactions, contraindications,
dosing facts, combination products and the salt and ester conversions.

Each model checks what one entry can check alone; references between entries (an MNI item naming an AIU
type, a regimen naming a drug) are checked by the loader, which knows every file.
"""

import re
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

# Mirror of the shared question-template ids (notes/consult_templates.md); the inquiry catalogue
# (inquiry/data/templates_v1.yaml) names the same ids.
TEMPLATE_IDS = frozenset(
    {
        "chief_complaint", "onset_duration", "severity", "location_radiation", "character_quality",
        "timing_pattern", "aggravating_relieving", "fever_chills", "respiratory", "cardiac", "ent",
        "gastrointestinal", "urinary", "skin", "neurological", "gynae_pregnancy", "past_medical_history",
        "medications", "allergies", "family_history", "social_history", "exposures_travel_contacts",
        "prior_treatment", "systemic_red_flags", "impact_function", "mental_health",
    }
)  # fmt: skip

Department = Literal[
    "respiratory", "ent", "gastrointestinal", "urology", "dermatology", "neurology", "cardiometabolic",
    "womens_health", "paediatrics",
]  # fmt: skip
AiuCategory = Literal[
    "symptom", "sign", "history", "medication", "allergy", "social", "profile", "investigation"
]
SafetyTag = Literal["red_flag", "contraindication"]
AgeBand = Literal["child", "adult", "older"]
# Our own reading of the BNF's pregnancy and breast-feeding advice (letter categories are retired):
# compatible = usual use, caution = use only when the benefit outweighs the risk, avoid = use another drug
# (a soft conflict), contraindicated = must not be given (teratogenic or toxic to the child; a hard one).
UseInPregnancy = Literal["compatible", "caution", "avoid", "contraindicated"]
# Child-Pugh class A, B, C.
HepaticSeverity = Literal["mild", "moderate", "severe"]
HEPATIC_SEVERITIES: tuple[HepaticSeverity, ...] = ("mild", "moderate", "severe")
Route = Literal["oral", "topical", "inhaled", "nasal", "vaginal", "intramuscular", "sublingual", "rectal"]
MassUnit = Literal["microgram", "mg", "g"]
# What one strength is per: a count of a form (one tablet, one puff) or one ml of a liquid.
DoseForm = Literal["tablet", "capsule", "puff", "spray", "sachet", "pessary", "ml"]


class Entry(BaseModel, frozen=True, extra="forbid"):
    """Every entry says which guideline, label or reference its facts rest on."""

    source: str = Field(min_length=3)


class AiuType(Entry, frozen=True):
    """A kind of atomic information unit: what the patient can reveal and how they say it.

    `statement` is the clinical form with a `{value}` slot ("fever for {value}"); `positive` is the lay
    reply when the case has the unit (it may use `{value}`), `negative` the reply when it is ruled out.
    """

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    category: AiuCategory
    template: str
    statement: str
    positive: str
    negative: str
    safety: tuple[SafetyTag, ...] = ()

    @field_validator("statement")
    @classmethod
    def _has_value_slot(cls, statement: str) -> str:
        if "{value}" not in statement:
            raise ValueError("statement has no {value} slot")
        return statement

    @field_validator("template")
    @classmethod
    def _known_template(cls, template: str) -> str:
        if template not in TEMPLATE_IDS:
            raise ValueError(f"unknown template id '{template}'")
        return template


class Evidence(BaseModel, frozen=True, extra="forbid"):
    """An AIU type that supports a condition or, present, argues against it; weight in (0, 1]."""

    aiu: str
    weight: float = Field(gt=0.0, le=1.0)
    direction: Literal["supports", "rules_out"] = "supports"


class DoseOption(BaseModel, frozen=True, extra="forbid"):
    """One first-line prescription; days None = continued (a chronic condition)."""

    drug: str
    dose: float = Field(gt=0)
    unit: str
    frequency_per_day: float = Field(gt=0)
    days: int | None = Field(default=None, gt=0)
    route: Route
    age_band: AgeBand = "adult"


class Regimen(BaseModel, frozen=True, extra="forbid"):
    """What a plan for the condition should contain: drug classes expected and first-line options.

    A condition managed without drugs (infantile colic) or by urgent referral has no classes; `advice`
    always says what the plan should tell the patient.
    """

    drug_classes: tuple[str, ...] = ()
    first_line: tuple[DoseOption, ...] = ()
    advice: str = Field(min_length=3)
    urgent_referral: bool = False

    @model_validator(mode="after")
    def _classes_have_options(self) -> "Regimen":
        if self.drug_classes and not self.first_line:
            raise ValueError("drug_classes given without any first_line option")
        return self


class Condition(Entry, frozen=True):
    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    title: str
    icd11: str = Field(pattern=r"^[0-9A-HJ-NP-Z]{4}(\.[0-9A-Z]{1,2})?$")
    department: Department
    severity: int = Field(ge=1, le=3)
    red_flags: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = Field(min_length=1)
    mni: tuple[str, ...] = Field(min_length=2, max_length=5)
    regimen: Regimen
    synonyms: tuple[str, ...] = ()

    @field_validator("mni")
    @classmethod
    def _distinct_mni(cls, mni: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(mni)) != len(mni):
            raise ValueError("mni lists an AIU type twice")
        return mni


class DailyMaximum(BaseModel, frozen=True, extra="forbid"):
    """Maximum daily dose per age band in the drug's dose unit; None = not for that band."""

    child: float | None = Field(default=None, gt=0)
    adult: float | None = Field(default=None, gt=0)
    older: float | None = Field(default=None, gt=0)


class UsualDose(BaseModel, frozen=True, extra="forbid"):
    dose: float = Field(gt=0)
    unit: str
    frequency_per_day: float = Field(gt=0)


class DrugClass(Entry, frozen=True):
    """A drug class. `terms` are the further words people and other sources use for it ("sulfa",
    "anti-inflammatories"); its id and title, each also in the singular, name it as well."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    title: str
    terms: tuple[str, ...] = ()


class MinimumAge(BaseModel, frozen=True, extra="forbid"):
    """The youngest age (years) the drug may be given at, and why."""

    age: int = Field(gt=0, le=120)
    reason: str = Field(min_length=3)


class Drug(Entry, frozen=True):
    """A generic drug. `spellings` are other generic names and common misspellings ("acetaminophen").
    `classes` are further classes beyond `drug_class` (clarithromycin: strong_cyp3a4_inhibitors,
    qt_prolonging) that class rules match as well; `drug_class` alone decides regimens."""

    name: str = Field(pattern=r"^[a-z][a-z0-9 -]*$")
    brands: tuple[str, ...] = ()
    spellings: tuple[str, ...] = ()
    drug_class: str
    route: Route
    usual_dose: UsualDose
    max_daily: DailyMaximum
    pregnancy: UseInPregnancy
    lactation: UseInPregnancy
    renal: str | None = None
    hepatic: str | None = None
    allergy_class: str | None = None
    cross_reactive: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    min_age: MinimumAge | None = None
    # Hard limits for a profile that gives its band: must not be given under this eGFR (mL/min/1.73 m2),
    # or from this hepatic impairment on; `renal` / `hepatic` say why.
    renal_avoid_below: int | None = Field(default=None, gt=0, le=120)
    hepatic_avoid_from: HepaticSeverity | None = None

    @model_validator(mode="after")
    def _distinct_classes_and_limits_with_notes(self) -> "Drug":
        if len(set(self.all_classes)) != len(self.all_classes):
            raise ValueError("classes repeats a class (or its drug_class)")
        if self.renal_avoid_below is not None and self.renal is None:
            raise ValueError("renal_avoid_below needs a renal note saying why")
        if self.hepatic_avoid_from is not None and self.hepatic is None:
            raise ValueError("hepatic_avoid_from needs a hepatic note saying why")
        return self

    @property
    def all_classes(self) -> tuple[str, ...]:
        """Its drug_class, then its further classes: every class a class rule may name it by."""
        return (self.drug_class, *self.classes)

    @property
    def avoid_in_pregnancy(self) -> bool:
        return self.pregnancy in ("avoid", "contraindicated")


class Interaction(Entry, frozen=True):
    """A severe interaction between two drugs (`scope: drug`) or two drug classes (`scope: class`); a class
    with itself (a == b) is two different drugs of that class (two NSAIDs)."""

    a: str
    b: str
    scope: Literal["drug", "class"]
    severity: Literal["severe", "moderate"] = "severe"
    effect: str

    @model_validator(mode="after")
    def _two_sides(self) -> "Interaction":
        if self.a == self.b and self.scope == "drug":
            raise ValueError(f"interacts with itself ('{self.a}')")
        return self


class Contraindication(Entry, frozen=True):
    """A drug or drug class that must not (absolute) or should preferably not (relative) be given with a
    KB condition or a patient state named by an AIU type (pregnancy, renal impairment)."""

    drug: str | None = None
    drug_class: str | None = None
    condition: str | None = None
    aiu: str | None = None
    level: Literal["absolute", "relative"]
    reason: str

    @model_validator(mode="after")
    def _one_of_each(self) -> "Contraindication":
        if (self.drug is None) == (self.drug_class is None):
            raise ValueError("give exactly one of drug, drug_class")
        if (self.condition is None) == (self.aiu is None):
            raise ValueError("give exactly one of condition, aiu")
        return self

    @property
    def key(self) -> str:
        return f"{self.drug or self.drug_class} / {self.condition or self.aiu}"


class Strength(BaseModel, frozen=True, extra="forbid"):
    """The drug in one unit of a form (one tablet, one puff, one ml of a liquid); several `amounts` when the
    form comes in several standard strengths (the critic then checks the whole range)."""

    form: DoseForm
    amounts: tuple[float, ...] = Field(min_length=1)
    unit: MassUnit

    @field_validator("amounts")
    @classmethod
    def _positive_and_sorted(cls, amounts: tuple[float, ...]) -> tuple[float, ...]:
        if any(amount <= 0 for amount in amounts):
            raise ValueError("amounts must be above 0")
        return tuple(sorted(set(amounts)))


class WeeklyDosing(BaseModel, frozen=True, extra="forbid"):
    """A drug taken once a week: `maximum` is the most a week, in the drug's KB dose unit."""

    maximum: float = Field(gt=0)


class ChildPerKg(BaseModel, frozen=True, extra="forbid"):
    """A child's maximum a day by weight: `per_kg` x the weight in kg, never above `cap` (the drug's KB dose
    unit per kg a day, and that unit)."""

    per_kg: float = Field(gt=0)
    cap: float = Field(gt=0)


class Dosing(Entry, frozen=True):
    """Dose facts of a KB drug beyond its usual and maximum daily dose: standard strengths of its forms, a
    once-weekly schedule, a child's weight-based maximum."""

    drug: str
    strengths: tuple[Strength, ...] = ()
    weekly: WeeklyDosing | None = None
    child_per_kg: ChildPerKg | None = None

    @model_validator(mode="after")
    def _one_strength_per_form(self) -> "Dosing":
        forms = [strength.form for strength in self.strengths]
        if len(set(forms)) != len(forms):
            raise ValueError("a form is listed twice under strengths")
        return self


class ProductVariant(BaseModel, frozen=True, extra="forbid"):
    """One strength of a combination product: each ingredient's amount per tablet or capsule, in the
    product's ingredient order; `brands` are sold at this strength only (Solpadol is co-codamol 30/500)."""

    strengths: tuple[float, ...] = Field(min_length=2)
    brands: tuple[str, ...] = ()

    @field_validator("strengths")
    @classmethod
    def _positive(cls, strengths: tuple[float, ...]) -> tuple[float, ...]:
        if any(strength <= 0 for strength in strengths):
            raise ValueError("a strength is not positive")
        return strengths


class Product(Entry, frozen=True):
    """A combination product: one name (and brands) for two or more KB drugs. `variants` give its
    strengths per tablet or capsule in `unit`; `label` writes a variant as the BNF does ("30/500")."""

    name: str = Field(pattern=r"^[a-z][a-z0-9 -]*$")
    brands: tuple[str, ...] = ()
    ingredients: tuple[str, ...] = Field(min_length=2)
    unit: str = "mg"
    variants: tuple[ProductVariant, ...] = ()

    @model_validator(mode="after")
    def _variants_fit(self) -> "Product":
        if len(set(self.ingredients)) != len(self.ingredients):
            raise ValueError("ingredients lists a drug twice")
        for variant in self.variants:
            if len(variant.strengths) != len(self.ingredients):
                raise ValueError(f"variant {self.label(variant)} gives {len(variant.strengths)} strengths "
                                 f"for {len(self.ingredients)} ingredients")  # fmt: skip
        labels = [self.label(variant) for variant in self.variants]
        if len(set(labels)) != len(labels):
            raise ValueError("a variant is listed twice")
        return self

    @staticmethod
    def label(variant: ProductVariant) -> str:
        return "/".join(f"{strength:g}" for strength in variant.strengths)


# A factor as the ratio its source states ("500/550": 500 mg of naproxen in 550 mg of its sodium salt).
_RATIO = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)\s*$")
_SALT_TEXT = r"^[a-z]+( [a-z]+)*$"


class SaltForm(Entry, frozen=True):
    """A salt or ester a KB drug is written with ("naproxen sodium") and `factor`: the mg of the drug's KB
    dose basis in one mg written with that salt, as the source states it. 1 when the KB already doses the
    drug as this salt (`basis`: the BNF doses diclofenac as diclofenac sodium) or when products state their
    strength as the basis ("amoxicillin 500 mg (as trihydrate)"). `factor` may be given as the ratio the
    source states, "500/550" (500 mg of naproxen in 550 mg of naproxen sodium); any other text fails."""

    drug: str
    salt: str = Field(pattern=_SALT_TEXT)
    factor: float = Field(gt=0)
    basis: bool = False

    @field_validator("factor", mode="before")
    @classmethod
    def _ratio_as_number(cls, factor: object) -> object:
        if isinstance(factor, str) and (ratio := _RATIO.match(factor)) is not None:
            numerator, denominator = (float(part) for part in ratio.groups())
            if denominator == 0:
                raise ValueError(f"ratio '{factor}' divides by 0")
            return numerator / denominator
        return factor

    @model_validator(mode="after")
    def _basis_is_one(self) -> "SaltForm":
        if self.basis and self.factor != 1:
            raise ValueError("the KB's basis salt has factor 1")
        return self


class SaltAlias(Entry, frozen=True):
    """Another spelling of a salt word or phrase ("besylate" for "besilate", "hcl" for "hydrochloride")."""

    alias: str = Field(pattern=_SALT_TEXT)
    salt: str = Field(pattern=_SALT_TEXT)

    @model_validator(mode="after")
    def _differs(self) -> "SaltAlias":
        if self.alias == self.salt:
            raise ValueError(f"'{self.alias}' is an alias of itself")
        return self


class UnconvertedSalt(Entry, frozen=True):
    """A salt or ester word no KB drug has a factor for: a name written with it resolves, its dose does
    not convert (unverified)."""

    salt: str = Field(pattern=_SALT_TEXT)
