"""Seeded consultation cases from the knowledge base: same settings, same cases (spec: Resources, 4).

Rules, per case (department and difficulty come from the mix, the condition cycles through the
department's conditions in a seeded order):
- gold: the primary condition, core. medium adds a non-core comorbidity, hard a second core diagnosis;
  either fits the patient (age, sex, pregnancy), contradicts no evidence of the primary (one's
  supporting AIU is not the other's ruling-out one) and comes from another department when one fits;
  when none fits (an infant), the case keeps the primary alone.
- profile: age and sex fitting the condition (PROFILE_RULES) or its department (paediatrics: a child;
  women's health: female, pregnant one time in four when of child-bearing age); random allergies and
  long-term medicines from the KB; renal and hepatic impairment rarely.
- AIUs, in this order (the first of a type wins; the simulator releases them in this order):
  1. the core diagnoses' evidence, MNI first: supporting evidence present with a value, ruling-out
     evidence absent; profile facts (age, pregnancy, medication, ...) present as the profile says;
     hard cases keep only half of the non-MNI supporting evidence. Role `supporting`.
  2. the non-core diagnosis' MNI, the same way. Role `supporting`.
  3. 1 (easy) or 2 competing conditions of the primary's department: up to 2 of their supporting AIUs
     each, absent. Role `ruling_out`.
  4. 1 (easy), 2 (medium) or 3 (hard) distractors: supporting AIUs of conditions of other departments,
     never red flags, present with a value. Role `distractor`.
  5. the profile's remaining facts (pregnancy, impairments, allergies, medicines). Role `distractor`:
     they bear on the plan, not on the diagnosis.
- mni_target: the union of the core diagnoses' MNI sets.
- opening: the positive reply of the primary's first present MNI symptom or sign (else its first present
  AIU) that names no gold diagnosis.
- follow-ups: one constraint on the first-line drug (allergy to its class, pregnancy, cannot swallow
  tablets, cannot afford it, already takes a drug it interacts with severely: the first such KB drug by
  name that the patient's age band may take, and not one to avoid in pregnancy for a pregnant patient;
  cannot swallow tablets when there is no drug) and one or two questions, the first a core concern.
"""

import random
from collections.abc import Sequence
from typing import Literal, NamedTuple

from pydantic import Field, field_validator

from tasks.benchmarks.consult.case import (
    AiuRole,
    CaseAiu,
    ConsultCase,
    FollowUp,
    GoldDiagnosis,
    PatientProfile,
)
from tasks.benchmarks.consult.cases.values import TIME_PHRASES, VALUES
from tasks.benchmarks.consult.kb.loading import KnowledgeBase
from tasks.benchmarks.consult.kb.models import Condition, Department, Drug
from tasks.benchmarks.consult.simulator import aiu_sentence, diagnosis_names, names_a_diagnosis
from tasks.core.strict import StrictModel

Difficulty = Literal["easy", "medium", "hard"]
DIFFICULTIES: tuple[Difficulty, ...] = ("easy", "medium", "hard")

# (youngest, oldest, sex, pregnant); None = free. Conditions not listed take their department's ages.
PROFILE_RULES: dict[str, tuple[int, int, str | None, bool | None]] = {
    "bronchiolitis": (0, 0, None, False),
    "infantile_colic": (0, 0, None, False),
    "croup": (1, 5, None, False),
    "threadworm": (3, 10, None, False),
    "chickenpox": (2, 10, None, False),
    "acne_vulgaris": (14, 24, None, None),
    "menopausal_symptoms": (46, 55, "female", False),
    "pre_eclampsia": (22, 40, "female", True),
    "dysmenorrhoea": (15, 30, "female", False),
    "vulvovaginal_candidiasis": (18, 45, "female", None),
    "benign_prostatic_hyperplasia": (55, 80, "male", False),
    "hypertension": (45, 75, None, None),
    "angina": (50, 80, None, False),
    "type_2_diabetes": (40, 75, None, None),
    "copd_exacerbation": (50, 80, None, False),
}
CHILD_AGES, ADULT_AGES = (1, 11), (18, 75)
PROFILE_AIUS = frozenset(
    {"age", "sex", "pregnancy", "breastfeeding", "renal_impairment", "hepatic_impairment",
     "penicillin_allergy", "nsaid_allergy", "current_medication"}
)  # fmt: skip
ALLERGY_AIUS = {"penicillins": "penicillin_allergy", "nsaids": "nsaid_allergy"}
FOLLOW_UP_QUESTIONS = (
    "What should I do if it doesn't get better?",
    "How exactly should I take it?",
    "Are there side effects I should look out for?",
)


