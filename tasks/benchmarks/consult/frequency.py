"""How often a plan item is taken, read from what a prescriber writes; every word read, or not read at all.

The text is read lower-cased, digits of any script as ASCII ones, number words as digits ("twice" -> "2
times"), as a sequence of phrases:
- a rate: a count per day ("3 times a day", "3x daily", "3/day", "tds", "bd", "od", "nocte"), an interval
  ("every 4-6 hours", "q4h", "4-hrly": 24 / the shorter interval), per week ("once a week", "1/7", "twice
  weekly"), "every other day", "single dose", or a bare count ("x2", "twice": a day's);
- times of day ("morning and night", "at 8am, 12pm and 4pm"): each different time is one dose;
- "as needed" (prn, when required), a stated maximum ("max 4 doses in 24 hours", "up to 4 times daily",
  or an amount: "max 8 tablets a day"), an event ("after each loose stool");
- words that say how or for how long, and change no count ("with food", "for 5 days", "by mouth"); a
  number and a period with neither a count nor a "per" between them is how long ("7 d", "2 wks"), as "7
  days" is: read as a rate, "7 d" was 7 doses a day. So are "5/7" and "x 5/7" (5 days) and "2/52" (2
  weeks), the course lengths of the Australian Pharmaceutical Formulary's prescription abbreviations:
  read as a rate, "5/7" was 5 doses a week. "1/7" alone is once a week (issue 32: methotrexate).
A text of more than `MAX_CHARS` characters is not read. Any other word makes the whole text unread
(`Frequency.problem` names it): a count read around a word we do not understand could be wrong, and the
critic then calls the item unverified rather than guess. Rates and times joined by "and" (or "plus") add
up ("3 times a day and at night" = 4); otherwise they describe the same doses and the larger counts
("twice daily (morning and evening)" = 2). A stated maximum is the count, whatever the regular one: it is
the most the prescription lets be taken (the BNF's Prescription writing: "for instructions such as 'as
directed' and 'when required', the maximum daily dose should normally be specified"), so "every 4 hours,
max 4 doses a day" is 4 and "bd, up to 6 times a day" is 6 (read as 2 before, under the 6 it allows). "As
needed" or an event with neither a rate nor a maximum is not read. Every range is read at its worst: the
shorter interval, the larger count.
"""

import math
import re
import unicodedata
from collections.abc import Callable
from typing import Any, NamedTuple

_NUMBER_WORDS = {
    "half": "0.5", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
    "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12", "once": "1 times",
    "twice": "2 times", "thrice": "3 times",
}  # fmt: skip
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b")
_N = r"(\d+(?:\.\d+)?)"
_RANGE = _N + r"(?:\s*(?:-|to|or)\s*" + _N + ")?"  # "6-8", "6 to 8", "1 or 2"
_HOURS = r"(?:h|hr|hrs|hour|hours)"
_DAY = r"(?:day|d|24\s*" + _HOURS + r"|24h)"
_WEEK = r"(?:week|wk|weeks|wks)"
_PER = r"(?:(?:a|an|per|each|every|in)\b|/)"  # whole words: "7 and" is no "7 an d(ay)"
_COUNT = r"(?:x|times|doses?)"
# What makes "3 ... day" a rate: a count word, a "per", or both ("3 x d", "3/d", "3 times a day").
_COUNT_OR_PER = r"(?:" + _COUNT + r"\s*(?:" + _PER + r"\s*)?|" + _PER + r"\s*)"
# Prescription shorthand (Latin: omni die, bis / ter / quater in die, quaque hora, ...) -> doses a day.
_SHORTHAND = {
    "od": 1, "qd": 1, "daily": 1, "qam": 1, "qpm": 1, "qhs": 1, "stat": 1, "bd": 2,
    "bid": 2, "tds": 3, "tid": 3, "qds": 4, "qid": 4, "fortnightly": 1 / 14, "weekly": 1 / 7, "hourly": 24,
}  # fmt: skip
# Times of day: a named time (its part of the day) or a clock time; each different one is a dose.
_NAMED_TIMES = {
    "morning": "morning", "mane": "morning", "breakfast": "morning", "breakfast time": "morning",
    "waking": "morning", "midday": "midday", "noon": "midday", "lunch": "midday", "lunchtime": "midday",
    "afternoon": "afternoon", "evening": "evening", "teatime": "evening", "tea time": "evening",
    "dinner": "evening", "supper": "evening", "night": "night", "nocte": "night", "bedtime": "night",
    "bed": "night", "night time": "night", "nighttime": "night", "midnight": "00:00",
}  # fmt: skip
_STATED_MAXIMUM = r"(?:max(?:imum)?|up to|no more than|not more than|not to exceed|at most|do not exceed)"
_AMOUNT_UNIT = (
    r"(mg|g|grams?|micrograms?|mcg|ml|tablets?|tabs?|capsules?|caps?|puffs?|sprays?|sachets?|drops?|"
    r"applications?|pessaries|pessary)"
)
_FILLER = (
    r"take|taken|give|given|apply|applied|use|used|inhale|inhaled|spray|instil|insert|chew|dissolve|"
    r"dose|doses|tablets?|capsules?|puffs?|sprays?|sachets?|by mouth|orally|regularly|usual|"
    r"(?:with|after|before|between) (?:food|meals?|breakfast|water|a meal)|on an empty stomach|"
    r"with (?:a )?(?:full )?glass of water|at|in|on|the|of|or|then|thereafter|and then|each|a|an|to|be"
)
_AS_NEEDED = (
    r"prn|sos|(?:as|when|if) (?:needed|required|necessary)|as and when (?:needed|required)|on demand|"
    r"for (?:pain|fever|pain or fever|pain and fever|wheeze|itch|itching|breathlessness|symptoms|relief)"
)
_EVENT = (
    r"after (?:each|every) (?:loose (?:stool|motion|bowel movement)s?|(?:episode|bout) of "
    r"(?:diarrhoea|diarrhea|vomiting)|vomit|bowel movement)"
)


