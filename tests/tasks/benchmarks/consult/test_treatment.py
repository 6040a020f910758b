import json

import pytest

from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.kb.models import Strength
from tasks.benchmarks.consult.treatment import (
    DoseAmount,
    canonical_route,
    canonical_unit,
    daily_amount,
    dose_amount,
    find_strength,
    is_plan_attempt,
    normalise_dose,
    parse_plan,
    read_dose,
    read_frequency,
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
            PlanItem(
                drug="unobtainium", as_needed=True,
                unreadable=(("dose", "true"), ("frequency_per_day", "as needed")),
            ),
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


PARACETAMOL = Strength(form="tablet", amounts=(500,), unit="mg")
IBUPROFEN = (
    Strength(form="tablet", amounts=(200, 400), unit="mg"),
    Strength(form="ml", amounts=(20, 40), unit="mg"),
)


def dosed(dose, unit, **fields):
    return PlanItem(drug="x", dose=dose, unit=unit, **fields)


@pytest.mark.parametrize(
    ("item", "to_unit", "standard", "weight", "expected"),
    [
        (dosed(1, "g"), "mg", (), None, DoseAmount(1000.0, 1000.0, "1 g")),
        (dosed(100, "mcg"), "mg", (), None, DoseAmount(0.1, 0.1, "100 mcg")),
        # a strength the plan gives wins over the KB's
        (
            dosed(2, "tablets", strength=1, strength_unit="g"), "mg", (PARACETAMOL,), None,
            DoseAmount(2000.0, 2000.0, "2 tablets x 1 g"),
        ),
        (dosed(2, "tablets"), "mg", (PARACETAMOL,), None, DoseAmount(1000.0, 1000.0, "2 tablets x 500 mg")),
        # several standard strengths: the whole range
        (dosed(2, "tab"), "mg", IBUPROFEN, None, DoseAmount(400.0, 800.0, "2 tab x 200/400 mg")),
        (dosed(5, "ml"), "mg", IBUPROFEN, None, DoseAmount(100.0, 200.0, "5 ml x 20/40 mg/ml")),
        (
            dosed(5, "ml", strength=24, strength_unit="mg/ml"), "mg", (), None,
            DoseAmount(120.0, 120.0, "5 ml x 24 mg/ml"),
        ),
        # a per-tablet strength does not fit a liquid: the KB's liquid strengths are used
        (
            dosed(5, "ml", strength=200, strength_unit="mg"), "mg", IBUPROFEN, None,
            DoseAmount(100.0, 200.0, "5 ml x 20/40 mg/ml"),
        ),
        (dosed(15, "mg/kg"), "mg", (), 20, DoseAmount(300.0, 300.0, "15 mg/kg x 20 kg")),
        (dosed(3, "mg"), "mg/kg", (), 20, DoseAmount(0.15, 0.15, "3 mg / 20 kg")),
        (dosed(0.15, "mg/kg"), "mg/kg", (), 20, DoseAmount(0.15, 0.15, "0.15 mg/kg")),
        (dosed(15, "mg/kg"), "mg", (), None, None),  # no weight
        (dosed(2, "tablets"), "mg", (), None, None),  # no strength known
        # the KB lists tablets only: a capsule is taken to come in the same strengths
        (dosed(2, "capsules"), "mg", (PARACETAMOL,), None, DoseAmount(1000.0, 1000.0, "2 capsules x 500 mg")),
        (dosed(2, "sachets"), "mg", (PARACETAMOL,), None, None),  # no sachet strength
        (dosed(2, "puff"), "microgram", (), None, None),
        (dosed(1, None, frequency_per_day=4), "mg", (), None, None),  # no unit
    ],
)  # fmt: skip
def test_dose_amount(item, to_unit, standard, weight, expected):
    assert dose_amount(item, to_unit, standard, weight) == expected


@pytest.mark.parametrize(
    ("item", "to_unit", "standard", "expected"),
    [
        (PlanItem(drug="p", dose=1, unit="g", frequency_per_day=4), "mg", (), 4000.0),
        (PlanItem(drug="s", dose=100, unit="mcg", frequency_per_day=2), "mg", (), 0.2),
        (PlanItem(drug="p", dose=1, unit="g"), "mg", (), None),  # no frequency
        (PlanItem(drug="p", dose=1, frequency_per_day=4), "mg", (), None),  # no unit
        (PlanItem(drug="s", dose=2, unit="puff", frequency_per_day=4), "microgram", (), None),
        (
            PlanItem(drug="i", dose=2, unit="tablets", frequency_per_day=3),
            "mg",
            IBUPROFEN,
            2400.0,
        ),  # the larger
    ],
)
def test_daily_amount(item, to_unit, standard, expected):
    assert daily_amount(item, to_unit, standard) == expected


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (3, (3.0, False)),
        ("3", (3.0, False)),
        ("3 times a day", (3.0, False)),
        ("three times a day", (3.0, False)),
        ("six times a day", (6.0, False)),
        ("3x daily", (3.0, False)),
        ("3/day", (3.0, False)),
        ("x3", (3.0, False)),
        ("twice daily", (2.0, False)),
        ("once daily", (1.0, False)),
        ("od", (1.0, False)),
        ("bd", (2.0, False)),
        ("b.i.d.", (2.0, False)),
        ("TDS", (3.0, False)),
        ("tid", (3.0, False)),
        ("qds", (4.0, False)),
        ("QID", (4.0, False)),
        ("nocte", (1.0, False)),
        ("morning and night", (2.0, False)),
        ("every 4 hours", (6.0, False)),
        ("q4h", (6.0, False)),
        ("q 6 h", (4.0, False)),
        ("4-hourly", (6.0, False)),
        ("4 hourly", (6.0, False)),
        ("every 6-8 hours", (4.0, False)),  # a range of intervals: the most frequent
        ("every 4 to 6 hours", (6.0, False)),
        ("6–8 hourly", (4.0, False)),
        ("q4-6h", (6.0, False)),
        ("every 12 hours", (2.0, False)),
        ("every hour", (24.0, False)),
        ("2-3 times a day", (3.0, False)),  # a range of counts: the larger
        ("4 times in 24 hours", (4.0, False)),
        ("as needed, max 4 a day", (4.0, True)),  # the stated maximum
        ("prn max 4 doses in 24 hours", (4.0, True)),
        ("every 4-6 hours when required, no more than 4 doses in 24 hours", (4.0, True)),
        ("up to four times daily", (4.0, False)),
        ("once a week", (1 / 7, False)),
        ("weekly", (1 / 7, False)),
        ("once weekly", (1 / 7, False)),
        ("twice weekly", (2 / 7, False)),
        ("every other day", (0.5, False)),
        ("every 2 days", (0.5, False)),
        ("single dose", (1.0, False)),
        # what stays unreadable
        ("as needed", (None, True)),  # no maximum a day
        ("prn", (None, True)),
        ("when the pain is bad", (None, False)),
        ("as directed", (None, False)),
        ("with meals", (None, False)),
        ("5 day course", (None, False)),  # a duration, not a frequency
        ("every 0 hours", (None, False)),
        ("", (None, False)),
        (True, (None, False)),
        (None, (None, False)),
    ],
)
def test_read_frequency(written, expected):
    assert read_frequency(written) == expected


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (500, (500.0, "", None)),
        ("500", (500.0, "", None)),
        ("500mg", (500.0, "mg", None)),
        ("1 g", (1.0, "g", None)),
        ("1,000 mg", (1000.0, "mg", None)),
        ("200 mcg", (200.0, "mcg", None)),
        ("2 tablets", (2.0, "tablets", None)),
        ("1-2 tablets", (2.0, "tablets", None)),  # the worst case
        ("one or two capsules", (2.0, "capsules", None)),
        ("half a tablet", (0.5, "tablet", None)),
        ("2 x 500 mg tablets", (2.0, "tablets", (500.0, "mg"))),
        ("2 tablets (500 mg each)", (2.0, "tablets", (500.0, "mg"))),
        ("2 x 500 mg", (1000.0, "mg", None)),  # two lots of 500 mg
        ("5 ml of 120 mg/5 ml", (5.0, "ml", (24.0, "mg/ml"))),
        ("15 mg/kg", (15.0, "mg/kg", None)),
        ("2 sprays in each nostril", (4.0, "sprays", None)),
        ("some", (None, "", None)),
        (True, (None, "", None)),
    ],
)
def test_read_dose(written, expected):
    assert read_dose(written) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("paracetamol 500 mg tablets", (500.0, "mg")),
        ("Amoxicillin 250mg/5ml suspension", (50.0, "mg/ml")),
        ("Calpol 120 mg per 5 ml", (24.0, "mg/ml")),
        ("salbutamol 100 micrograms", (100.0, "microgram")),
        ("ibuprofen", None),
        ("co-codamol 30/500", None),  # no unit: not a strength
    ],
)
def test_find_strength(text, expected):
    assert find_strength(text) == expected


