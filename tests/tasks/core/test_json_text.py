import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tasks.core import json_text
from tasks.core.json_text import MAX_DEPTH, MAX_TOKENS, FoundJson, JsonScan, scan_json


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("no json here", JsonScan((), 0, None)),
        ('Plan:\n```json\n[{"drug": "a"}]\n```', JsonScan((FoundJson([{"drug": "a"}], 14, 29),), 0, None)),
        # a bracketed aside that is no JSON is searched for JSON inside it
        (
            '[note: {"a": 1}] then [2]',
            JsonScan((FoundJson({"a": 1}, 7, 15), FoundJson([2], 22, 25)), 0, None),
        ),
        # quotes in prose open no string; inside brackets they do, escapes and brackets in strings included
        ('He is 5" tall [1, "a]\\"b"]', JsonScan((FoundJson([1, 'a]"b'], 14, 26),), 0, None)),
        # a string broken by a line break, or a closer of the wrong kind, breaks what is open around it
        ('["a\n", [1]]', JsonScan((FoundJson([1], 7, 10),), 0, None)),
        ("[1, {2]] [3]", JsonScan((FoundJson([3], 9, 12),), 0, None)),
        ("[" * 5000, JsonScan((), 0, None)),
        # an integer longer than Python converts (4,300 digits) does not decode: no ValueError escapes
        ("[" + "1" * 5000 + "] [2]", JsonScan((FoundJson([2], 5003, 5006),), 0, None)),
        (
            "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
            JsonScan((FoundJson(_nested(MAX_DEPTH), 1, 41),), 1, None),
        ),
        ("[" * MAX_DEPTH + "]" * MAX_DEPTH, JsonScan((FoundJson(_nested(MAX_DEPTH), 0, 40),), 0, None)),
    ],
)
def test_the_outermost_values_that_decode_are_found_in_order(text, expected):
    assert scan_json(text) == expected


def test_the_scan_stops_after_its_token_budget_and_says_where():
    text = "[]" * MAX_TOKENS + '[{"drug": "x"}]'
    scan = scan_json(text)
    assert (len(scan.found), scan.stopped_at) == (MAX_TOKENS // 2, MAX_TOKENS)


def test_an_object_hook_sees_every_pair():
    scan = scan_json('{"a": 1, "a": 2}', object_pairs_hook=list)
    assert scan.found == (FoundJson([("a", 1), ("a", 2)], 0, 16),)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10,
)


@given(st.text(alphabet='[]{}",:\\ \na1', max_size=200))
def test_any_text_is_scanned_and_every_value_found_is_its_text_decoded(text):
    scan = scan_json(text)
    ends = [0]
    for found in scan.found:
        assert found.start >= ends[-1] and json.loads(text[found.start : found.end]) == found.value
        ends.append(found.end)


@given(st.text(alphabet="ab .:\n'", max_size=30), json_values.filter(lambda v: isinstance(v, list | dict)))
def test_a_value_in_prose_is_found_whole(prose, value):
    written = json.dumps(value)
    scan = scan_json(f"{prose}{written}{prose}")
    assert scan.found == (FoundJson(value, len(prose), len(prose) + len(written)),)


@given(st.text(alphabet='[]{}",:\\ \nx', min_size=1, max_size=300))
@example("[x]" * 30)  # pairs that do not decode, each given the whole text before
def test_the_decoder_is_tried_at_most_once_per_opening_bracket_on_that_pair_s_text_alone(text):
    """Linear: each character is read by the decoders of at most MAX_DEPTH pairs enclosing it (a decoder
    given the whole text counted its line breaks on each failure)."""
    read = []
    decoder = json.JSONDecoder

    class CountingDecoder(decoder):
        def raw_decode(self, s, idx=0):
            read.append(len(s))  # a decode error reads the text given from its start
            return super().raw_decode(s, idx)

    json_text.json.JSONDecoder = CountingDecoder
    try:
        scan_json(text)
    finally:
        json_text.json.JSONDecoder = decoder
    assert len(read) <= text.count("[") + text.count("{")
    assert sum(read) <= MAX_DEPTH * len(text)


@pytest.mark.parametrize(
    "hostile",
    ["[" * 1_000_000, "[]" * 500_000, '{"a":' * 200_000, "[}" * 500_000, '["a\n' * 250_000, "[1]," * 250_000],
)
def test_a_megabyte_of_hostile_text_is_read_with_a_bounded_number_of_tokens(hostile):
    scan = scan_json(hostile)
    assert scan.stopped_at is None or scan.stopped_at < len(hostile)
    assert len(scan.found) <= MAX_TOKENS
