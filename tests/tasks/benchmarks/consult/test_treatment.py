import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.consult.episode import PlanItem, TreatmentPlan
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.kb.resolve import resolve_drug
from tasks.benchmarks.consult.treatment import (
    ITEM_KEYS,
    PlanReading,
    is_plan_attempt,
    parse_plan,
    read_plan_reply,
)
from tasks.core.json_text import MAX_TOKENS

PARACETAMOL = '[{"drug": "paracetamol", "dose": "1 g", "frequency": "qds"}]'


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
                unreadable=(
                    ("dose", "True is not a dose"),
                    ("frequency", "'as needed': as needed, and no most a day is stated"),
                ),
            ),
        ),
        advice="",
    )  # fmt: skip


def test_an_empty_list_is_an_empty_plan(kb):
    assert parse_plan("No drugs needed: [] Just rest.", kb) == TreatmentPlan(
        advice="No drugs needed:\nJust rest."
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


CLARITHROMYCIN = TreatmentPlan(items=(PlanItem(drug="clarithromycin", generic="clarithromycin"),))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a revision in prose or in a JSON shape of its own: it was read as keeping the plan
        ("Stop the clarithromycin and take amoxicillin 500 mg three times a day.", True),
        ("Switch to Amoxil instead.", True),  # a brand names its drug
        ('{"plan": "amoxicillin 500 mg oral three times daily for 5 days"}', True),
        ('{"medications": ["clarithromycin 500 mg bd"], "advice": "rest"}', True),
        # the plan in force named again, or no drug named: no revision
        ("Take the clarithromycin with food, twice a day.", False),
        ("Rest, drink fluids, and come back if it gets worse.", False),
    ],
)
def test_an_answer_naming_a_drug_the_plan_does_not_hold_tries_to_revise_it(kb, text, expected):
    assert is_plan_attempt(text, kb, CLARITHROMYCIN) is expected
    assert is_plan_attempt(text, kb, None) is (expected or "clarithromycin" in text)


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
               as_needed=True,
               unreadable=(("frequency", "'as needed': as needed, and no most a day is stated"),)),
        single("cetirizine", frequency_per_day=1.0,
               unreadable=(("dose", "'a little' gives no amount"), ("strength", '"lots" is not a strength'))),
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


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        # issue 32: a second plan list was silently ignored
        ('Plan A: [{"drug": "paracetamol", "dose": "1 g", "frequency": "qds"}] Actually use: '
         '[{"drug": "ibuprofen", "dose": "400 mg", "frequency": "tds"}]',
         "the reply gives 2 different plans; it must give one"),
        ('[] then actually [{"drug": "cetirizine"}]', "the reply gives 2 different plans; it must give one"),
        # issue 32: a list with one bad entry was skipped whole and a later list checked instead
        ('[{"drug": "warfarin"}, {"dose": 5}] and [{"drug": "paracetamol"}]',
         "the reply gives 2 different plans; it must give one"),
        ('[{"drug": "warfarin"}, {"dose": 5}]',
         'plan item 2 ({"dose": 5}) is not an object with a "drug" name'),
        ('{"plan": "paracetamol"}', 'plan item 1 ("paracetamol") is not an object with a "drug" name'),
        # issue 32: 3,000 "[" raised RecursionError; JSON nested past the scanner's depth is not read
        ("[" * 3000, 'no JSON list of items with a "drug", nor {"plan": [...]}'),
        ("[" * 3000 + "]" * 3000, "JSON nested deeper than 20 levels cannot be read"),
        ("[]" * MAX_TOKENS, f"the reply holds more brackets than are read (read up to char {MAX_TOKENS:,})"),
        ("Take some paracetamol and rest.",
         'no JSON list of items with a "drug", nor {"plan": [...]}'),
        # JSON beside the plan that was not read: a second plan cut off, or with a trailing comma
        (f'{PARACETAMOL} Actually use: [{{"drug": "ibuprofen"}}, {{"drug": "warf',
         'JSON at char 75 does not decode: [{"drug": "ibuprofen"}, {"drug": "warf'),
        (f'{PARACETAMOL} Actually use: [{{"drug": "ibuprofen",}}]',
         'JSON at char 75 does not decode: [{"drug": "ibuprofen",}]'),
        # an object with a drug outside the plan list: one more item, or the drug whose alternatives it holds
        (f'{PARACETAMOL} Also add: {{"drug": "warfarin", "dose": "5 mg"}}',
         'an object with a "drug" lies outside the plan list: {"drug": "warfarin", "dose": "5 mg"}'),
        ('{"treatment": {"drug": "amoxicillin", "alternatives": [{"drug": "paracetamol"}]}}',
         'an object with a "drug" lies outside the plan list: '
         '{"drug": "amoxicillin", "alternatives": [{"drug": "paracetamol"}]}'),
        # a key beside "plan" other than "advice" was never looked at
        (f'{{"plan": {PARACETAMOL}, "also_start": [{{"drug": "amoxicillin", "dose": "500 mg"}}]}}',
         '"also_start" beside "plan" is not read: only "advice" is'),
        (f'{{"plan": {PARACETAMOL}, "advice": "Rest.", "stop": "warfarin"}}',
         '"stop" beside "plan" is not read: only "advice" is'),
        (f'{{"plan": {PARACETAMOL}, "advice": {{"drug": "warfarin"}}}}',
         'an object with a "drug" lies outside the plan list: {"drug": "warfarin"}'),
        # a key given twice: the decoder kept the last value, so warfarin, 2 g or the first plan went unread
        ('[{"drug": "warfarin", "drug": "paracetamol", "dose": "1 g", "frequency": "qds"}]',
         'a JSON object gives the key "drug" more than once'),
        ('[{"drug": "paracetamol", "dose": "2 g", "dose": "1 g", "frequency": "qds"}]',
         'a JSON object gives the key "dose" more than once'),
        (f'{{"plan": [{{"drug": "warfarin"}}], "plan": {PARACETAMOL}}}',
         'a JSON object gives the key "plan" more than once'),
    ],
)  # fmt: skip
def test_a_reply_that_is_not_one_plan_is_unparseable_and_says_why(kb, text, problem):
    assert read_plan_reply(text, kb) == PlanReading(None, problem)


