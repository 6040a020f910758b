"""The oracle data's rules: what an answer says, the teacher reply's parsing and validation."""

import json
import re
from functools import cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.snomed.leak import MAX_CODE_DIGITS, MIN_CODE_DIGITS
from tasks.benchmarks.snomed.oracle.answers import answer_stance
from tasks.benchmarks.snomed.oracle.validation import (
    LeakNames,
    TeacherPair,
    leak_matcher,
    parse_teacher_reply,
    rejection,
    vocabulary_leak_names,
)
from tasks.benchmarks.snomed.patient import leak_names_by_code, load_lexicon
from tasks.benchmarks.snomed.vocabulary import add_case_set_codes, derive_synthea_vocabulary
from tasks.core.json_text import MAX_DEPTH
from tests.snomed_fixtures import CASES

HYPERTENSION = LeakNames(codes=("59621000",), displays=("Essential hypertension (disorder)",))
DIABETES = ("44054006", "Diabetes mellitus type 2 (disorder)")
# Lay answers a patient could give, naming nothing: each is kept under the fixture's whole vocabulary.
LAY_ANSWERS = (
    "My pressure runs high, they keep telling me to cut down on salt.",
    "My throat has been sore and scratchy for a few days.",
    "I get a stuffy nose and my face feels full, mostly in the mornings.",
    "My last blood pressure reading was 150 over 90.",
    "I'm not sure, I haven't noticed anything like that.",
)


@cache
def vocabulary() -> LeakNames:
    """The names an oracle-data run on the fixture cases checks (oracle.plan.run_vocabulary, which imports
    the call layer): the Synthea vocabulary and the cases' conditions."""
    records = [(c.code, c.display) for case in CASES for c in case.conditions]
    return vocabulary_leak_names(
        add_case_set_codes(derive_synthea_vocabulary(), records), leak_names_by_code(load_lexicon())
    )


@pytest.mark.parametrize(
    ("answer", "stance"),
    [
        ("I'm not sure.", "not_known"),
        ("I’m not sure, I haven't noticed anything like that.", "not_known"),
        ("No, but I don't really know.", "not_known"),
        ("I have no idea.", "not_known"),
        ("No, never.", "denied"),
        ("I don't have that.", "denied"),
        ("Yes, my chest hurts.", "stated"),
        ("Nobody checked.", "stated"),
        ("Yes, an itchy rash every day, not sure why.", "mixed"),
        ("No, but I get an itchy rash every day.", "mixed"),
        ("I'm not sure, but I get headaches.", "mixed"),
        ("I'm not sure. I haven't really noticed anything like that.", "not_known"),
    ],
)
def test_answer_stance(answer, stance):
    assert answer_stance(answer) == stance


