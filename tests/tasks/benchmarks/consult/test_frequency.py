import math
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.consult.frequency import Frequency, read_frequency

WEEKLY = 1 / 7


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        (3, Frequency(3.0)),
        ("3", Frequency(3.0)),
        ("3 times a day", Frequency(3.0)),
        ("three times a day", Frequency(3.0)),
        ("six times a day", Frequency(6.0)),
        ("3x daily", Frequency(3.0)),
        ("3/day", Frequency(3.0)),
        ("x3", Frequency(3.0)),
        ("twice daily", Frequency(2.0)),
        ("once daily", Frequency(1.0)),
        ("od", Frequency(1.0)),
        ("bd", Frequency(2.0)),
        ("b.i.d.", Frequency(2.0)),
        ("TDS", Frequency(3.0)),
        ("tid", Frequency(3.0)),
        ("qds", Frequency(4.0)),
        ("QID", Frequency(4.0)),
        ("nocte", Frequency(1.0)),
        ("morning and night", Frequency(2.0)),
        ("mane and nocte", Frequency(2.0)),
        ("every 4 hours", Frequency(6.0)),
        ("q4h", Frequency(6.0)),
        ("q 6 h", Frequency(4.0)),
        ("4-hourly", Frequency(6.0)),
        ("4 hourly", Frequency(6.0)),
        ("4-hrly", Frequency(6.0)),  # issue 32: refused before
        ("every 6-8 hours", Frequency(4.0)),  # a range of intervals: the most frequent
        ("every 4 to 6 hours", Frequency(6.0)),
        ("6–8 hourly", Frequency(4.0)),
        ("q4-6h", Frequency(6.0)),
        ("every 12 hours", Frequency(2.0)),
        ("every hour", Frequency(24.0)),
        ("2-3 times a day", Frequency(3.0)),  # a range of counts: the larger
        ("4 times in 24 hours", Frequency(4.0)),
        ("as needed, max 4 a day", Frequency(4.0, True, is_maximum=True)),  # the stated maximum
        ("prn max 4 doses in 24 hours", Frequency(4.0, True, is_maximum=True)),
        # issue 32: "500 mg-1 g every 4-6 hours when required, max 4 doses in 24 hours" (the frequency part)
        ("every 4-6 hours when required, max 4 doses in 24 hours", Frequency(4.0, True, is_maximum=True)),
        ("every 4-6 hours when required, no more than 4 doses in 24 hours",
         Frequency(4.0, True, is_maximum=True)),
        ("up to four times daily", Frequency(4.0, is_maximum=True)),
        # a stated maximum above the regular count is what may be taken: "bd, up to 6 a day" was read as 2
        ("twice daily, up to 6 times a day", Frequency(6.0, is_maximum=True)),
        ("bd, max 6 g a day", Frequency(2.0, max_amount=(6.0, "g"))),  # the item's dose turns 6 g into doses
        ("qds prn", Frequency(4.0, True)),
        ("once a week", Frequency(WEEKLY)),
        ("weekly", Frequency(WEEKLY)),
        ("once weekly", Frequency(WEEKLY)),
        ("1/7", Frequency(WEEKLY)),  # issue 32: methotrexate "1/7"
        ("twice weekly", Frequency(2 / 7)),
        ("every other day", Frequency(0.5)),
        ("every 2 days", Frequency(0.5)),
        ("single dose", Frequency(1.0)),
        ("x2", Frequency(2.0)),  # issue 32: a count with no period is a day's
        ("twice", Frequency(2.0)),
        # issue 32: times of day each count once; rates and times joined by "and" add up
        ("at 8am, 12pm, 4pm, 8pm and 12am", Frequency(5.0)),
        ("at 08:00 and 20:00", Frequency(2.0)),
        ("3 times a day and at night", Frequency(4.0)),
        ("twice a day and once at night", Frequency(3.0)),
        # times that describe the rate's doses do not add to it
        ("twice daily (morning and evening)", Frequency(2.0)),
        ("once daily at night", Frequency(1.0)),
        ("3 times a day with food for 5 days", Frequency(3.0)),
        ("daily for 5/7", Frequency(1.0)),
        # "n/7" and "n/52" are a course's days and weeks: "5/7" was read as 5 doses a week
        ("bd 5/7", Frequency(2.0)),
        ("qds x 5/7", Frequency(4.0)),
        ("tds 2/52", Frequency(3.0)),
        ("5/7", Frequency(None, problem="'5/7' gives no count a day")),
        ("3× daily", Frequency(3.0)),
        # issue 32: oral rehydration after each loose stool, read only with a stated maximum
        ("after each loose stool, up to 6 times a day", Frequency(6.0, True, is_maximum=True)),
        ("after each loose stool, max 8 sachets a day", Frequency(None, True, max_amount=(8.0, "sachets"))),
        ("after each loose stool", Frequency(
            None, True, "'after each loose stool': taken after each event, and no most a day is stated")),
        # what stays unread, with the reason
        ("as needed", Frequency(None, True, "'as needed': as needed, and no most a day is stated")),
        ("prn", Frequency(None, True, "'prn': as needed, and no most a day is stated")),
        ("when the pain is bad", Frequency(
            None, False, "'when the pain is bad': 'when' is not read as a frequency")),
        ("as directed", Frequency(None, False, "'as directed': 'as' is not read as a frequency")),
        ("with meals", Frequency(None, False, "'with meals' gives no count a day")),
        ("5 day course", Frequency(None, False, "'5 day course' gives no count a day")),  # a duration
        # a number and a period alone are how long, never a rate ("7 d" was 7 a day, "2 wks" 2 a week)
        ("7 d", Frequency(None, False, "'7 d' gives no count a day")),
        ("2 wks", Frequency(None, False, "'2 wks' gives no count a day")),
        ("tds 7d", Frequency(3.0)),
        ("3 x d", Frequency(3.0)),
        ("3/d", Frequency(3.0)),
        ("2 x wk", Frequency(2 / 7)),
        ("max 4 d", Frequency(None, False, "'max 4 d': 'max' is not read as a frequency")),
        ("every 0 hours", Frequency(None, False, "'every 0 hours': 'every 0 hours' is not a frequency")),
        ("0 times a day", Frequency(None, False, "'0 times a day': '0 times a day' is not a frequency")),
        ("max 0 a day", Frequency(None, False, "'max 0 a day': 'max 0 a day' is not a frequency")),
        ("-4", Frequency(None, False, "'-4': '-4' is not read as a frequency")),
        ("3 times a day or so", Frequency(
            None, False, "'3 times a day or so': 'so' is not read as a frequency")),
        # an "and" cut short is no "an d(ay)"
        ("7 and", Frequency(None, False, "'7 and': '7' is not read as a frequency")),
        ("max 4 and", Frequency(None, False, "'max 4 and': 'max' is not read as a frequency")),
        ("", Frequency(None)),
        (None, Frequency(None)),
        (True, Frequency(None, False, "True is not a frequency")),
        # issue 32: NaN, negative and zero numbers were read as frequencies
        (math.nan, Frequency(None, False, "nan doses a day is not a frequency")),
        (-4, Frequency(None, False, "-4 doses a day is not a frequency")),
        (0, Frequency(None, False, "0 doses a day is not a frequency")),
        (math.inf, Frequency(None, False, "inf doses a day is not a frequency")),
    ],
)  # fmt: skip
def test_read_frequency(written, expected):
    assert read_frequency(written) == expected