def test_brackets_of_prose_and_json_without_a_drug_beside_the_plan_are_advice(kb):
    text = f'{PARACETAMOL} See [NICE CKS](https://cks.nice.org.uk) [1] {{"advice": "rest"}}.'
    assert read_plan_reply(text, kb) == PlanReading(
        TreatmentPlan(
            items=(PlanItem(drug="paracetamol", generic="paracetamol", ingredients=("paracetamol",), dose=1.0,
                            unit="g", frequency_per_day=4.0),),
            advice='See [NICE CKS](https://cks.nice.org.uk) [1] {"advice": "rest"}.',
        )
    )  # fmt: skip


def test_the_same_plan_written_twice_is_one_plan(kb):
    plan = '[{"drug": "cetirizine", "dose": "10 mg", "frequency": "od"}]'
    reading = read_plan_reply(f'{plan}\n```json\n{{"plan": {plan}, "advice": "Rest."}}\n```', kb)
    assert reading.plan is not None and reading.plan.advice == "Rest."


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        # issue 32: NaN and non-positive numbers were read as doses and frequencies
        ({"drug": "paracetamol", "dose": float("nan"), "unit": "mg", "frequency_per_day": 4},
         {"dose": None, "unit": "mg", "frequency_per_day": 4.0,
          "unreadable": (("dose", "nan is not a dose"),)}),
        ({"drug": "paracetamol", "dose": 1000, "unit": "mg", "frequency_per_day": -4},
         {"dose": 1000.0, "unit": "mg", "frequency_per_day": None,
          "unreadable": (("frequency", "-4 doses a day is not a frequency"),)}),
        # issue 32: the dose's unit and the unit key must agree ("2 g" was read as 2 tablets)
        ({"drug": "paracetamol", "dose": "2 g", "unit": "tablets", "frequency_per_day": 4},
         {"dose": 2.0, "unit": "tablets", "frequency_per_day": 4.0,
          "unreadable": (("unit", "the dose says g and the unit says tablets"),)}),
        # issue 32: "1000e1" mg was read as 1000 mg
        ({"drug": "paracetamol", "dose": "1000e1", "unit": "mg", "frequency_per_day": 1},
         {"dose": 10000.0, "unit": "mg", "frequency_per_day": 1.0, "unreadable": ()}),
        # issue 32: doses a day in the dose text ("x2", "twice") are read, and must agree with a frequency
        ({"drug": "paracetamol", "dose": "1000 mg x2"},
         {"dose": 1000.0, "unit": "mg", "frequency_per_day": 2.0, "unreadable": ()}),
        ({"drug": "paracetamol", "dose": "1000 mg twice", "frequency": "qds"},
         {"dose": 1000.0, "unit": "mg", "frequency_per_day": None,
          "unreadable": (("frequency", "the dose says 2 a day and the frequency 4"),)}),
        # issue 32: a stated most amount a day over the dose: 8 sachets at 2 a dose is 4 doses
        ({"drug": "oral rehydration salts", "dose": "2 sachets",
          "frequency": "after each loose stool, max 8 sachets a day"},
         {"dose": 2.0, "unit": "sachets", "frequency_per_day": 4.0, "as_needed": True, "unreadable": ()}),
        ({"drug": "oral rehydration salts", "dose": "200 ml",
          "frequency": "after each loose stool, max 8 sachets a day"},
         {"dose": 200.0, "unit": "ml", "frequency_per_day": None, "as_needed": True,
          "unreadable": (("frequency", "the most a day, 8 sachets, is not in the dose's unit"),)}),
        # a stated maximum is what may be taken: 1 g bd, max 6 g a day, was read as 2 g a day
        ({"drug": "paracetamol", "dose": "1 g", "frequency": "bd, max 6 g a day"},
         {"frequency_per_day": 6.0, "unreadable": ()}),
        ({"drug": "paracetamol", "dose": "1 g", "frequency": "twice daily, up to 6 times a day"},
         {"frequency_per_day": 6.0, "unreadable": ()}),
        ({"drug": "paracetamol", "dose": "1 g", "frequency": "qds, max 4 g a day"},
         {"frequency_per_day": 4.0, "unreadable": ()}),
        ({"drug": "paracetamol", "dose": "500 mg", "frequency": "up to 6 times a day, max 4 g a day"},
         {"frequency_per_day": 6.0, "unreadable": ()}),  # both maxima hold: 6 doses, under the 8 of 4 g
        # both frequency keys are read and must agree: one was read, the other never looked at
        ({"drug": "paracetamol", "dose": "1 g", "frequency_per_day": 2, "frequency": "every 2 hours"},
         {"dose": 1.0, "unit": "g", "frequency_per_day": None,
          "unreadable": (("frequency", 'frequency_per_day 2 and frequency "every 2 hours" differ'),)}),
        ({"drug": "paracetamol", "dose": "1 g", "frequency_per_day": 4, "frequency": "qds"},
         {"dose": 1.0, "unit": "g", "frequency_per_day": 4.0, "unreadable": ()}),
        ({"drug": "paracetamol", "dose": "1 g", "frequency_per_day": "", "frequency": "bd"},
         {"dose": 1.0, "unit": "g", "frequency_per_day": 2.0, "unreadable": ()}),
        # strengths that differ are not settled by which key came first
        ({"drug": "paracetamol", "dose": "3 tablets (500 mg each)", "strength": "250 mg", "frequency": "qds"},
         {"dose": 3.0, "unit": "tablets", "frequency_per_day": 4.0,
          "unreadable": (("strength", "the item gives different strengths: 250 mg and 500 mg"),)}),
        ({"drug": "paracetamol 500 mg", "dose": "2 tablets", "strength": "0.5 g", "frequency": "qds"},
         {"dose": 2.0, "unit": "tablets", "frequency_per_day": 4.0, "unreadable": ()}),
        # a strength in the drug's name not read whole: the KB's 500 mg tablet was taken instead
        ({"drug": "paracetamol 500 mg or 1 g tablets", "dose": "2 tablets", "frequency": "qds"},
         {"strength": None, "unreadable": (
             ("strength", "'paracetamol 500 mg or 1 g tablets' gives different strengths: 500 mg "
                          "and 1 g"),)}),
        ({"drug": "paracetamol 1.000 mg tablets", "dose": "2 tablets", "frequency": "qds"},
         {"strength": None, "unreadable": (
             ("strength", "'paracetamol 1.000 mg tablets': '1.000' has a point that is a decimal point (1) "
                          "or a thousands point (1000)"),)}),
        # a combination's name gives its ingredients' strengths (kb.resolve reads them), not the item's
        ({"drug": "co-codamol 30 mg / 500 mg tablets", "dose": "2 tablets", "frequency": "qds"},
         {"ingredients": ("codeine", "paracetamol"), "strength": None, "unreadable": ()}),
        # a route or strength_unit written but not read: the item passed on the fields that were
        ({"drug": "paracetamol", "dose": "1 g", "frequency": "qds", "route": ["intravenous"]},
         {"route": None, "unreadable": (("route", '["intravenous"] is not a route'),)}),
        ({"drug": "paracetamol", "dose": "2 tablets", "frequency": "qds", "strength_unit": "g"},
         {"strength": None, "unreadable": (("strength_unit", '"g" is given with no strength'),)}),
        ({"drug": "paracetamol", "dose": "2 tablets", "frequency": "qds", "strength": "1 g",
          "strength_unit": "mg"},
         {"strength": None,
          "unreadable": (("strength", '"1 g" with strength_unit "mg" is not a strength'),)}),
        # a key no field is read from may change what the item means
        ({"drug": "paracetamol", "dose": "1 g", "frequency_per_day": 4, "extra_dose": "another 1 g at night"},
         {"dose": 1.0, "unreadable": (("extra_dose", "not a field of a plan item: not read"),)}),
        ({"drug": "amoxicillin", "status": "do not give (allergy)"},
         {"unreadable": (("status", "not a field of a plan item: not read"),)}),
        # a course is read whole, in days or weeks, or not at all: never its first number
        ({"drug": "paracetamol", "days": "2 weeks"}, {"days": 14.0, "unreadable": ()}),
        ({"drug": "paracetamol", "days": " 5 Days "}, {"days": 5.0, "unreadable": ()}),
        ({"drug": "paracetamol", "days": "3 months"},
         {"days": None, "unreadable": (("days", '"3 months" is not a number of days'),)}),
        ({"drug": "paracetamol", "days": "5-7 days"},
         {"days": None, "unreadable": (("days", '"5-7 days" is not a number of days'),)}),
        ({"drug": "paracetamol", "days": 0},
         {"days": None, "unreadable": (("days", "0 is not a number of days"),)}),
        ({"drug": "paracetamol", "days": ""}, {"days": None, "unreadable": ()}),
        # a thousands comma before a unit with no space
        ({"drug": "ibuprofen", "dose": "1,200mg", "frequency_per_day": 3},
         {"dose": 1200.0, "unit": "mg", "unreadable": ()}),
        # a European thousands point or a decimal point: 1.2 mg passed, 1200 mg is over the maximum
        ({"drug": "ibuprofen", "dose": "1.200 mg", "frequency_per_day": 3},
         {"dose": None, "unreadable": (("dose", "'1.200 mg': '1.200' has a point that is a decimal point "
                                                "(1.2) or a thousands point (1200)"),)}),
    ],
)  # fmt: skip
def test_every_field_is_read_whole_or_named_unread(kb, entry, expected):
    (item,) = parse_plan(json.dumps([entry]), kb).items
    assert item.model_dump(include=set(expected)) == expected


