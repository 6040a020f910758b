"""The critic's dose rules (dose_check.py): maxima after unit normalisation, daily and weekly totals with
strengths, weights and schedules, and doses the critic cannot read (unverified, never fine).
"""

import pytest

from tasks.benchmarks.consult.case import PatientProfile
from tasks.benchmarks.consult.critic import critique
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.treatment import parse_plan
from tests.tasks.benchmarks.consult.critic_fixtures import KB, facts, item, plan, violation


@pytest.mark.parametrize(
    ("given", "band_age", "expected"),
    [
        # 1 g is 1000 mg: 5 x 1000 mg is above the adult 4000 mg
        (
            plan(item("paracetamol", 1, "g", 5)),
            30,
            violation(
                "dose_above_maximum",
                "hard",
                "paracetamol",
                "drug paracetamol: max_daily.adult",
                "label paracetamol",
                "5 x 1 g = 5000 mg a day > 4000 mg",
            ),
        ),
        # the daily total adds the drug's items up
        (
            plan(item("paracetamol", 1000, "mg", 3), item("paracetamol", 500, "mg", 4)),
            30,
            violation(
                "dose_above_maximum",
                "hard",
                "paracetamol",
                "drug paracetamol: max_daily.adult",
                "label paracetamol",
                "3 x 1000 mg + 4 x 500 mg = 5000 mg a day > 4000 mg",
            ),
        ),
        # an older patient's lower maximum
        (
            plan(item("ibuprofen", 400, "mg", 4)),
            70,
            violation(
                "dose_above_maximum",
                "hard",
                "ibuprofen",
                "drug ibuprofen: max_daily.older",
                "label ibuprofen",
                "4 x 400 mg = 1600 mg a day > 1200 mg",
            ),
        ),
        (
            plan(item("paracetamol", 400, "mg", 4)),
            30,
            violation(
                "dose_below_half_usual",
                "hard",
                "paracetamol",
                "drug paracetamol: usual_dose",
                "label paracetamol",
                "400 mg a dose < half the usual 1000 mg",
            ),
        ),
        # 0.05 mg is 50 microgram, under half of 200 microgram
        (
            plan(item("salbutamol", 0.05, "mg", 4, "inhaled")),
            30,
            violation(
                "dose_below_half_usual",
                "hard",
                "salbutamol",
                "drug salbutamol: usual_dose",
                "label salbutamol",
                "0.05 mg a dose < half the usual 200 microgram",
            ),
        ),
        (
            plan(item("salbutamol", 200, "mcg", 4, "by mouth")),
            30,
            violation(
                "wrong_route",
                "soft",
                "salbutamol",
                "drug salbutamol: route",
                "label salbutamol",
                "salbutamol given by mouth; the KB gives it inhaled",
            ),
        ),
        # a route written but not read is not known to be the KB's: unverified, never a pass
        (
            plan(item("salbutamol", 200, "mcg", 4, "puffed in")),
            30,
            violation(
                "unverified",
                "unverified",
                "salbutamol",
                "drug salbutamol: route",
                "label salbutamol",
                "'salbutamol': the route 'puffed in' is not read",
            ),
        ),
    ],
)
def test_dose_errors_after_unit_normalisation(given, band_age, expected):
    assert critique(given, facts(age=band_age), KB).violations == (expected,)