@given(st.one_of(st.text(max_size=60), st.floats(), st.integers(), st.booleans(), st.none()))
def test_any_frequency_is_read_or_named_unread(written):
    found = read_frequency(written)
    read = found.per_day is not None or found.max_amount is not None
    nothing_written = written is None or (isinstance(written, str) and not written.strip())
    assert (found.problem is None) == (read or nothing_written)
    if found.per_day is not None:
        assert math.isfinite(found.per_day) and found.per_day > 0


_RATES = ["3 times a day", "bd", "every 6 hours", "qds", "once daily", "twice weekly", "x2"]


@given(
    st.sampled_from(
        [*_RATES, "every 4-6 hours", "q4h", "1/7", "bd 5/7", "at 8am and 20:00", "max 4 g a day"]
    ),
    st.data(),
)
def test_a_frequency_in_any_script_reads_as_its_ascii_spelling(written, data):
    assert read_frequency(spelled_in_any_script(data, written)) == read_frequency(written)


def spelled_in_any_script(data: st.DataObject, text: str) -> str:
    """`text` with each ASCII digit written in a script drawn for it (Unicode's digits run 0-9 in a block)."""
    zeros = st.characters(categories=["Nd"]).map(lambda digit: ord(digit) - unicodedata.decimal(digit))
    return "".join(chr(data.draw(zeros) + int(char)) if char in "0123456789" else char for char in text)


@given(st.sampled_from(_RATES), st.text(alphabet="zqjkv", min_size=2, max_size=6))
def test_a_word_not_understood_leaves_the_whole_frequency_unread(rate, word):
    assert read_frequency(f"{rate} {word}").per_day is None
    assert read_frequency(f"{word} {rate}").per_day is None


@given(st.sampled_from(_RATES), st.sampled_from(_RATES))
def test_rates_joined_by_and_add_up(first, second):
    joined = read_frequency(f"{first} and {second}").per_day
    assert joined == pytest.approx(read_frequency(first).per_day + read_frequency(second).per_day)


@given(st.sampled_from(_RATES), st.integers(min_value=1, max_value=12))
def test_a_stated_maximum_is_the_count_above_or_below_the_regular_one(rate, maximum):
    assert read_frequency(f"{rate}, max {maximum} times a day") == Frequency(float(maximum), is_maximum=True)


def test_a_frequency_is_read_to_its_first_unread_word_and_a_long_one_not_at_all():
    assert read_frequency("3 times a day " * 30 + "zz").problem == (
        f"'{'3 times a day ' * 30}zz': 'zz' is not read as a frequency"
    )
    assert read_frequency("3 times a day " * 80_000) == Frequency(
        None, problem="1,120,000 characters is no frequency (at most 500)"
    )


@given(
    st.sampled_from(_RATES),
    st.integers(min_value=1, max_value=90),
    st.sampled_from(["d", "day", "days", "wk", "wks", "week", "weeks"]),
    st.sampled_from([" ", ""]),
)
def test_a_number_and_a_period_alone_say_how_long_and_change_no_count(rate, number, period, space):
    how_long = f"{number}{space}{period}"
    assert read_frequency(how_long) == Frequency(None, problem=f"'{how_long}' gives no count a day")
    assert read_frequency(f"{rate} {how_long}") == read_frequency(rate)


@given(
    st.sampled_from(_RATES),
    st.integers(min_value=2, max_value=90),
    st.sampled_from(["/7", " / 7", "/52"]),
    st.sampled_from(["", "x ", "for "]),
)
def test_a_course_in_days_or_weeks_over_7_or_52_is_how_long_and_changes_no_count(rate, number, period, word):
    how_long = f"{word}{number}{period}"
    assert read_frequency(how_long) == Frequency(None, problem=f"'{how_long}' gives no count a day")
    assert read_frequency(f"{rate} {how_long}") == read_frequency(rate)
