import pytest

from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.treatment import (
    canonical_route,
    canonical_unit,
    daily_amount,
    is_plan_attempt,
    normalise_dose,
    parse_plan,
)


@pytest.fixture(scope="module")
def kb():
    return load_kb()


def test_plain_json_list_with_prose_around_it(kb):
    text = (
        'Here is the plan:\n[{"drug": "Amoxil", "dose": 500, "unit": "mg", "frequency_per_day": 3, '
        '"days": 5, "route": "oral"}]\nDrink plenty of fluids.'
    )
    assert parse_plan(text, kb) == TreatmentPlan(
        items=(
            PlanItem(
                drug="Amoxil", generic="amoxicillin", ingredients=("amoxicillin",), dose=500.0, unit="mg",
                frequency_per_day=3.0, days=5.0, route="oral",
            ),
        ),
        advice="Here is the plan:\nDrink plenty of fluids.",
    )  # fmt: skip


def test_object_with_plan_and_advice_in_a_code_fence(kb):
    text = (
        "Plan below.\n```json\n"
        '{"plan": [{"drug": "paracetamol", "dose": "1 g", "frequency_per_day": "4", "days": "5 days"}], '
        '"advice": "Rest and fluids."}\n```'
    )
    assert parse_plan(text, kb) == TreatmentPlan(
        items=(
            PlanItem(drug="paracetamol", generic="paracetamol", ingredients=("paracetamol",), dose=1.0,
                     unit="g", frequency_per_day=4.0, days=5.0),
        ),
        advice="Rest and fluids.",
    )  # fmt: skip


def test_tolerant_fields_strings_units_in_dose_and_frequency_words(kb):
    text = (
        '[{"drug": "ibuprofin", "dose": "400mg", "frequency_per_day": "three times a day", "route": " PO "},'
        ' {"drug": "salbutamol", "dose": "200", "unit": "mcg", "frequency_per_day": "qds"},'
        ' {"drug": "unobtainium", "dose": true, "frequency_per_day": "as needed"}]'
    )
    assert parse_plan(text, kb) == TreatmentPlan(
        items=(
            PlanItem(drug="ibuprofin", generic="ibuprofen", ingredients=("ibuprofen",), dose=400.0, unit="mg",
                     frequency_per_day=3.0, route="PO"),
            PlanItem(drug="salbutamol", generic="salbutamol", ingredients=("salbutamol",), dose=200.0,
                     unit="mcg", frequency_per_day=4.0),
            PlanItem(drug="unobtainium"),
        ),
        advice="",
    )  # fmt: skip


def test_empty_list_is_an_empty_plan_and_a_non_empty_one_wins(kb):
    expected = TreatmentPlan(advice="No drugs needed:\nJust rest.")
    assert parse_plan("No drugs needed: [] Just rest.", kb) == expected
    text = '[] then actually [{"drug": "cetirizine"}]'
    assert parse_plan(text, kb) == TreatmentPlan(
        items=(PlanItem(drug="cetirizine", generic="cetirizine", ingredients=("cetirizine",)),),
        advice="[] then actually",
    )


@pytest.mark.parametrize(
    "text",
    [
        "Take some paracetamol and rest.",
        '[{"name": "paracetamol"}]',  # no drug key
        '[{"drug": "paracetamol"}, "and rest"]',  # not every entry is an object
        '[{"drug": "  "}]',
        '{"plan": "paracetamol"}',
        '[{"drug": "paracetamol",',  # broken JSON
    ],
)
def test_no_plan_is_none(kb, text):
    assert parse_plan(text, kb) is None


def test_a_diagnosis_list_before_the_plan_is_skipped(kb):
    text = '[{"diagnosis": "Flu"}]\n[{"drug": "Calpol"}]'
    assert parse_plan(text, kb) == TreatmentPlan(
        items=(PlanItem(drug="Calpol", generic="paracetamol", ingredients=("paracetamol",)),),
        advice='[{"diagnosis": "Flu"}]',
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[{"drug": "x"}]', True),
        ("[]", True),
        ('Sure: {"drug": broken', True),
        ("[ {", True),
        ("I'd suggest paracetamol.", False),
        ("See [1] for details.", False),
    ],
)
def test_is_plan_attempt(text, expected):
    assert is_plan_attempt(text) is expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("mcg", "microgram"), ("µg", "microgram"), ("μg", "microgram"), ("Micrograms", "microgram"),
        ("MG", "mg"), ("grams", "g"), ("mL", "ml"), ("Puffs", "puff"), ("sprays", "spray"),
        ("applications", "application"), ("sachets", "sachet"), ("mg/kg", "mg/kg"), ("furlongs", "furlongs"),
    ],
)  # fmt: skip
def test_canonical_unit(given, expected):
    assert canonical_unit(given) == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [("PO", "oral"), ("by mouth", "oral"), ("intranasal", "nasal"), ("Inhaler", "inhaled"), ("iv", "iv")],
)
def test_canonical_route(given, expected):
    assert canonical_route(given) == expected


@pytest.mark.parametrize(
    ("dose", "unit", "to_unit", "expected"),
    [
        (1, "g", "mg", 1000.0),
        (3.5, "g", "mg", 3500.0),
        (200, "mcg", "mg", 0.2),
        (0.4, "mg", "microgram", 400.0),
        (500, "mg", "g", 0.5),
        (5, "ml", "ml", 5),
        (1, "l", "ml", 1000.0),
        (2, "puffs", "puff", 2),
        (2, "puffs", "mg", None),  # counts compare only to the same count
        (1, "application", "spray", None),
        (5, "ml", "mg", None),  # volume is not mass
        (0.15, "mg/kg", "mg", None),  # no weight to convert with
        (3, "furlongs", "mg", None),
    ],
)
def test_normalise_dose(dose, unit, to_unit, expected):
    assert normalise_dose(dose, unit, to_unit) == expected


@pytest.mark.parametrize(
    ("item", "to_unit", "expected"),
    [
        (PlanItem(drug="p", dose=1, unit="g", frequency_per_day=4), "mg", 4000.0),
        (PlanItem(drug="s", dose=100, unit="mcg", frequency_per_day=2), "mg", 0.2),
        (PlanItem(drug="p", dose=1, unit="g"), "mg", None),  # no frequency
        (PlanItem(drug="p", dose=1, frequency_per_day=4), "mg", None),  # no unit
        (PlanItem(drug="s", dose=2, unit="puff", frequency_per_day=4), "microgram", None),
    ],
)
def test_daily_amount(item, to_unit, expected):
    assert daily_amount(item, to_unit) == expected


def test_a_combination_item_holds_every_ingredient_and_no_single_generic(kb):
    text = '[{"drug": "co-codamol 30/500", "dose": "2 tablets", "frequency_per_day": 4}, {"drug": "Calpol"}]'
    found = parse_plan(text, kb)
    assert found == TreatmentPlan(
        items=(
            PlanItem(drug="co-codamol 30/500", ingredients=("codeine", "paracetamol"), dose=2.0,
                     unit="tablets", frequency_per_day=4.0),
            PlanItem(drug="Calpol", generic="paracetamol", ingredients=("paracetamol",)),
        ),
    )  # fmt: skip
    assert found.generics == ("codeine", "paracetamol")