@pytest.mark.parametrize(
    ("given", "age"),
    [
        (plan(item("paracetamol", 1, "g", 4)), 30),  # exactly the maximum
        (plan(item("salbutamol", 0.2, "mg", 4, "INHALED")), 30),  # 200 microgram, route case ignored
        (plan(item("paracetamol", 250, "mg", 4)), 6),  # a child's dose (20 kg): the usual dose is an adult's
        (plan(item("paracetamol", route="oral")), 30),  # no dose at all: plan completeness counts it
        (plan(item("paracetamol", 2, "tablets", 4)), 30),  # 2 x 500 mg x 4: exactly the maximum
        (plan(item("paracetamol", 2, "tablets", 4, strength=0.5, strength_unit="g")), 30),
        (plan(item("ibuprofen", 2, "tablets", 3)), 30),  # 1200-2400 mg: at most the maximum
        (plan(item("ibuprofen", 1, "tablet", 3)), 30),  # 200 mg is not below half of 400 mg
        (plan(item("methotrexate", 10, "tablets", 1 / 7)), 30),  # 25 mg a week: exactly the maximum
        (plan(item("methotrexate", 7.5, "mg", 1 / 7)), 30),
        (plan(item("methotrexate", route="oral")), 30),  # no frequency: nothing to check
        (plan(item("paracetamol", 375, "mg", 4)), 6),  # 1500 mg a day at 20 kg: exactly 75 mg/kg
    ],
)
def test_dose_checks_that_must_not_fire(given, age):
    # A child of 20 kg: a child's dose is checked by weight where the KB gives a per-kg maximum.
    assert critique(given, facts(age=age, weight_kg=20 if age < 12 else None), KB).violations == ()


@pytest.mark.parametrize(
    ("given", "weight"),
    [
        (plan(item("paracetamol", 375, "mg", 4)), 20),  # 75 mg/kg x 20 kg = 1500 mg: exactly
        (plan(item("ibuprofen", 10, "mg/kg", 3)), 20),  # 30 mg/kg a day: exactly
        (plan(item("paracetamol", 1000, "mg", 4)), 60),  # 75 x 60 = 4500 mg capped at 4000 mg: exactly
        (plan(item("amoxicillin", 500, "mg", 3)), 20),  # no weight-based limit in the KB: the band's
    ],
)
def test_weight_based_limits_that_must_not_fire(given, weight):
    assert critique(given, facts(age=6, weight_kg=weight), KB).violations == ()