def test_strengths_and_frequencies_in_every_form_a_plan_writes(kb):
    text = json.dumps(
        [
            {
                "drug": "paracetamol 500 mg tablets",
                "dose": "1-2 tablets",
                "frequency": "every 4-6 hours, max 4 doses in 24 hours",
            },
            {"drug": "ibuprofen", "dose": "2 tablets", "frequency_per_day": "tds", "strength": "200 mg"},
            {"drug": "amoxicillin", "dose": 1, "unit": "capsule (500 mg)", "frequency_per_day": "q8h"},
            {"drug": "methotrexate", "dose": "10 mg", "frequency_per_day": "once a week"},
            {
                "drug": "salbutamol",
                "dose": "2 puffs",
                "frequency_per_day": "as needed",
                "strength": 100,
                "strength_unit": "mcg",
            },
            {"drug": "cetirizine", "dose": "a little", "frequency_per_day": "daily", "strength": "lots"},
        ]
    )

    def single(name, **fields):
        return PlanItem(drug=name, generic=name, ingredients=(name,), **fields)

    # fmt: off
    assert parse_plan(text, kb).items == (
        single("paracetamol", dose=2.0, unit="tablets", frequency_per_day=4.0, strength=500.0,
               strength_unit="mg", as_needed=False).model_copy(update={"drug": "paracetamol 500 mg tablets"}),
        single("ibuprofen", dose=2.0, unit="tablets", frequency_per_day=3.0, strength=200.0,
               strength_unit="mg"),
        single("amoxicillin", dose=1.0, unit="capsule", frequency_per_day=3.0, strength=500.0,
               strength_unit="mg"),
        single("methotrexate", dose=10.0, unit="mg", frequency_per_day=1 / 7),
        single("salbutamol", dose=2.0, unit="puffs", strength=100.0, strength_unit="microgram",
               as_needed=True, unreadable=(("frequency_per_day", "as needed"),)),
        single("cetirizine", frequency_per_day=1.0,
               unreadable=(("dose", "a little"), ("strength", "lots"))),
    )
    # fmt: on


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