class Demographics(NamedTuple):
    """A real patient's age and sex (tasks/benchmarks/consult/cases/synthea_profiles.py reads them)."""

    patient_id: str
    age: int
    sex: str


class CaseGenerationSettings(StrictModel, frozen=True):
    """Everything that changes the generated cases; recorded in the case set's manifest.

    `departments` and `difficulty` are relative weights; counts follow them exactly (largest remainder).
    No departments = every department of the KB, equally.
    """

    n: int = Field(default=40, ge=1)
    seed: int = 0
    departments: dict[Department, float] = Field({})
    difficulty: dict[Difficulty, float] = Field({"easy": 1.0, "medium": 1.0, "hard": 1.0})
    kb_version: int = 1
    profiles_from: str | None = Field(
        None, description="A folder of Synthea FHIR bundles: patients' ages and sexes are taken from it."
    )

    @field_validator("departments", "difficulty")
    @classmethod
    def _positive_weights(cls, weights: dict[str, float]) -> dict[str, float]:
        if any(weight <= 0 for weight in weights.values()):
            raise ValueError(f"weights must be positive: {weights}")
        return weights


def allocate(weights: dict[str, float], n: int) -> list[str]:
    """n slots shared by weight (largest remainder, ties to the earlier key), keys repeated in key order."""
    total = sum(weights.values())
    exact = {key: n * weight / total for key, weight in weights.items()}
    counts = {key: int(share) for key, share in exact.items()}
    by_remainder = sorted(weights, key=lambda key: -(exact[key] - counts[key]))
    for key in by_remainder[: n - sum(counts.values())]:
        counts[key] += 1
    return [key for key in weights for _ in range(counts[key])]


def generate_cases(
    kb: KnowledgeBase, settings: CaseGenerationSettings, demographics: Sequence[Demographics] = ()
) -> list[ConsultCase]:
    """The case set of `settings`, in case-id order. Pure: the same KB, settings and demographics give the
    same cases. With `demographics` (real patients' ages and sexes), each case takes one that fits its
    primary condition, a seeded choice; a case that no patient fits gets generated demographics."""
    departments = settings.departments or {d: 1.0 for d in dict.fromkeys(c.department for c in kb.conditions)}
    department_slots = allocate(dict(departments), settings.n)
    difficulty_slots = allocate(dict(settings.difficulty), settings.n)
    random.Random(f"{settings.seed}:difficulty").shuffle(difficulty_slots)
    cycles = {
        department: _seeded_order(kb, department, settings.seed)
        for department in dict.fromkeys(department_slots)
    }
    seen: dict[str, int] = {}
    cases = []
    for index, (department, difficulty) in enumerate(zip(department_slots, difficulty_slots, strict=True)):
        cycle = cycles[department]
        if not cycle:
            raise ValueError(f"the KB has no condition in department '{department}'")
        primary = cycle[seen.get(department, 0) % len(cycle)]
        seen[department] = seen.get(department, 0) + 1
        rng = random.Random(f"{settings.seed}:case:{index}")
        case_id = f"consult-s{settings.seed}-{index + 1:04d}"
        fitting = [d for d in demographics if fits_demographics(primary, d.age, d.sex)]
        chosen = rng.choice(fitting) if fitting else None
        cases.append(generate_case(kb, case_id, primary, difficulty, rng, chosen))  # type: ignore[arg-type]
    return cases


def _seeded_order(kb: KnowledgeBase, department: str, seed: int) -> list[Condition]:
    conditions = [c for c in kb.conditions if c.department == department]
    random.Random(f"{seed}:order:{department}").shuffle(conditions)
    return conditions