@pytest.mark.parametrize(
    ("given", "age", "weight", "expected"),
    [
        # paracetamol 1 g every 4 hours (issue 22)
        (
            plan(item("paracetamol", 1, "g", 6)), 30, None,
            [("dose_above_maximum", "hard", "drug paracetamol: max_daily.adult", "label paracetamol",
              "6 x 1 g = 6000 mg a day > 4000 mg")],
        ),
        # tablets through the KB's standard strength
        (
            plan(item("paracetamol", 2, "tablets", 6)), 30, None,
            [("dose_above_maximum", "hard", "drug paracetamol: max_daily.adult", "label paracetamol",
              "6 x 2 tablets x 500 mg = 6000 mg a day > 4000 mg")],
        ),
        # the plan's own strength wins over the KB's
        (
            plan(item("paracetamol", 2, "tablets", 4, strength=1, strength_unit="g")), 30, None,
            [("dose_above_maximum", "hard", "drug paracetamol: max_daily.adult", "label paracetamol",
              "4 x 2 tablets x 1 g = 8000 mg a day > 4000 mg")],
        ),
        # over the maximum whichever standard strength
        (
            plan(item("ibuprofen", 4, "tablets", 4)), 30, None,
            [("dose_above_maximum", "hard", "drug ibuprofen: max_daily.adult", "label ibuprofen",
              "4 x 4 tablets x 200/400 mg = 3200-6400 mg a day > 2400 mg")],
        ),
        # over it with 400 mg tablets, not with 200 mg ones: the critic cannot tell
        (
            plan(item("ibuprofen", 2, "tablets", 4)), 30, None,
            [("dose_unreadable", "unverified", "drug ibuprofen: max_daily.adult", "label ibuprofen",
              "4 x 2 tablets x 200/400 mg = 1600-3200 mg a day > 2400 mg: the strength decides, and the plan "
              "gives none")],
        ),
        # methotrexate 10 mg daily (issue 22; MHRA: once weekly)
        (
            plan(item("methotrexate", 10, "mg", 1)), 30, None,
            [("dose_above_maximum", "hard", "dosing methotrexate: weekly.maximum", "MHRA methotrexate",
              "7 x 10 mg = 70 mg a week > 25 mg"),
             ("dose_too_frequent", "hard", "dosing methotrexate: weekly", "MHRA methotrexate",
              "methotrexate is taken once a week; the plan gives it 7 times a week")],
        ),
        # a low weekly total is still wrong twice a week
        (
            plan(item("methotrexate", 7.5, "mg", 2 / 7)), 30, None,
            [("dose_too_frequent", "hard", "dosing methotrexate: weekly", "MHRA methotrexate",
              "methotrexate is taken once a week; the plan gives it 2 times a week")],
        ),
        (
            plan(item("methotrexate", 12, "tablets", 1 / 7)), 30, None,
            [("dose_above_maximum", "hard", "dosing methotrexate: weekly.maximum", "MHRA methotrexate",
              "1 x 12 tablets x 2.5 mg = 30 mg a week > 25 mg")],
        ),
        # a child of 20 kg: 75 mg/kg a day is 1500 mg, under the band's 2000 mg
        (
            plan(item("paracetamol", 500, "mg", 4)), 6, 20,
            [("dose_above_maximum", "hard", "dosing paracetamol: child_per_kg", "BNFC paracetamol",
              "4 x 500 mg = 2000 mg a day > 1500 mg (75 mg/kg x 20 kg)")],
        ),
        # a child of no recorded weight: within the band's 2000 mg, 200 mg/kg at 10 kg; not checked
        (
            plan(item("paracetamol", 500, "mg", 4)), 1, None,
            [("dose_unreadable", "unverified", "dosing paracetamol: child_per_kg", "BNFC paracetamol",
              "4 x 500 mg = 2000 mg a day: the most for a child is 75 mg/kg a day, and the patient's "
              "weight is not recorded")],
        ),
        # a heavy child: the weight-based limit is capped
        (
            plan(item("paracetamol", 1, "g", 5)), 11, 60,
            [("dose_above_maximum", "hard", "dosing paracetamol: child_per_kg", "BNFC paracetamol",
              "5 x 1 g = 5000 mg a day > 4000 mg (75 mg/kg x 60 kg = 4500 mg, capped)")],
        ),
        # a dose per kg through the weight
        (
            plan(item("ibuprofen", 15, "mg/kg", 4)), 6, 20,
            [("dose_above_maximum", "hard", "dosing ibuprofen: child_per_kg", "BNFC ibuprofen",
              "4 x 15 mg/kg x 20 kg = 1200 mg a day > 600 mg (30 mg/kg x 20 kg)")],
        ),
    ],
)  # fmt: skip
def test_daily_and_weekly_totals_with_strengths_weights_and_schedules(given, age, weight, expected):
    found = critique(given, facts(age=age, weight_kg=weight), KB).violations
    drug = given.items[0].generic
    assert found == tuple(violation(kind, severity, drug, *fields) for kind, severity, *fields in expected)


@pytest.mark.parametrize(
    ("given", "age", "detail"),
    [
        (item("paracetamol", 500, None, 4), 30, "'paracetamol': dose 500 has no unit"),
        (
            item("salbutamol", 2, "puffs", 8, "inhaled"), 30,
            "'salbutamol': 2 puffs does not convert to microgram: no strength in the plan or the KB",
        ),
        (
            item("ibuprofen", 10, "mg/kg", 3), 6,
            "'ibuprofen': 10 mg/kg does not convert to mg without the patient's weight",
        ),
        (item("paracetamol", 2, "furlongs", 4), 30, "'paracetamol': 2 furlongs does not convert to mg"),
        (
            item("paracetamol", 1, "g", None), 30,
            "'paracetamol': 1 g with no frequency: the dose a day is unknown",
        ),
        # nothing written is nothing read: an item with no dose is not checked, so it is not safe
        (item("paracetamol", None, None, None), 30, "'paracetamol': no dose is given"),
        (item("paracetamol", None, None, 4), 30, "'paracetamol': no dose is given"),
        (
            item("paracetamol", 1, "g", None, as_needed=True,
                 unreadable=(("frequency", "'as needed': as needed, and no most a day is stated"),)), 30,
            "'paracetamol': frequency: 'as needed': as needed, and no most a day is stated",
        ),
        (
            item("paracetamol", None, None, None, unreadable=(
                ("dose", "'a couple' gives no amount"),
                ("frequency", "'now and then': 'now' is not read as a frequency"),
            )), 30,
            "'paracetamol': dose: 'a couple' gives no amount; frequency: 'now and then': 'now' is not read "
            "as a frequency",
        ),
    ],
)  # fmt: skip
def test_a_dose_the_critic_cannot_read_is_unverified_never_fine(given, age, detail):
    found = critique(plan(given), facts(age=age), KB)
    name = given.generic
    expected = violation("dose_unreadable", "unverified", name, f"drug {name}: dose", f"label {name}", detail)
    assert (found.violations, found.hard, found.unverified) == ((expected,), False, True)