class Frequency(NamedTuple):
    """What a frequency says: the most doses a day (None: not read), whether as needed, why it was not read
    (None when read, or when nothing was written), a stated most amount a day in a unit ("max 8 tablets a
    day": the item's dose turns it into doses), and whether the doses a day are a stated maximum ("up to 4
    times a day"), which the most amount can only lower, not a regular count, which it replaces."""

    per_day: float | None
    as_needed: bool = False
    problem: str | None = None
    max_amount: tuple[float, str] | None = None
    is_maximum: bool = False


def _rate(pattern: str, value: Callable[[re.Match[str]], float]) -> tuple[str, re.Pattern[str], Any]:
    return "rate", re.compile(pattern + r"\b"), value


# Phrases in the order they are tried at each place (longer forms before the shorter ones they start with).
_PHRASES: tuple[tuple[str, re.Pattern[str], Any], ...] = (
    (
        "duration",
        re.compile(r"(?:for|x)\s*" + _RANGE + r"\s*(?:/\s*7|/\s*52|days?|weeks?|wks?|months?|d)\b"),
        None,
    ),
    # A number and a period with no count or "per" between them is a duration ("7 d", "2 wks"), never a rate.
    (
        "duration",
        re.compile(
            r"(?!1\s*/\s*7\b)" + _RANGE + r"\s*(?:/\s*7|/\s*52|days?|d|weeks?|wks?)\s*(?:course|only)?\b"
        ),
        None,
    ),
    (
        "maximum_amount",
        re.compile(
            _STATED_MAXIMUM
            + r"\s*(?:of\s*)?"
            + _N
            + r"\s*"
            + _AMOUNT_UNIT
            + r"\s*(?:"
            + _PER
            + r"\s*)?"
            + r"(?:"
            + _DAY
            + r"|daily)\b"
        ),
        None,
    ),
    (
        "maximum",
        re.compile(
            _STATED_MAXIMUM
            + r"\s*(?:of\s*)?"
            + _RANGE
            + r"\s*(?:"
            + _COUNT_OR_PER
            + _DAY
            + r"|(?:"
            + _COUNT
            + r"\s*)?daily)\b"
        ),
        lambda m: _high(m),
    ),
    _rate(r"(?:every|q|each)\s*" + _RANGE + r"\s*-?\s*" + _HOURS, lambda m: 24 / _low(m)),
    _rate(r"(?:every|q|each)\s*" + _HOURS, lambda m: 24.0),
    _rate(_RANGE + r"\s*-?\s*(?:hourly|hrly)", lambda m: 24 / _low(m)),
    _rate(r"(?:every|q)\s*" + _RANGE + r"\s*days?", lambda m: 1 / _low(m)),
    _rate(r"(?:every|q)\s*" + _RANGE + r"\s*" + _WEEK, lambda m: 1 / 7 / _low(m)),
    _rate(r"(?:every other|every second|alternate|on alternate) days?", lambda m: 0.5),
    _rate(r"every other week", lambda m: 1 / 14),
    _rate(_RANGE + r"\s*" + _COUNT_OR_PER + _DAY, lambda m: _high(m)),
    _rate(_RANGE + r"\s*(?:" + _COUNT + r"\s*)?daily", lambda m: _high(m)),
    _rate(_RANGE + r"\s*" + _COUNT_OR_PER + _WEEK, lambda m: _high(m) / 7),
    _rate(_RANGE + r"\s*(?:" + _COUNT + r"\s*)?weekly", lambda m: _high(m) / 7),
    _rate(r"1\s*/\s*7", lambda m: 1 / 7),
    _rate(r"(?:every|each|a|per) (?:day|24\s*" + _HOURS + ")", lambda m: 1.0),
    _rate(r"(?:every|each|once a) week", lambda m: 1 / 7),
    _rate(r"(?:single|1-off|1 off) dose|1 times only|once only|immediately", lambda m: 1.0),
    _rate(r"(" + "|".join(_SHORTHAND) + r")", lambda m: float(_SHORTHAND[m.group(1)])),
    _rate(_RANGE + r"\s*(?:x|times)", lambda m: _high(m)),
    _rate(r"x\s*" + _N, lambda m: _high(m)),
    ("clock", re.compile(r"(\d{1,2})(?::(\d{2}))?\s*(am|pm)\b|(\d{1,2}):(\d{2})\b"), None),
    ("time", re.compile(r"(" + "|".join(sorted(_NAMED_TIMES, key=len, reverse=True)) + r")\b"), None),
    ("as_needed", re.compile(r"(?:" + _AS_NEEDED + r")\b"), None),
    ("event", re.compile(r"(?:" + _EVENT + r")\b"), None),
    ("and", re.compile(r"(?:and|plus|as well as|also|\+|&)(?:\b|(?<=[+&]))"), None),
    ("filler", re.compile(r"(?:" + _FILLER + r")\b"), None),
)
_NON_ASCII_DIGIT = re.compile(r"(?![0-9])\d")
# No frequency a prescriber writes is longer; a longer text is not read (and would cost a pass per phrase).
MAX_CHARS = 500
_SEPARATORS = re.compile(r"[\s,;:()\[\]{}'\"!?*]+")
_WORD = re.compile(r"[^\s,;:()\[\]{}'\"!?*]+")


