"""The safety critic tests' small knowledge base (KB) and builders of drugs, conditions, patient facts,
plan items, plans and expected violations.
"""

from tasks.benchmarks.consult.case import PatientProfile
from tasks.benchmarks.consult.critic import PatientFacts, Violation
from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.benchmarks.consult.kb.models import (
    ChildPerKg,
    Condition,
    Contraindication,
    DailyMaximum,
    DoseOption,
    Dosing,
    Drug,
    DrugClass,
    Evidence,
    Interaction,
    Regimen,
    Strength,
    UsualDose,
    WeeklyDosing,
)


def drug(name, drug_class, dose, unit, per_day, maximum, **fields):
    return Drug(
        name=name,
        drug_class=drug_class,
        route=fields.pop("route", "oral"),
        usual_dose=UsualDose(dose=dose, unit=unit, frequency_per_day=per_day),
        max_daily=DailyMaximum(**maximum),
        pregnancy=fields.pop("pregnancy", "compatible"),
        lactation=fields.pop("lactation", "compatible"),
        source=f"label {name}",
        **fields,
    )


def condition(condition_id, drug_classes, first_line=()):
    return Condition(
        id=condition_id,
        title=condition_id,
        icd11="1A00",
        department="respiratory",
        severity=1,
        evidence=(Evidence(aiu="cough", weight=1.0),),
        mni=("cough", "fever"),
        regimen=Regimen(drug_classes=drug_classes, first_line=first_line, advice="rest"),
        source="test",
    )


ALL_BANDS = {"child": 2000, "adult": 4000, "older": 4000}
KB = KnowledgeBase(
    version=1,
    aiu_types=(),
    conditions=(
        condition(
            "otitis",
            ("penicillins", "macrolides"),
            (DoseOption(drug="amoxicillin", dose=500, unit="mg", frequency_per_day=3, route="oral"),),
        ),
        condition("colic", ()),
    ),
    drug_classes=tuple(
        DrugClass(id=class_id, title=class_id, source=f"class {class_id}")
        for class_id in (
            "analgesics",
            "nsaids",
            "antiplatelets",
            "penicillins",
            "cephalosporins",
            "macrolides",
            "tetracyclines",
            "anticoagulants",
            "statins",
            "saba",
            "rehydration",
            "antimetabolites",
        )
    ),
    drugs=(
        drug(
            "paracetamol",
            "analgesics",
            1000,
            "mg",
            4,
            ALL_BANDS,
            hepatic="Max 3 g a day.",
            brands=("Calpol",),
        ),
        drug(
            "ibuprofen",
            "nsaids",
            400,
            "mg",
            3,
            {"child": 1200, "adult": 2400, "older": 1200},
            pregnancy="avoid",
            renal="Avoid if possible.",
            allergy_class="nsaids",
            cross_reactive=("antiplatelets",),
        ),
        drug(
            "aspirin",
            "antiplatelets",
            75,
            "mg",
            1,
            {"adult": 4000, "older": 4000},
            lactation="avoid",
            allergy_class="nsaids",
        ),
        drug(
            "amoxicillin",
            "penicillins",
            500,
            "mg",
            3,
            {"child": 3000, "adult": 3000, "older": 3000},
            allergy_class="penicillins",
            cross_reactive=("cephalosporins",),
        ),
        drug(
            "cefalexin",
            "cephalosporins",
            500,
            "mg",
            3,
            {"child": 4000, "adult": 6000, "older": 6000},
            allergy_class="cephalosporins",
        ),
        drug(
            "clarithromycin",
            "macrolides",
            500,
            "mg",
            2,
            {"adult": 1000, "older": 1000},
            allergy_class="macrolides",
        ),
        drug("doxycycline", "tetracyclines", 100, "mg", 1, {"adult": 200, "older": 200}),
        drug("warfarin", "anticoagulants", 5, "mg", 1, {"adult": 15, "older": 15}),
        drug("simvastatin", "statins", 40, "mg", 1, {"adult": 80, "older": 80}, pregnancy="avoid"),
        drug(
            "salbutamol",
            "saba",
            200,
            "microgram",
            4,
            {"child": 800, "adult": 800, "older": 800},
            route="inhaled",
        ),
        drug(
            "oral rehydration salts", "rehydration", 1, "sachet", 5, {"child": 10, "adult": 20, "older": 20}
        ),
        drug("methotrexate", "antimetabolites", 7.5, "mg", 1, {"adult": 25, "older": 25}),
    ),
    interactions=(
        Interaction(
            a="warfarin", b="clarithromycin", scope="drug", effect="INR rises.", source="BNF warfarin"
        ),
        Interaction(
            a="warfarin",
            b="doxycycline",
            scope="drug",
            severity="moderate",
            effect="INR may rise.",
            source="BNF warfarin",
        ),
        Interaction(a="nsaids", b="anticoagulants", scope="class", effect="Bleeding.", source="BNF nsaids"),
    ),
    contraindications=(
        Contraindication(
            drug="aspirin",
            condition="chickenpox",
            level="absolute",
            reason="Reye's syndrome.",
            source="BNF aspirin",
        ),
        Contraindication(
            drug_class="nsaids",
            aiu="asthma_history",
            level="relative",
            reason="Bronchospasm.",
            source="BNF nsaids",
        ),
        Contraindication(
            drug_class="statins", aiu="pregnancy", level="absolute", reason="Anomalies.", source="BNF statins"
        ),
    ),
    dosing=(
        Dosing(
            drug="paracetamol",
            strengths=(Strength(form="tablet", amounts=(500,), unit="mg"),),
            child_per_kg=ChildPerKg(per_kg=75, cap=4000),
            source="BNFC paracetamol",
        ),
        Dosing(
            drug="ibuprofen",
            strengths=(Strength(form="tablet", amounts=(200, 400), unit="mg"),),
            child_per_kg=ChildPerKg(per_kg=30, cap=2400),
            source="BNFC ibuprofen",
        ),
        Dosing(
            drug="methotrexate",
            strengths=(Strength(form="tablet", amounts=(2.5,), unit="mg"),),
            weekly=WeeklyDosing(maximum=25),
            source="MHRA methotrexate",
        ),
    ),
)


def facts(age=30, conditions=(), states=(), **profile):
    return PatientFacts(
        profile=PatientProfile(age=age, sex="female", **profile),
        conditions=frozenset(conditions),
        states=frozenset(states),
    )


def item(name, dose=..., unit=..., per_day=..., route=None, generic=..., **fields):
    """A plan item; with no dose given, the KB drug's usual dose (the critic checks only whole items)."""
    usual = next((d.usual_dose for d in (*KB.drugs, *load_kb().drugs) if d.name == name), None)
    weekly = any(d.drug == name and d.weekly for d in (*KB.dosing, *load_kb().dosing))
    return PlanItem(
        drug=name,
        generic=name if generic is ... else generic,
        dose=(usual.dose if usual else None) if dose is ... else dose,
        unit=(usual.unit if usual else None) if unit is ... else unit,
        frequency_per_day=(1 / 7 if weekly else usual.frequency_per_day if usual else None)
        if per_day is ...
        else per_day,
        route=route,
        **fields,
    )


def plan(*items):
    return TreatmentPlan(items=items)


def violation(kind, severity, drug, entry, source, detail, other=None):
    return Violation(
        kind=kind, severity=severity, drug=drug, other=other, entry=entry, source=source, detail=detail
    )