def generate_case(
    kb: KnowledgeBase,
    case_id: str,
    primary: Condition,
    difficulty: Difficulty,
    rng: random.Random,
    demographics: Demographics | None = None,
) -> ConsultCase:
    """One case around `primary` (see the module docstring for the rules)."""
    profile = generate_profile(kb, primary, rng, demographics)
    second = _second_condition(kb, primary, profile, rng) if difficulty != "easy" else None
    core = [primary] + ([second] if second is not None and difficulty == "hard" else [])
    non_core = [second] if second is not None and difficulty == "medium" else []
    gold = tuple(
        GoldDiagnosis(condition_id=c.id, icd11=c.icd11, title=c.title, core=c in core, severity=c.severity)
        for c in (*core, *non_core)
    )
    names = [name for c in (*core, *non_core) for name in diagnosis_names(c)]
    builder = _AiuBuilder(kb, profile, rng, names)
    for condition in core:
        builder.add_evidence(condition, keep_share=0.5 if difficulty == "hard" else 1.0)
    for condition in non_core:
        builder.add_evidence(condition, mni_only=True)
    gold_ids = {g.condition_id for g in gold}
    gold_evidence = {item.aiu for c in (*core, *non_core) for item in c.evidence}
    competitors = [c for c in kb.conditions if c.department == primary.department and c.id not in gold_ids]
    for competitor in rng.sample(competitors, min(len(competitors), 1 if difficulty == "easy" else 2)):
        builder.add_ruling_out(competitor, gold_evidence)
    builder.add_distractors(primary, gold_ids, {"easy": 1, "medium": 2, "hard": 3}[difficulty], names)
    builder.add_profile_facts()
    return ConsultCase(
        case_id=case_id,
        department=primary.department,
        difficulty=difficulty,
        opening=_opening(kb, primary, builder.aius, names),
        profile=profile,
        gold=gold,
        aius=tuple(builder.aius.values()),
        mni_target=tuple(dict.fromkeys(aiu for c in core for aiu in c.mni)),
        follow_ups=_follow_ups(kb, primary, profile, rng),
    )


def _ages(condition: Condition) -> tuple[int, int]:
    if condition.id in PROFILE_RULES:
        return PROFILE_RULES[condition.id][:2]
    return CHILD_AGES if condition.department == "paediatrics" else ADULT_AGES


def fits_demographics(condition: Condition, age: int, sex: str) -> bool:
    """Whether a patient of this age and sex could have the condition (pregnancy aside)."""
    youngest, oldest = _ages(condition)
    _, _, required_sex, _ = PROFILE_RULES.get(condition.id, (0, 0, None, None))
    if condition.department == "womens_health":
        required_sex = "female"
    return youngest <= age <= oldest and required_sex in (None, sex)


def fits(condition: Condition, profile: PatientProfile) -> bool:
    """Whether the condition could be this patient's: age, sex and pregnancy as PROFILE_RULES say."""
    youngest, oldest = _ages(condition)
    _, _, sex, pregnant = PROFILE_RULES.get(condition.id, (0, 0, None, None))
    if condition.department == "womens_health":
        sex = "female"
    return (
        youngest <= profile.age <= oldest
        and sex in (None, profile.sex)
        and pregnant in (None, profile.pregnant)
    )


def generate_profile(
    kb: KnowledgeBase, condition: Condition, rng: random.Random, demographics: Demographics | None = None
) -> PatientProfile:
    youngest, oldest = _ages(condition)
    _, _, sex, pregnant = PROFILE_RULES.get(condition.id, (0, 0, None, None))
    if demographics is not None:
        age, sex = demographics.age, demographics.sex
    else:
        age = rng.randint(youngest, oldest)
        if condition.department == "womens_health":
            sex = "female"
        sex = sex or rng.choice(("female", "male"))
    if pregnant is None:
        pregnant = sex == "female" and 18 <= age <= 45 and condition.department == "womens_health"
        pregnant = pregnant and rng.random() < 0.25
    child, older = age < 12, age >= 65
    chronic = sorted({o.drug for c in kb.conditions for o in c.regimen.first_line if o.days is None})
    medications = (
        () if child or rng.random() >= (0.5 if older else 0.25) else rng.sample(chronic, rng.randint(1, 2))
    )
    allergies = (rng.choice(sorted(ALLERGY_AIUS)),) if rng.random() < 0.15 else ()
    return PatientProfile(
        age=age,
        sex=sex,  # type: ignore[arg-type]
        pregnant=pregnant,
        renal_impairment=not child and rng.random() < (0.1 if older else 0.03),
        hepatic_impairment=not child and rng.random() < 0.03,
        allergies=allergies,
        medications=tuple(sorted(medications)),
    )


def _second_condition(
    kb: KnowledgeBase, primary: Condition, profile: PatientProfile, rng: random.Random
) -> Condition | None:
    """A condition that fits the patient and contradicts none of the primary's evidence, from another
    department, else from the same one (a child's conditions are mostly paediatric); None when the KB has
    none (the case then has the primary alone)."""
    candidates = [
        c for c in kb.conditions if c.id != primary.id and fits(c, profile) and _compatible(primary, c)
    ]
    elsewhere = [c for c in candidates if c.department != primary.department]
    return rng.choice(elsewhere or candidates) if candidates else None