@pytest.mark.parametrize(
    ("text", "pair"),
    [
        (
            '{"question": "Any cough?", "answer": "I\'m not sure."}',
            TeacherPair("Any cough?", "I'm not sure."),
        ),
        ('```json\n{"question": "Q?", "answer": " A. "}\n```', TeacherPair("Q?", "A.")),
        ('```\n\n {"question": "Q?", "answer": "A."}\n```', TeacherPair("Q?", "A.")),
        ('Here: {"question": "Q?", "answer": "A."}', None),
        ('{"question": "Q?", "answer": "A."} Hope this helps.', None),
        ('{"question": "Q?", "answer": "A."}{"question": "Q?", "answer": "A."}', None),
        ('```python\n{"question": "Q?", "answer": "A."}\n```', None),
        ('```json\n{"question": "Q?", "answer": "A."}', None),
        ('\ufeff{"question": "Q?", "answer": "A."}', None),
        ('{"question": "Q?", "answer": ""}', None),
        ('{"question": "Q?", "answer": 3}', None),
        ('{"question": "Q?", "answer": "I\'m not sure.", "answer": "Yes, daily."}', None),  # two answers
        ('{"question": "Q?", "question": "Q?", "answer": "A."}', None),
        ('["Q?", "A."]', None),
        ('{"question": "Q?", "answer": "A.", "x": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}", None),
        ('{"question": "Q?", "answer": "A.", "x": ' + "[" * 100_000 + "]" * 100_000 + "}", None),
        ("{" * 1_000_000, None),
        ("```json\n" * 100_000, None),
        (None, None),
    ],
)
def test_parse_teacher_reply(text, pair):
    assert parse_teacher_reply(text) == pair


_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", flags=re.DOTALL)


def json_loads_rule(text: str | None) -> TeacherPair | None:
    """The rule before scan_json: json.loads of the stripped text or of its fence's inside, each key of an
    object once."""
    stripped = (text or "").strip()
    fenced = _FENCE.match(stripped)
    try:
        value = json.loads(fenced.group(1) if fenced else stripped, object_pairs_hook=_once_each)
    except ValueError:  # JSONDecodeError, or a key given twice
        return None
    if not isinstance(value, dict):
        return None
    question, answer = value.get("question"), value.get("answer")
    if not (isinstance(question, str) and isinstance(answer, str) and question.strip() and answer.strip()):
        return None
    return TeacherPair(question.strip(), answer.strip())


def _once_each(pairs: list[tuple[str, object]]) -> dict[str, object]:
    if len({key for key, _ in pairs}) < len(pairs):
        raise ValueError("a key given twice")
    return dict(pairs)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
replies = st.one_of(
    st.text(alphabet='[]{}",:\\ \n\t`jsonqueriat1\x0c\ufeff', max_size=120),
    st.builds(
        lambda pre, question, answer, extra, post: (
            pre + json.dumps({"question": question, "answer": answer, **extra}) + post
        ),
        st.sampled_from(["", " ", "```json\n", "```\n", "Here: ", "\x0c", "\n```json \n"]),
        st.text(max_size=8) | st.integers(),
        st.text(max_size=8) | st.none(),
        st.dictionaries(st.text(max_size=3), json_values, max_size=2),
        st.sampled_from(["", " ", "\n```", "\n", " ok", "}", "\x0c"]),
    ),
)


@given(replies)
def test_the_reply_is_read_as_json_loads_read_it(text):
    """The rule is kept: one JSON object, optionally fenced, nothing around it (up to MAX_DEPTH levels)."""
    assert parse_teacher_reply(text) == json_loads_rule(text)


@given(
    st.lists(st.sampled_from(['{"question": ', '"Q?"', '"answer": ', "[", "]", "{", "}", ",", '"', "\\",
                              "```json\n", "\n```", "x"]), max_size=60),
    st.integers(min_value=0, max_value=3000),
)  # fmt: skip
def test_any_hostile_reply_is_read_without_raising(parts, depth):
    text = "".join(parts)
    for hostile in (text, "[" * depth + text + "]" * depth, '{"a": ' * depth + text):
        pair = parse_teacher_reply(hostile)
        assert pair is None or isinstance(pair, TeacherPair)


@pytest.mark.parametrize(
    ("pair", "kind", "disclosure", "reason"),
    [
        (None, "positive", "symptoms", "unparseable"),
        (TeacherPair("Q?", "My pressure runs high."), "positive", "symptoms", None),
        (TeacherPair("Q?", "They said it is hypertension."), "positive", "symptoms", "leak"),
        (TeacherPair("Q?", "They said it is hypertension."), "positive", "history", None),
        (TeacherPair("Q?", "Code 59621000."), "positive", "symptoms", "leak"),
        (TeacherPair("Q?", "Code 59621000."), "positive", "history", "leak"),
        (TeacherPair("Q?", "I'm not sure."), "positive", "symptoms", "positive_not_known"),
        (TeacherPair("Q?", "I'm not sure."), "negative", "symptoms", None),
        (TeacherPair("Q?", "No, never."), "negative", "symptoms", "negative_not_unsure"),
        (TeacherPair("Q?", "Yes, all the time."), "negative", "symptoms", "negative_not_unsure"),
        (TeacherPair("Q?", "Not sure, but I get headaches."), "negative", "symptoms", "negative_not_unsure"),
        (TeacherPair("Q?", "Yes, all the time, not sure why."), "positive", "symptoms", "positive_not_known"),
    ],
)
def test_rejection(pair, kind, disclosure, reason):
    assert rejection(pair, kind, disclosure, HYPERTENSION) == reason


def test_the_vocabulary_holds_the_records_conditions_and_diabetes_which_no_record_holds():
    codes, held = set(vocabulary().codes), {c.code for case in CASES for c in case.conditions}
    assert held <= codes
    assert DIABETES[0] in codes - held  # a Synthea module's condition


@pytest.mark.parametrize(
    ("answer", "disclosure", "reason"),
    [
        # the example: diabetes, which no fixture record holds, by name and code
        ("I have Diabetes mellitus type 2 (44054006).", "symptoms", "leak"),
        ("I have Diabetes mellitus type 2 (44054006).", "history", "leak"),  # no code under any disclosure
        ("I have Diabetes mellitus type 2.", "symptoms", "leak"),
        ("I have Diabetes mellitus type 2.", "history", None),  # history: diagnoses may be named
        ("They said I was diabetic.", "symptoms", "leak"),  # a close variant of its core name
        ("The paper said 44054006.", "symptoms", "leak"),  # a code alone
        ("My number is 1234567.", "symptoms", "leak"),  # a digit run that is no vocabulary code
        ("My number is 1234567.", "history", "leak"),
        ("Reference 12345678901234567890.", "symptoms", "leak"),  # longer than a code, holding one
        ("My card says \uff14\uff14\uff10\uff15\uff14\uff10\uff10\uff16.", "symptoms", "leak"),
        ("It started in 2019, at 12345 Main St.", "symptoms", None),  # years and 5 digits are no code
        ("The paper said 4405 4006.", "history", "leak"),  # a vocabulary code in groups, any disclosure
        ("The paper said 4405-4006.", "symptoms", "leak"),
        ("It started on 2019-05-12.", "symptoms", None),  # a date is no vocabulary code
        (
            "They said d\u0456ab\u0435tes.",
            "symptoms",
            "unread",
        ),  # Cyrillic i and e: not known to name nothing
        ("They said diab\u0435tes.", "symptoms", "leak"),  # one Cyrillic e: the words either side, joined
        ("\u041d\u0435 \u0437\u043d\u0430\u044e.", "symptoms", "unread"),
        ("They said diab\u0435tes.", "history", None),  # history: names are not checked
        ("My temperature was 38\u00b0C, na\u00efve as I was.", "symptoms", None),  # Latin and symbols: read
        ("I had covid last winter.", "symptoms", "leak"),  # a lexicon name of a code no record holds
        ("I get asthma attacks.", "symptoms", "leak"),
        *((answer, "symptoms", None) for answer in LAY_ANSWERS[:4]),
    ],
)
def test_an_answer_naming_any_vocabulary_condition_or_code_leaks(answer, disclosure, reason):
    assert rejection(TeacherPair("Q?", answer), "positive", disclosure, vocabulary()) == reason


def test_every_lay_answer_is_kept_for_its_kind():
    kinds = ["positive"] * 4 + ["negative"]
    assert [
        rejection(TeacherPair("Q?", a), k, "symptoms", vocabulary())
        for a, k in zip(LAY_ANSWERS, kinds, strict=True)
    ] == [None] * 5


def _named_conditions() -> list[tuple[str, str]]:
    """(code, display) of every vocabulary condition with a name to leak: leak.py leaves plain lay words
    ("Fever (finding)", "Headache (finding)") out, as what a patient may say it feels."""
    names = vocabulary()
    matcher = leak_matcher(names)
    return [(c, d) for c, d, n in zip(names.codes, names.displays, matcher.names, strict=True) if n]


def _insert_at_word(answer: str, index: int, inserted: str) -> str:
    words = answer.split(" ")
    at = index % (len(words) + 1)
    return " ".join([*words[:at], inserted, *words[at:]])


@given(st.sampled_from(LAY_ANSWERS), st.integers(min_value=0), st.data())
def test_inserting_any_vocabulary_name_or_code_into_a_kept_answer_makes_it_a_leak(answer, index, data):
    code, display = data.draw(st.sampled_from(_named_conditions()))
    kind = "negative" if answer_stance(answer) == "not_known" else "positive"
    for inserted in (display, code):
        leaking = TeacherPair("Q?", _insert_at_word(answer, index, inserted))
        assert rejection(leaking, kind, "symptoms", vocabulary()) == "leak"


@given(
    st.sampled_from(LAY_ANSWERS),
    st.integers(min_value=0),
    st.text(alphabet="0123456789", min_size=MIN_CODE_DIGITS, max_size=MAX_CODE_DIGITS),
    st.sampled_from(["symptoms", "history"]),
)
def test_inserting_any_digit_run_anywhere_makes_a_kept_answer_a_leak(answer, index, digits, disclosure):
    at = index % (len(answer) + 1)
    leaking = TeacherPair("Q?", answer[:at] + digits + answer[at:])
    assert rejection(leaking, "positive", disclosure, vocabulary()) == "leak"