def read_frequency(value: Any) -> Frequency:
    """The frequency of a plan item from a number or words (see the module docstring)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return Frequency(None)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return Frequency(None, problem=f"{_shown(value)} is not a frequency")
    if not isinstance(value, str):
        if math.isfinite(value) and value > 0:
            return Frequency(float(value))
        return Frequency(None, problem=f"{_shown(value)} doses a day is not a frequency")
    if len(value) > MAX_CHARS:
        return Frequency(None, problem=f"{len(value):,} characters is no frequency (at most {MAX_CHARS})")
    return _read_words(value, plain(value))


def _read_words(written: str, text: str) -> Frequency:
    if re.fullmatch(_N, text):
        number = float(text)
        return Frequency(number) if number > 0 else Frequency(None, problem=f"'{written}' is not a frequency")
    reading = _Reading()
    position = _skip_separators(text, 0)
    while position < len(text):
        phrase = next(
            (
                (kind, found, value)
                for kind, pattern, value in _PHRASES
                if (found := pattern.match(text, position))
            ),
            None,
        )
        if phrase is None:
            word = _WORD.match(text, position)
            unread = word.group() if word else text[position]
            return Frequency(None, problem=f"'{written}': '{unread}' is not read as a frequency")
        try:
            reading.add(*phrase)
        except (ZeroDivisionError, ValueError):
            return Frequency(
                None, reading.as_needed, f"'{written}': '{phrase[1].group()}' is not a frequency"
            )
        position = _skip_separators(text, phrase[1].end())
    return reading.frequency(written)


class _Reading:
    """The phrases read so far. `clauses` are runs of rates and sets of times joined by no "and": each
    clause counts its largest; clauses add up."""

    def __init__(self) -> None:
        self.clauses: list[list[float | frozenset[str]]] = [[]]
        self.as_needed = self.event = False
        self.maximum: float | None = None
        self.maximum_amount: tuple[float, str] | None = None
        self.last = ""  # the kind of the last phrase that counts (a rate or times), after any "and"
        self.joined = False  # an "and" came since it

    def add(self, kind: str, found: re.Match[str], value: Callable[[re.Match[str]], float] | None) -> None:
        if kind in ("time", "clock"):
            moment = _clock_time(found) if kind == "clock" else _NAMED_TIMES[found.group(1)]
            clause = self.clauses[-1]
            if self.last == "times":  # a list of times is one set: "morning, noon and night"
                clause[-1] = frozenset({*clause[-1], moment})  # type: ignore[misc]
            else:
                self._clause().append(frozenset({moment}))
            self.last, self.joined = "times", False
        elif kind == "rate" and value is not None:
            rate = value(found)
            if not (math.isfinite(rate) and rate > 0):
                raise ValueError(f"{rate} a day")
            self._clause().append(rate)
            self.last, self.joined = "rate", False
        elif kind == "maximum" and value is not None:
            stated = value(found)
            if not stated > 0:
                raise ValueError(found.group())
            self.maximum = min(self.maximum or math.inf, stated)
        elif kind == "maximum_amount":
            if not float(found.group(1)) > 0:
                raise ValueError(found.group())
            self.maximum_amount = (float(found.group(1)), found.group(2))
        elif kind == "as_needed":
            self.as_needed = True
        elif kind == "event":
            self.event = self.as_needed = True
        elif kind == "and":
            self.joined = True

    def _clause(self) -> list[float | frozenset[str]]:
        """The clause a new rate or time belongs to: a new one after an "and"."""
        if self.joined and self.clauses[-1]:
            self.clauses.append([])
        return self.clauses[-1]

    def frequency(self, written: str) -> Frequency:
        counted = sum(
            max(part if isinstance(part, float) else float(len(part)) for part in clause)
            for clause in self.clauses
            if clause
        )
        per_day = self.maximum or counted
        if per_day or self.maximum_amount:
            return Frequency(per_day or None, self.as_needed, None, self.maximum_amount, bool(self.maximum))
        if self.event:
            problem = f"'{written}': taken after each event, and no most a day is stated"
        elif self.as_needed:
            problem = f"'{written}': as needed, and no most a day is stated"
        else:
            problem = f"'{written}' gives no count a day"
        return Frequency(None, self.as_needed, problem)


def _clock_time(found: re.Match[str]) -> str:
    """ "8am" -> "08:00", "12am" -> "00:00", "20:30" -> "20:30"; ValueError for a time that is none."""
    hour, minute, meridiem, hour24, minute24 = found.groups()
    if meridiem is not None:
        hour_of_day, minutes = int(hour), int(minute or 0)
        if not 1 <= hour_of_day <= 12:
            raise ValueError(found.group())
        hour_of_day = hour_of_day % 12 + (12 if meridiem == "pm" else 0)
    else:
        hour_of_day, minutes = int(hour24), int(minute24)
    if hour_of_day > 23 or minutes > 59:
        raise ValueError(found.group())
    return f"{hour_of_day:02d}:{minutes:02d}"


def _skip_separators(text: str, position: int) -> int:
    separator = _SEPARATORS.match(text, position)
    return separator.end() if separator else position


def plain(text: str) -> str:
    """Lower case, every digit ASCII ("１.０００" -> "1.000"), "×" as "x", number words as digits, thousands
    commas and abbreviation dots gone ("b.i.d." -> "bid"), a decimal comma after a lone 0 or before a unit a
    decimal point ("0,500" -> "0.500", "1,5 g" -> "1.5 g"), a number's leading point kept (".5 g" -> "0.5 g":
    dropping it would read 5 g), dashes as "-"."""
    # \d and float() take any script's digits, and rules written for ASCII ones ("1.000") would miss them.
    text = _NON_ASCII_DIGIT.sub(lambda digit: str(unicodedata.decimal(digit.group())), text)
    # No thousands group follows a lone 0: "0,500 mg" is 0.5 mg (its comma was dropped, and 500 mg read).
    text = re.sub(r"(?<![\d.,])0,(?=\d)", "0.", text.lower().replace("×", "x"))
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)  # "1,200mg" too
    text = re.sub(r"(?<=\d),(?=\d{1,2}[ \t]*+[a-zµμ])", ".", text)
    text = re.sub(r"(?<!\d)\.(?=\d)", "0.", text)
    text = re.sub(r"\.(?!\d)|(?<!\d)\.", "", re.sub(r"[\u2010-\u2015]", "-", text))
    text = _NUMBER_WORD.sub(lambda match: _NUMBER_WORDS[match.group(1)], text.replace(",", " "))
    return " ".join(text.split())


def _shown(value: Any) -> str:
    return repr(value) if not isinstance(value, float) else str(value)


def _numbers(match: re.Match[str]) -> list[float]:
    return [float(group) for group in match.groups() if group is not None]


def _low(match: re.Match[str]) -> float:
    """The smaller number of a matched range (the shorter interval)."""
    return min(_numbers(match))


def _high(match: re.Match[str]) -> float:
    """The larger number of a matched range (the larger count)."""
    return max(_numbers(match))