def _compatible(first: Condition, second: Condition) -> bool:
    def split(condition: Condition) -> tuple[set[str], set[str]]:
        supports = {e.aiu for e in condition.evidence if e.direction == "supports"} - PROFILE_AIUS
        rules_out = {e.aiu for e in condition.evidence if e.direction == "rules_out"} - PROFILE_AIUS
        return supports, rules_out

    (supports_a, rules_out_a), (supports_b, rules_out_b) = split(first), split(second)
    return not (supports_a & rules_out_b or supports_b & rules_out_a)


class _AiuBuilder:
    """The case's AIUs in insertion order; the first of a type wins. `names` are the gold diagnoses' names,
    which no sentence of the case may say."""

    def __init__(self, kb: KnowledgeBase, profile: PatientProfile, rng: random.Random, names: list[str]):
        self.kb, self.profile, self.rng, self.names = kb, profile, rng, names
        self.aius: dict[str, CaseAiu] = {}

    def add(self, aiu_id: str, present: bool, role: AiuRole) -> None:
        if aiu_id in self.aius:
            return
        aiu_type = self.kb.aiu_type(aiu_id)
        assert aiu_type is not None  # the KB loader checked every evidence reference
        if aiu_id in PROFILE_AIUS:
            present = self._profile_has(aiu_id)
        self.aius[aiu_id] = CaseAiu(
            aiu_id=aiu_id,
            template=aiu_type.template,
            value=self._value(aiu_id) if present else None,
            present=present,
            role=role,
            safety=aiu_type.safety,
        )

    def add_evidence(self, condition: Condition, keep_share: float = 1.0, mni_only: bool = False) -> None:
        evidence = {item.aiu: item for item in condition.evidence}
        others = [] if mni_only else [aiu for aiu in evidence if aiu not in condition.mni]
        for aiu_id in (*condition.mni, *others):
            supports = evidence[aiu_id].direction == "supports"
            optional = aiu_id not in condition.mni and supports
            if optional and self.rng.random() >= keep_share:
                continue
            self.add(aiu_id, present=supports, role="supporting")

    def add_ruling_out(self, competitor: Condition, gold_evidence: set[str]) -> None:
        ordered = (*competitor.mni, *(e.aiu for e in competitor.evidence if e.aiu not in competitor.mni))
        supporting = {e.aiu for e in competitor.evidence if e.direction == "supports"}
        usable = [
            aiu
            for aiu in dict.fromkeys(ordered)
            if aiu in supporting
            and aiu not in PROFILE_AIUS
            and aiu not in gold_evidence
            and aiu not in self.aius
        ]
        for aiu_id in usable[:2]:
            self.add(aiu_id, present=False, role="ruling_out")

    def add_distractors(self, primary: Condition, gold_ids: set[str], count: int, names: list[str]) -> None:
        near = {e.aiu for c in self.kb.conditions if c.id in gold_ids for e in c.evidence}
        near |= {e.aiu for c in self.kb.conditions if c.department == primary.department for e in c.evidence}
        pool = sorted(
            {
                e.aiu
                for c in self.kb.conditions
                if c.department != primary.department
                for e in c.evidence
                if e.direction == "supports"
            }
            - near
            - PROFILE_AIUS
            - set(self.aius)
            - {a.id for a in self.kb.aiu_types if "red_flag" in a.safety}
        )
        # A distractor must not say a gold diagnosis' name ("welts" when urticaria is gold).
        pool = [aiu for aiu in pool if not names_a_diagnosis(self.kb.aiu_type(aiu).positive, names)]  # type: ignore[union-attr]
        for aiu_id in self.rng.sample(pool, min(count, len(pool))):
            self.add(aiu_id, present=True, role="distractor")

    def add_profile_facts(self) -> None:
        for aiu_id in ("pregnancy", "renal_impairment", "hepatic_impairment", *ALLERGY_AIUS.values()):
            if self._profile_has(aiu_id):
                self.add(aiu_id, present=True, role="distractor")
        if self.profile.medications:
            self.add("current_medication", present=True, role="distractor")

    def _profile_has(self, aiu_id: str) -> bool:
        profile = self.profile
        has = {
            "age": True,
            "sex": True,
            "pregnancy": profile.pregnant,
            "breastfeeding": profile.breastfeeding,
            "renal_impairment": profile.renal_impairment,
            "hepatic_impairment": profile.hepatic_impairment,
            "current_medication": bool(profile.medications),
        }
        has |= {aiu: allergy in profile.allergies for allergy, aiu in ALLERGY_AIUS.items()}
        return has[aiu_id]

    def _value(self, aiu_id: str) -> str:
        if aiu_id == "age":
            return "under a year old" if self.profile.age == 0 else str(self.profile.age)
        if aiu_id == "sex":
            return self.profile.sex
        if aiu_id == "current_medication":
            return " and ".join(self.profile.medications) + " every day"
        # A value must not make the reply name a gold diagnosis ("penicillin gives me hives" when urticaria is
        # gold); the draw is unchanged for a case none of whose values would.
        values = VALUES.get(aiu_id, TIME_PHRASES)
        positive = self.kb.aiu_type(aiu_id).positive  # type: ignore[union-attr]
        unsaid = [
            value for value in values if not names_a_diagnosis(positive.replace("{value}", value), self.names)
        ]
        if not unsaid:
            raise ValueError(f"every value of '{aiu_id}' names a gold diagnosis ({', '.join(self.names)})")
        return self.rng.choice(unsaid)