json_fields = st.one_of(
    st.none(), st.booleans(), st.floats(), st.integers(), st.text(max_size=20),
    st.lists(st.integers(), max_size=2),
)  # fmt: skip


@given(
    st.lists(
        st.fixed_dictionaries(
            {"drug": st.sampled_from(["paracetamol", "Nurofen", "co-codamol 30/500", "zzz", ""])},
            optional={"dose": json_fields, "unit": json_fields, "frequency_per_day": json_fields,
                      "strength": json_fields, "days": json_fields, "route": json_fields},
        ),
        max_size=3,
    ),
    st.text(max_size=30),
)  # fmt: skip
def test_any_plan_is_read_whole_or_unparseable_with_a_reason(kb, entries, prose):
    reading = read_plan_reply(prose + json.dumps(entries) + prose, kb)
    assert (reading.plan is None) == (reading.problem is not None)
    for item in reading.plan.items if reading.plan else ():
        for field in ("dose", "frequency_per_day", "strength", "days"):
            value = getattr(item, field)
            assert value is None or (value > 0 and value != float("inf"))


@given(
    st.dictionaries(st.text(min_size=1, max_size=12).filter(lambda key: key not in ITEM_KEYS), json_fields,
                    min_size=1, max_size=3),
    st.sampled_from([{}, {"dose": "500 mg", "frequency_per_day": 3, "days": 5, "route": "oral"}]),
)  # fmt: skip
def test_a_key_no_field_is_read_from_is_named_unread(kb, unknown, known):
    (item,) = parse_plan(json.dumps([{"drug": "amoxicillin", **known, **unknown}]), kb).items
    assert set(unknown) <= {field for field, _ in item.unreadable}


