import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.consult.doses import (
    Dose,
    DoseAmount,
    canonical_route,
    canonical_unit,
    daily_amount,
    dose_amount,
    find_strength,
    normalise_dose,
    read_dose,
    read_strength,
    read_unit,
)
from tasks.benchmarks.consult.episode import PlanItem
from tasks.benchmarks.consult.kb.models import Strength
from tests.tasks.benchmarks.consult.test_frequency import spelled_in_any_script


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
        # a per-tablet strength does not fit a liquid: no amount, never the KB's strengths for the plan's
        (dosed(5, "ml", strength=200, strength_unit="mg"), "mg", IBUPROFEN, None, None),
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
        (500, Dose(500.0)),
        ("500", Dose(500.0)),
        ("500mg", Dose(500.0, "mg")),
        ("1 g", Dose(1.0, "g")),
        ("1,000 mg", Dose(1000.0, "mg")),
        ("200 mcg", Dose(200.0, "mcg")),
        ("2 tablets", Dose(2.0, "tablets")),
        ("1-2 tablets", Dose(2.0, "tablets")),  # the worst case
        ("one or two capsules", Dose(2.0, "capsules")),
        ("half a tablet", Dose(0.5, "tablet")),
        ("2 x 500 mg tablets", Dose(2.0, "tablets", (500.0, "mg"))),
        ("2 tablets (500 mg each)", Dose(2.0, "tablets", (500.0, "mg"))),
        ("1 tablet of 500mg", Dose(1.0, "tablet", (500.0, "mg"))),
        ("500 mg tablets", Dose(500.0, "mg")),  # the form of a mass dose
        ("2 x 500 mg", Dose(1000.0, "mg")),  # two lots of 500 mg
        ("5 ml of 120 mg/5 ml", Dose(5.0, "ml", (24.0, "mg/ml"))),
        ("15 mg/kg", Dose(15.0, "mg/kg")),
        ("2 sprays in each nostril", Dose(4.0, "sprays")),
        # issue 32: a range across units at its worst; doses a day written with the dose
        ("500 mg-1 g", Dose(1.0, "g")),
        ("1000 mg x2", Dose(1000.0, "mg", per_day=2.0)),
        ("1000 mg ×2", Dose(1000.0, "mg", per_day=2.0)),
        ("2 tablets x 500 mg", Dose(2.0, "tablets", (500.0, "mg"))),  # "x" before a strength: filler
        # "x 5/7" is for 5 days (its "x" was dropped, and "5/7" read as 5 doses a week)
        ("1 g x 5/7", Dose(None, problem="'1 g x 5/7': 'x 5/7' is not read")),
        ("1 g 5/7", Dose(None, problem="'1 g 5/7': '5/7' is not read")),
        ("1000 mg twice", Dose(1000.0, "mg", per_day=2.0)),
        ("500 mg qds", Dose(500.0, "mg", per_day=4.0)),
        # issue 32: "1000e1" was read as 1000
        ("1000e1", Dose(10000.0)),
        # a number's leading point and a decimal comma before a unit are read; neither was, ten times off
        (".1 g", Dose(0.1, "g")),
        ("1,5 g", Dose(1.5, "g")),
        ("12,5 mg", Dose(12.5, "mg")),
        ("0,500 mg", Dose(0.5, "mg")),  # no thousands group follows a lone 0: it was read as 500 mg
        ("0,125 mg", Dose(0.125, "mg")),
        # a point before three digits may be a thousands point: 1.5 mg or 1500 mg is not guessed
        ("1.500 mg", Dose(None, problem="'1.500 mg': '1.500' has a point that is a decimal point (1.5) or a "
                                        "thousands point (1500)")),
        ("2 x 1.000 mg", Dose(None, problem="'2 x 1.000 mg': '1.000' has a point that is a decimal point (1) "
                                            "or a thousands point (1000)")),
        ("0.125 mg", Dose(0.125, "mg")),  # no number is written 0,125 in thousands
        ("1.25 mg", Dose(1.25, "mg")),
        ("1.2500 mg", Dose(1.25, "mg")),
        # digits of any script read as ASCII ones: full-width "１.０００" passed the thousands point check
        ("１.０００ mg",
         Dose(None, problem="'１.０００ mg': '1.000' has a point that is a decimal point (1) or a thousands "
                            "point (1000)")),
        ("٥٠٠ mg", Dose(500.0, "mg")),
        # what stays unread, with the reason
        ("some", Dose(None, problem="'some' gives no amount")),
        ("1000 mg extra", Dose(None, problem="'1000 mg extra': 'extra' is not read")),
        # a most amount a day is read in the frequency field: here its 6 g was dropped and 2 a day read
        ("1 g bd max 6 g a day",
         Dose(None, problem="'1 g bd max 6 g a day': 'bd max 6 g a day' is not read")),
        ("1 g 4 and", Dose(None, problem="'1 g 4 and': '4 and' is not read")),  # no "4 an d(ay)"
        ("5 ml mg", Dose(None, problem="'5 ml mg': 'mg' is a second unit")),
        ("1 tablet-500 mg", Dose(None, problem="'1 tablet-500 mg': tablet and mg do not convert")),
        ("1e400", Dose(None, problem="'1e400': 1e400 is not a dose")),
        # a strength that is none, or a second amount after a mass, leaves the dose unread
        ("2 tablets (1e999 mg each)", Dose(None, problem="'2 tablets (1e999 mg each)': '1e999 mg' is not a "
                                                         "strength")),
        ("2 tablets (0 mg each)", Dose(None, problem="'2 tablets (0 mg each)': '0 mg' is not a strength")),
        ("1 g, 2 g", Dose(None, problem="'1 g, 2 g': a second amount after 1 g")),
        ("0 mg", Dose(None, problem="'0 mg': 0 mg is not a dose")),
        (True, Dose(None, problem="True is not a dose")),
        ([500], Dose(None, problem="[500] is not a dose")),
        # issue 32: NaN, negative and zero numbers were read as doses
        (math.nan, Dose(None, problem="nan is not a dose")),
        (-5, Dose(None, problem="-5 is not a dose")),
        (0, Dose(None, problem="0 is not a dose")),
        (None, Dose(None)),
        ("", Dose(None)),
    ],
)  # fmt: skip
def test_read_dose(written, expected):
    assert read_dose(written) == expected