def test_an_unreadable_item_does_not_hide_a_readable_one_above_the_maximum():
    given = plan(item("paracetamol", 1, "g", 5), item("paracetamol", 500, None, 4))
    assert [(v.kind, v.detail) for v in critique(given, facts(), KB).violations] == [
        ("dose_above_maximum", "5 x 1 g = 5000 mg a day > 4000 mg"),
        ("dose_unreadable", "'paracetamol': dose 500 has no unit"),
    ]


def test_a_weight_must_be_positive():
    with pytest.raises(ValueError, match="greater than 0"):
        PatientProfile(age=6, sex="male", weight_kg=0)


@pytest.mark.parametrize(
    ("reply", "profile", "expected"),
    [
        # issue 22: 6 g a day
        (
            '[{"drug": "paracetamol", "dose": "1 g", "frequency_per_day": "every 4 hours"}]', {},
            [("dose_above_maximum", "6 x 1 g = 6000 mg a day > 4000 mg")],
        ),
        (
            '[{"drug": "paracetamol 500 mg tablets", "dose": "1-2 tablets", "frequency_per_day": "q4h"}]', {},
            [("dose_above_maximum", "6 x 2 tablets x 500 mg = 6000 mg a day > 4000 mg")],
        ),
        (
            '[{"drug": "paracetamol", "dose": "2 tablets", "frequency_per_day": "as needed, max 4 a day"}]',
            {}, [],
        ),
        # issue 22: methotrexate 10 mg daily
        (
            '[{"drug": "methotrexate", "dose": "10 mg", "frequency_per_day": "daily"}]', {},
            [("dose_above_maximum", "7 x 10 mg = 70 mg a week > 25 mg"),
             ("dose_too_frequent", "methotrexate is taken once a week; the plan gives it 7 times a week")],
        ),
        ('[{"drug": "methotrexate", "dose": "4 tablets", "frequency_per_day": "once a week"}]', {}, []),
        # the shipped salbutamol inhaler: 100 micrograms a puff
        ('[{"drug": "Ventolin", "dose": "2 puffs", "frequency_per_day": "qds", "route": "inhaled"}]', {}, []),
        (
            '[{"drug": "salbutamol", "dose": "2 puffs", "frequency_per_day": "every 2 hours"}]', {},
            [("dose_above_maximum", "12 x 2 puffs x 100 microgram = 2400 microgram a day > 800 microgram")],
        ),
        # a child of 12 kg on Calpol 120 mg/5 ml: 75 mg/kg x 12 kg = 900 mg a day
        (
            '[{"drug": "Calpol 120 mg/5 ml", "dose": "10 ml", "frequency_per_day": "qds"}]',
            {"age": 2, "weight_kg": 12},
            [("dose_above_maximum", "4 x 10 ml x 24 mg/ml = 960 mg a day > 900 mg (75 mg/kg x 12 kg)")],
        ),
        (
            '[{"drug": "Calpol 120 mg/5 ml", "dose": "7.5 ml", "frequency_per_day": "qds"}]',
            {"age": 2, "weight_kg": 12}, [],
        ),
        (
            '[{"drug": "paracetamol", "dose": "2 tablets", "frequency_per_day": "when the pain is bad"}]', {},
            [("dose_unreadable",
              "'paracetamol': frequency: 'when the pain is bad': 'when' is not read as a frequency")],
        ),
    ],
)  # fmt: skip
def test_written_doses_checked_against_the_shipped_kb(reply, profile, expected):
    kb = load_kb()
    given = facts(**{"age": 30, **profile})
    assert [(v.kind, v.detail) for v in critique(parse_plan(reply, kb), given, kb).violations] == expected