@given(json_fields.filter(lambda route: route is not None and not isinstance(route, str)))
def test_a_route_that_is_no_text_is_named_unread(kb, route):
    (item,) = parse_plan(json.dumps([{"drug": "amoxicillin", "route": route}]), kb).items
    assert (item.route, item.unreadable) == (None, (("route", f"{json.dumps(route)} is not a route"),))


@given(st.one_of(st.text(alphabet="0123456789 .-dayswekmonth", max_size=12), json_fields))
def test_days_are_read_whole_or_named_unread(kb, days):
    (item,) = parse_plan(json.dumps([{"drug": "amoxicillin", "days": days}]), kb).items
    unread = any(field == "days" for field, _ in item.unreadable)
    blank = days is None or (isinstance(days, str) and not days.strip())
    assert (item.days is None) == (unread or blank)
    if isinstance(days, str) and item.days is not None:
        assert re.fullmatch(r"\s*\d+(\.\d+)?\s*(days?|d|weeks?|wks?)?\s*", days, re.IGNORECASE)


@given(st.text(max_size=12).filter(lambda key: key not in ("plan", "advice")), json_fields)
def test_a_key_beside_the_plan_other_than_advice_is_never_read(kb, key, value):
    text = json.dumps({"plan": json.loads(PARACETAMOL), key: value, "advice": "Rest."})
    assert read_plan_reply(text, kb) == PlanReading(
        None, f'"{key}" beside "plan" is not read: only "advice" is'
    )