@given(st.one_of(st.text(max_size=40), st.floats(), st.integers(), st.booleans(), st.none()))
def test_any_dose_is_read_or_named_unread(written):
    found = read_dose(written)
    nothing_written = written is None or (isinstance(written, str) and not written.strip())
    assert (found.problem is None) == (found.dose is not None or nothing_written)
    if found.dose is not None:
        assert math.isfinite(found.dose) and found.dose > 0


@given(
    st.integers(1, 999),
    st.integers(0, 999),
    st.sampled_from(["", " ", "  "]),
    st.sampled_from(["mg", "g", "micrograms", "tablets", "ml", ""]),
)
def test_a_point_that_may_be_a_thousands_point_is_never_read_either_way(whole, part, space, unit):
    written = f"{whole}.{part:03d}{space}{unit}"
    decimal = f"0.{max(part, 1):03d}{space}{unit}"  # a leading zero: a decimal point (0.000 is no dose)
    assert (read_dose(written).dose, read_dose(decimal).problem) == (None, None)
    assert read_strength(f"{whole}.{part:03d} mg") is None
    assert find_strength(f"paracetamol {whole}.{part:03d} mg tablets")[1] is not None
    assert read_unit(f"tablets ({whole}.{part:03d} mg)")[2] is not None


@given(
    st.sampled_from([
        "1.000 mg", "1.500 mg", "0.125 mg", "1,200mg", "12,5 mg", "2 x 500 mg tablets", "1000 mg x2",
        "5 ml of 120 mg/5 ml", "1-2 tablets", "1 g x 5/7", "10 mg 1/7",
    ]),
    st.data(),
)  # fmt: skip
def test_a_dose_in_any_script_reads_as_its_ascii_spelling(written, data):
    spelled = spelled_in_any_script(data, written)
    found, ascii_found = read_dose(spelled), read_dose(written)
    assert found._replace(problem=found.problem is None) == ascii_found._replace(
        problem=ascii_found.problem is None
    )


@given(st.integers(1, 999), st.sampled_from(["mg", "g", " micrograms", " ml"]))
def test_a_comma_after_a_lone_zero_is_a_decimal_comma(part, unit):
    assert read_dose(f"0,{part:03d}{unit}") == read_dose(f"0.{part:03d}{unit}")


@given(st.sampled_from(["500 mg", "2 tablets", "1-2 tablets", "5 ml", "1 g"]), st.text("zqjkv", min_size=2))
def test_a_word_not_understood_leaves_the_whole_dose_unread(dose, word):
    assert read_dose(f"{dose} {word}").dose is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("paracetamol 500 mg tablets", ((500.0, "mg"), None)),
        ("Amoxicillin 250mg/5ml suspension", ((50.0, "mg/ml"), None)),
        ("Calpol 120 mg per 5 ml", ((24.0, "mg/ml"), None)),
        ("salbutamol 100 micrograms", ((100.0, "microgram"), None)),
        ("paracetamol 500 mg (0.5 g) tablets", ((500.0, "mg"), None)),  # one strength written twice
        ("ibuprofen", (None, None)),
        ("co-codamol 30/500", (None, None)),  # no unit: not a strength
        # a strength not read whole: the first was read, or none and the KB's standard strength used
        ("paracetamol 500 mg or 1 g tablets",
         (None, "'paracetamol 500 mg or 1 g tablets' gives different strengths: 500 mg and 1 g")),
        ("paracetamol 1.000 mg tablets",
         (None, "'paracetamol 1.000 mg tablets': '1.000' has a point that is a decimal point (1) or a "
                "thousands point (1000)")),
        ("paracetamol 0 mg tablets", (None, "'0 mg' in 'paracetamol 0 mg tablets' is not a strength")),
    ],
)  # fmt: skip
def test_find_strength(text, expected):
    assert find_strength(text) == expected


@pytest.mark.parametrize(
    ("value", "unit", "expected"),
    [
        ("500 mg", None, (500.0, "mg")),
        ("120 mg/5 ml", None, (24.0, "mg/ml")),
        (100, "mcg", (100.0, "microgram")),
        ("500", "mg", (500.0, "mg")),  # a number's text with its unit (it was not read)
        ("1 g", "mg", None),  # a unit of its own beside strength_unit: which is meant is not read
        ("500 mg extra strength", None, None),  # every word, or none
        ("lots", None, None),
        (math.nan, "mg", None),
        (0, "mg", None),
    ],
)
def test_read_strength(value, unit, expected):
    assert read_strength(value, unit) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("tablets", ("tablets", None, None)),
        ("capsule (500 mg)", ("capsule", (500.0, "mg"), None)),
        ("mg", ("mg", None, None)),
        (None, ("", None, None)),
        ("tablets daily", ("tablets daily", None, "'tablets daily' is not a unit")),
        ("tablets (0 mg)", ("tablets", None, "'0 mg' in 'tablets (0 mg)' is not a strength")),
        (5, ("", None, "5 is not a unit")),
    ],
)
def test_read_unit(value, expected):
    assert read_unit(value) == expected