def _opening(kb: KnowledgeBase, primary: Condition, aius: dict[str, CaseAiu], names: list[str]) -> str:
    ordered = (*primary.mni, *(e.aiu for e in primary.evidence))
    present = [
        aius[a] for a in dict.fromkeys(ordered) if a in aius and aius[a].present and a not in PROFILE_AIUS
    ]
    sentences = [
        (kb.aiu_type(aiu.aiu_id).category in ("symptom", "sign"), aiu_sentence(kb.aiu_type(aiu.aiu_id), aiu))  # type: ignore[union-attr]
        for aiu in present
    ]
    for wanted in (True, False):
        for is_complaint, sentence in sentences:
            if is_complaint == wanted and not names_a_diagnosis(sentence, names):
                return f"Hello doctor. {sentence}"
    return "Hello doctor. I haven't been feeling right."


def _follow_ups(
    kb: KnowledgeBase, primary: Condition, profile: PatientProfile, rng: random.Random
) -> tuple[FollowUp, ...]:
    options: list[FollowUp] = []
    first_line = primary.regimen.first_line[0] if primary.regimen.first_line else None
    drug = kb.drug(first_line.drug) if first_line else None
    if drug is not None and drug.allergy_class and drug.allergy_class not in profile.allergies:
        title = next(c.title for c in kb.drug_classes if c.id == drug.allergy_class).lower()
        options.append(FollowUp(kind="constraint", text=f"I've just remembered I'm allergic to {title}.",
                                constraint=f"allergy:{drug.allergy_class}", core=True))  # fmt: skip
    if profile.sex == "female" and 16 <= profile.age <= 45 and not profile.pregnant:
        options.append(FollowUp(kind="constraint", text="I've just found out I'm pregnant.",
                                constraint="pregnancy", core=True))  # fmt: skip
    if first_line is None or first_line.route == "oral":  # so every case has a constraint
        options.append(FollowUp(kind="constraint", text="I really struggle to swallow tablets.",
                                constraint="no_tablets"))  # fmt: skip
    if drug is not None:
        text = f"I can't afford {drug.name}, is there anything else?"
        options.append(FollowUp(kind="constraint", text=text, constraint=f"cost:{drug.name}"))
    if drug is not None and (taken := interacting_drug(kb, drug, profile)) is not None:
        options.append(FollowUp(kind="constraint", text=f"I forgot to say: I already take {taken}.",
                                constraint=f"takes:{taken}", core=True))  # fmt: skip
    questions = [
        FollowUp(kind="question", text=text, core=position == 0)
        for position, text in enumerate(rng.sample(FOLLOW_UP_QUESTIONS, rng.randint(1, 2)))
    ]
    return ((rng.choice(options),) if options else ()) + tuple(questions)


def interacting_drug(kb: KnowledgeBase, drug: Drug, profile: PatientProfile) -> str | None:
    """The first KB drug by name that interacts severely with `drug` and that this patient could be taking."""
    for other in sorted(kb.drugs, key=lambda candidate: candidate.name):
        found = kb.interaction(drug.name, other.name)
        severe = found is not None and found.severity == "severe"
        suits = getattr(other.max_daily, profile.age_band) is not None and not (
            profile.pregnant and other.avoid_in_pregnancy
        )
        if severe and suits and other.name not in profile.medications:
            return other.name
    return None