@given(
    st.lists(
        st.fixed_dictionaries(
            {"drug": st.sampled_from(["paracetamol", "warfarin"])},
            optional={"dose": st.sampled_from(["1 g", "2 g"]), "frequency": st.sampled_from(["od", "qds"])},
        ),
        min_size=1,
        max_size=3,
    ),
    st.data(),
)
def test_a_reply_with_a_key_given_twice_is_never_read(kb, entries, data):
    position = data.draw(st.integers(0, len(entries) - 1))
    pairs = list(entries[position].items())
    key = data.draw(st.sampled_from([key for key, _ in pairs]))
    pairs.insert(data.draw(st.integers(0, len(pairs))), (key, data.draw(json_fields)))
    written = [list(entry.items()) for entry in entries]
    written[position] = pairs
    objects = (
        "{" + ", ".join(f"{json.dumps(name)}: {json.dumps(value)}" for name, value in entry) + "}"
        for entry in written
    )
    text = "[" + ", ".join(objects) + "]"
    assert read_plan_reply(text, kb) == PlanReading(
        None, f'a JSON object gives the key "{key}" more than once'
    )


@given(st.text(alphabet='[]{}",: \n\\adrug', max_size=400))
def test_any_text_is_a_plan_or_unparseable(kb, text):
    reading = read_plan_reply(text, kb)
    assert (reading.plan is None) == (reading.problem is not None)


def test_a_reply_of_many_items_or_long_fields_is_read_in_bounded_work(kb):
    """Each bound keeps a megabyte of reply to well under a second of resolving (tests/perf: plan parser)."""
    item = '{"drug": "paracetamol and zzz%d", "dose": "1 g", "frequency": "qds"}'
    many = "[" + ",".join(item % number for number in range(9000)) + "]"
    assert read_plan_reply(many, kb) == PlanReading(
        None, "the plan lists 9,000 items: more than 50 is no treatment plan"
    )
    long_fields = json.dumps(
        [{"drug": "paracetamol " * 80_000, "dose": "1 mg " * 200, "frequency": "od " * 200}]
    )
    (item,) = read_plan_reply(long_fields, kb).plan.items
    assert item.unreadable == (
        ("dose", "1,000 characters is no dose (at most 500)"),
        ("frequency", "600 characters is no frequency (at most 500)"),
    )
    assert resolve_drug(kb, item.drug).unknown == ("(a name of 80,000 words)",)
