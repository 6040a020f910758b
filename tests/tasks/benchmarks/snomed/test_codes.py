"""Final-answer parsing and code checks: given a reply or a code, expect the whole result; then any reply,
hostile or not, read to codes, to no answer or to the reason it cannot be read, with work linear in its
length (counted)."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.snomed import codes
from tasks.benchmarks.snomed.codes import (
    NEGATING_WORDS,
    AnswerItems,
    CodeCheck,
    UnparseableAnswer,
    check_codes,
    classify_code,
    find_final_answer,
    format_final_answer,
    has_valid_check_digit,
    parse_final_answer,
    read_answer,
)
from tasks.core.json_text import MAX_TOKENS
from tests.parser_work import backtracking_repeats, counting

SYNTHEA_ODD_CODE = "10939881000119104"  # emitted by Synthea, fails Verhoeff
VOCABULARY = {"44054006", "38341003", "195662009", SYNTHEA_ODD_CODE}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('<Final Answer>: ["44054006", "38341003"]', ("44054006", "38341003")),
        (
            'I think so.\n<Final Answer>: ["44054006 - Diabetes", "38341003 - Hypertension"]',
            ("44054006", "38341003"),
        ),
        ("<final answer> : [44054006, 38341003]", ("44054006", "38341003")),
        ("**Final Answer**: 44054006, 38341003 - Hypertension", ("44054006", "38341003")),
        ("Final Answer: ['44054006', '38341003']", ("44054006", "38341003")),
        ('<Final Answer>:\n```json\n["44054006",\n "38341003"]\n```', ("44054006", "38341003")),
        ('<Final Answer>: ["38341003", "44054006", "38341003 - Hypertension"]', ("38341003", "44054006")),
        ('<Final Answer>: ["Type 2 diabetes (44054006)"]', ("44054006",)),
        ('<Final Answer>: ["Pain severity [Score] (44054006)"].', ("44054006",)),
        ("<Final Answer>: 38341003 |Hypertension|, 2. 44054006", ("38341003", "44054006")),
        # a code with more beside it than its name is not read: the answer is unparseable (asked again)
        (
            '<Final Answer>: ["44054006"] and then 38341003',
            UnparseableAnswer("unread_item", '["44054006"] and then 38341003'),
        ),
        ("<Final Answer>: not 44054006", UnparseableAnswer("unread_item", "not 44054006")),
        (
            '<Final Answer>: ["44054006 (ruled out)"]',
            UnparseableAnswer("unread_item", "44054006 (ruled out)"),
        ),
        ('<Final Answer>: ["44054006?"]', UnparseableAnswer("unread_item", "44054006?")),
        # an item that denies or hedges, in an answer offering a code, is never read as a prediction
        (
            '<Final Answer>: ["44054006 - ruled out"]',
            UnparseableAnswer("negated_item", "44054006 - ruled out"),
        ),
        (
            '<Final Answer>: ["No diabetes (44054006)"]',
            UnparseableAnswer("negated_item", "No diabetes (44054006)"),
        ),
        (
            '<Final Answer>: ["44054006 - Diabetes (excluded)", "38341003"]',
            UnparseableAnswer("negated_item", "44054006 - Diabetes (excluded)"),
        ),
        (
            '<Final Answer>: ["44054006 - Diabetes [Ruled-Out]"]',
            UnparseableAnswer("negated_item", "44054006 - Diabetes [Ruled-Out]"),
        ),
        ("<Final Answer>: 44054006 - Diabetes, ruled out", UnparseableAnswer("negated_item", "ruled out")),
        (
            "<Final Answer>:\n- 38341003 - Hypertension\n- Diabetes: unlikely",
            UnparseableAnswer("negated_item", "- Diabetes: unlikely"),
        ),
        # a code and its own display (installed Synthea's) holding such a word is read; another name is not
        ('<Final Answer>: ["741062008 - Not in labor force"]', ("741062008",)),
        (
            '<Final Answer>: ["Concussion with no loss of consciousness (62106007)", "44054006"]',
            ("62106007", "44054006"),
        ),
        ("<Final Answer>: 162573006 - suspected  lung cancer", ("162573006",)),
        (
            '<Final Answer>: ["44054006 - Not in labor force"]',
            UnparseableAnswer("negated_item", "44054006 - Not in labor force"),
        ),
        (
            "<Final Answer>: 741062008 - Not in labor force, ruled out",
            UnparseableAnswer("negated_item", "ruled out"),
        ),
        ("<Final Answer>: No diabetes, no hypertension.", ()),
        # a code in digits other than 0-9 is neither read nor dropped
        (
            "<Final Answer>: ４４０５４００６",
            UnparseableAnswer("other_digits", "４４０５４００６"),
        ),
        (
            "<Final Answer>: 38341003 - Hypertension ٤٤٠٥٤٠٠٦",
            UnparseableAnswer("other_digits", "38341003 - Hypertension ٤٤٠٥٤٠٠٦"),
        ),
        ('<Final Answer>: ["38341003"]\n(and ٤٤٠٥٤٠٠٦)', UnparseableAnswer("unread_lines", "(and ٤٤٠٥٤٠٠٦)")),
        ("<Final Answer>: 44054006 or 38341003", UnparseableAnswer("unread_item", "44054006 or 38341003")),
        (
            '<Final Answer>: [{"code": "44054006", "present": false}]',
            UnparseableAnswer("unread_item", "{'code': '44054006', 'present': False}"),
        ),
        (
            '<Final Answer>: ["12345", "1234567890123456789", "A44054006", "440540.06"]',
            ("12345", "1234567890123456789"),
        ),
        # an answer goes on to a blank line or a closing fence, every line of it read
        ("**Final Answer:**\n1. 44054006 - Diabetes\n2. 38341003 - Hypertension", ("44054006", "38341003")),
        ("__Final Answer:__\n44054006", ("44054006",)),
        ("<Final Answer>:\n* 44054006 - Diabetes\n* 38341003 - Hypertension", ("44054006", "38341003")),
        ("<Final Answer>:\n\n- 44054006\n- 12345\n\nAsk me anything.", ("44054006", "12345")),
        ("<Final Answer>:\n```\n44054006\n38341003\n```\nThanks.", ("44054006", "38341003")),
        ("<Final Answer>: 44054006\n38341003", ("44054006", "38341003")),
        ('<Final Answer>: The codes are:\n["44054006", "38341003"]', ("44054006", "38341003")),
        # after a list, a line offering a code is not read, nor left out: the answer is unparseable
        ('<Final Answer>: ["44054006"]\n38341003', UnparseableAnswer("unread_lines", "38341003")),
        ('<Final Answer>: ["44054006"]\nThanks.', ("44054006",)),
        ('<Final Answer>: ["44054006", "3834', UnparseableAnswer("unclosed")),
        ('<Final Answer>: ["44054006 - Diabetes [type 2"]', ("44054006",)),
        ("<Final Answer>: [44054006 - Diabetes [type 2]", UnparseableAnswer("unclosed")),
        ("**Final Answer:**", UnparseableAnswer("blank")),
        ("<Final Answer>:\n\n", UnparseableAnswer("blank")),
        ("<Final Answer>: []", ()),
        ("<Final Answer>: I cannot tell.", ()),
        ('<Final Answer>: ["1"]\nOn second thought:\n<Final Answer>: ["195662009"]', ("195662009",)),
        # a marker is followed by a colon, a list or the line's end; a later one naming no code erases nothing
        ("Before my <Final Answer>, one more question: do you smoke?", None),
        ('<Final Answer>: ["44054006"]\nSee the <final answer> above.', ("44054006",)),
        ("My <final answer>\n- 44054006\n\nThanks.", ("44054006",)),
        ('`<Final Answer>` ["44054006"]', ("44054006",)),
        (
            '<Final Answer>: ["44054006"]\nI hope this <Final Answer>: helps.',
            UnparseableAnswer("conflicting_markers"),
        ),
        (
            '<Final Answer>: ["44054006"]\nOr rather, none.\n<Final Answer>: []',
            UnparseableAnswer("conflicting_markers"),
        ),
        ('<Final Answer>: ["10939881000119104"]', (SYNTHEA_ODD_CODE,)),
        ("Do you have a cough?", None),
        ("Before my final answer: do you smoke?", None),
        ("", None),
    ],
)
def test_parse_final_answer(reply, expected):
    assert parse_final_answer(reply) == expected


def test_find_final_answer_keeps_the_raw_answer_to_a_blank_line_or_a_closing_fence():
    listed = '["44054006 - Diabetes [type 2]", "38341003"]'
    assert find_final_answer(f"<Final Answer>: {listed}.\nThanks.\n\nBye.") == f"{listed}.\nThanks."
    assert find_final_answer(f"**Final Answer:**\n```json\n{listed}\n```\nBye.") == f"{listed}\n"
    assert find_final_answer("Final Answer:\n\n44054006\n 38341003\n \nBye.") == "44054006\n 38341003"


def test_a_list_is_read_with_the_rest_of_its_line_and_the_lines_after_it_must_offer_no_code():
    assert read_answer('["44054006 - Diabetes [type 2]"].\nBye.') == AnswerItems(("44054006",), ())
    assert read_answer('["44054006"] -- none\n1. Hypertension') == UnparseableAnswer(
        "unread_item", '["44054006"] -- none'
    )
    assert read_answer('["44054006"]\n- 12345') == UnparseableAnswer("unread_lines", "- 12345")


def test_json_items_are_read_apart():
    assert read_answer('["440540", "06"]') == AnswerItems(("440540", "06"), ())
    assert read_answer("44054006") == AnswerItems(("44054006",), ())


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('["12345", "67890"]', {"12345": "malformed", "67890": "malformed"}),  # too short for a SNOMED id
        (
            '["44054006", "236974004", "44054007", "10939881000119104"]',
            {"44054006": "valid", "236974004": "invalid", "44054007": "malformed", SYNTHEA_ODD_CODE: "valid"},
        ),
        (
            '["1234567890123456789", "A44054006", "440540.06"]',
            {"1234567890123456789": "malformed", "A44054006": "not a code", "440540.06": "not a code"},
        ),
        ('["38341003 - Hypertension", "Hypertension"]', {"38341003": "valid", "Hypertension": "not a code"}),
        ("12345 - Hypertension; Diabetes", {"12345": "malformed", "Diabetes": "not a code"}),
        ("1. Hypertension\n2. 44054006", {"1. Hypertension": "not a code", "44054006": "valid"}),
        ("I cannot tell.", {"I cannot tell.": "not a code"}),
        ("[]", {}),
    ],
)
def test_every_item_offered_is_counted_as_valid_invalid_malformed_or_not_a_code(answer, expected):
    items = read_answer(answer)
    counted = {code: classify_code(code, VOCABULARY) for code in items.codes}
    assert counted | {item: "not a code" for item in items.not_codes} == expected


def test_format_final_answer_round_trips():
    line = format_final_answer(["44054006", "38341003"])
    assert line == '<Final Answer>: ["44054006", "38341003"]'
    assert parse_final_answer(line) == ("44054006", "38341003")
    assert parse_final_answer(format_final_answer([])) == ()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("44054006", True),
        ("38341003", True),
        ("195662009", True),
        ("444814009", True),
        ("124171000119105", True),
        ("44054007", False),  # last digit changed
        ("38341030", False),  # two digits swapped
        ("195662090", False),
        (SYNTHEA_ODD_CODE, False),
        ("", False),
        ("4405400x", False),
    ],
)
def test_verhoeff_check_digit(code, expected):
    assert has_valid_check_digit(code) is expected


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("44054006", "valid"),
        (SYNTHEA_ODD_CODE, "valid"),  # vocabulary first: a correct prediction of it counts
        ("236974004", "invalid"),  # a real SNOMED id outside the vocabulary
        ("44054007", "malformed"),
    ],
)
def test_classify_code(code, expected):
    assert classify_code(code, VOCABULARY) == expected


def test_check_codes_splits_in_order():
    codes = ("44054007", "44054006", "236974004", SYNTHEA_ODD_CODE)
    assert check_codes(codes, VOCABULARY) == CodeCheck(
        valid=("44054006", SYNTHEA_ODD_CODE),
        invalid=("44054007", "236974004"),
        malformed=("44054007",),
    )


# --- any reply read to codes, to no answer or to the reason it cannot be read, in linear time ---------------

READINGS = {
    "list-nested-too-deep": (
        "<Final Answer>: " + "[" * 21 + '"44054006"' + "]" * 21,
        UnparseableAnswer("too_deep"),
    ),
    "list-at-the-depth-limit": ("<Final Answer>: " + "[" * 20 + '"44054006"' + "]" * 20, ("44054006",)),
    "more-brackets-than-read": ("<Final Answer>: [" + "[]" * MAX_TOKENS + "]", UnparseableAnswer("too_long")),
    # json.loads of these raised RecursionError; a list no `]` closes may have gone on (it read as empty)
    "three-thousand-open-brackets": ("<Final Answer>: " + "[" * 3000, UnparseableAnswer("unclosed")),
    "three-thousand-pairs-nested": (
        "<Final Answer>: " + "[" * 3000 + "]" * 3000,
        UnparseableAnswer("too_deep"),
    ),
    # an integer past Python's 4,300 digits is no JSON the decoder reads: the items are read as text
    # (and a number of 5,000 digits is offered as a code, malformed)
    "huge-integer": ("<Final Answer>: [44054006, " + "1" * 5000 + "]", ("44054006", "1" * 5000)),
    "line-breaks-before-a-bare-marker": ("\n" * 5000 + "Final Answer: 44054006", ("44054006",)),
}


@pytest.mark.parametrize(("reply", "expected"), READINGS.values(), ids=READINGS.keys())
def test_a_reply_reads_to_codes_or_to_the_reason_its_final_answer_cannot_be_read(reply, expected):
    assert parse_final_answer(reply) == expected


def test_an_unparseable_answer_says_what_could_not_be_read():
    reasons = ("too_deep", "too_long", "cut", "blank", "unclosed", "conflicting_markers")
    assert [UnparseableAnswer(reason).describe() for reason in reasons] == [
        "final answer not read: a JSON list nested deeper than 20 levels",
        "final answer not read: more than 100,000 brackets and strings",
        "final answer not read: the reply was cut at max_tokens, and a code may be missing",
        "final answer not read: nothing follows its marker",
        "final answer not read: no ] closes its list, and a code may be missing",
        "final answer not read: its last marker names no code, and an earlier one does",
    ]
    assert UnparseableAnswer("unread_item", "not 44054006").describe() == (
        "final answer not read: 'not 44054006' is no code, nor a code and its name"
    )
    assert UnparseableAnswer("negated_item", "44054006 - ruled out").describe() == (
        "final answer not read: '44054006 - ruled out' denies or hedges, so a code beside it may be none"
    )
    assert UnparseableAnswer("other_digits", "٤٤٠٥٤٠٠٦").describe() == (
        "final answer not read: '٤٤٠٥٤٠٠٦' writes digits other than 0-9"
    )
    assert UnparseableAnswer("unread_lines", "- 12345").describe() == (
        "final answer not read: '- 12345', on a line after its list, offers a code"
    )


CODES = st.lists(
    st.sampled_from(["44054006", "38341003", "195662009", "10939881000119104", "12345"]), unique=True
)
PROSE = st.sampled_from(["", "I think so.", "Thank you for your answers.", "Here is my final list."])


@st.composite
def final_answers(draw, predicted: list[str]) -> str:
    """A final-answer line as clinicians write it: marker, then the codes as a JSON list, a fenced list, a
    Python-style list, or separated by commas, with display names or not."""
    marker = draw(
        st.sampled_from(["<Final Answer>:", "<final answer> :", "**Final Answer**:", "Final Answer:"])
    )
    # A display name beside a code only of a SNOMED id's length: a shorter number is offered only alone.
    named = [
        draw(st.sampled_from([code, f"{code} - Hypertension", f"Type 2 diabetes ({code})"]))
        if len(code) >= 6
        else code
        for code in predicted
    ]
    # Codes separated by commas only when there are some: a marker with nothing after it is no answer.
    separated = [", ".join(named)] if named else []
    written = draw(
        st.sampled_from([json.dumps(named), f"\n```json\n{json.dumps(named)}\n```", str(named), *separated])
    )
    return f"{marker} {written}"


@given(PROSE, CODES, PROSE)
def test_a_final_answer_in_any_documented_form_reads_to_its_codes(before, predicted, after):
    reply = f"{before}\n{format_final_answer(predicted)}\n{after}"
    assert parse_final_answer(reply) == tuple(predicted)


@given(PROSE, CODES, st.data())
def test_each_form_of_a_final_answer_reads_to_its_codes_and_the_last_one_counts(before, predicted, data):
    corrected = data.draw(CODES)
    first, last = data.draw(final_answers(corrected)), data.draw(final_answers(predicted))
    # unless the last names no code (of a SNOMED id's length) and the first does: it may be a remark
    erased = not any(len(code) >= 6 for code in predicted) and any(len(code) >= 6 for code in corrected)
    expected = UnparseableAnswer("conflicting_markers") if erased else tuple(predicted)
    assert parse_final_answer(f"{before}\n{first}\n{last}") == expected


ITEM_LINES = st.sampled_from(
    ["{code}", "{code} - Hypertension", "Type 2 diabetes ({code})", "{code} |Hypertension|"]
)
LIST_MARKS = st.sampled_from(["", "- ", "* ", "\u2022 ", "1. ", "12) "])


@given(
    st.sampled_from(["<Final Answer>:", "**Final Answer:**", "Final Answer:", "<Final Answer>:\n```"]),
    CODES.filter(bool),
    st.data(),
)
def test_an_answer_written_one_item_a_line_reads_to_the_code_of_every_line(marker, predicted, data):
    lines = [
        data.draw(LIST_MARKS) + (data.draw(ITEM_LINES) if len(code) >= 6 else "{code}").format(code=code)
        for code in predicted
    ]
    reply = "\n".join([marker, *lines, "", "Thank you."])
    assert parse_final_answer(reply) == tuple(predicted)


# Pieces of replies that made the old parser recurse or rescan: brackets, line breaks, markers, digit runs.
HOSTILE_PIECES = (
    "[", "]", "{", "}", '"', "'", ",", ";", " ", "\n", "\t", "*", "`", "```json\n", ">", "#", "-", "_", ":",
    "<Final Answer>", "<final answer>:", "Final Answer:", "final", "answer", "44054006", "1" * 30, ".",
)  # fmt: skip
hostile_replies = st.lists(
    st.tuples(st.sampled_from(HOSTILE_PIECES), st.integers(1, 400)).map(lambda piece: piece[0] * piece[1]),
    max_size=12,
).map("".join)


@given(hostile_replies | st.text())
def test_any_reply_reads_to_codes_to_no_answer_or_to_an_unparseable_answer(reply):
    read = parse_final_answer(reply)
    assert read is None or isinstance(read, UnparseableAnswer) or all(code.isdigit() for code in read)


@given(
    st.sampled_from(["44054006", "38341003", "10939881000119104"]),
    st.text(alphabet="abcnotruledx?~ ", min_size=1, max_size=12).filter(str.strip),
    st.sampled_from(["{word} {code}", "{code} {word}", "{code}{word}", "{word}{code}"]),
)
def test_a_code_with_an_unread_word_beside_it_is_never_read_as_that_code(code, word, form):
    item = form.format(code=code, word=word)
    read = parse_final_answer(f"<Final Answer>: {json.dumps([item])}")
    assert isinstance(read, UnparseableAnswer) or read == (), (item, read)


PATTERNS = [
    "_MARKER",
    "_DIGIT_RUN",
    "_FENCE_OPENING",
    "_ANSWER_END",
    "_BRACKET_RUN",
    "_ITEM_SEPARATOR",
    "_LEADING_NUMBER",
    "_CODE_ITEM",
    "_NEGATING",
    "_OTHER_DIGIT",
]


@given(
    st.sampled_from(NEGATING_WORDS),
    st.sampled_from(
        [
            "{code} - {word}",
            "{Word} diabetes ({code})",
            "{code} - Diabetes ({word})",
            "{code} - Diabetes, {word}",
        ]
    ),
    st.booleans(),
)
def test_a_code_beside_a_word_that_denies_or_hedges_is_never_read_as_a_prediction(word, form, listed):
    item = form.format(code="44054006", word=word, Word=word.capitalize())
    read = parse_final_answer(f"<Final Answer>: {json.dumps([item]) if listed else item}")
    assert isinstance(read, UnparseableAnswer) and read.reason == "negated_item", (item, read)


def test_no_pattern_of_the_answer_parser_can_backtrack_into_an_unbounded_repeat():
    assert {name: backtracking_repeats(getattr(codes, name)) for name in PATTERNS} == {
        name: [] for name in PATTERNS
    }


# The marker search, the fence, the answer's end, the bracket walk, the item split and the search for codes
# named before the last marker each read the reply at most once; an item is read for its digit runs, its
# leading number, its form as a code, its name's digit runs, its negating words and its other digits, and
# items do not overlap.
PASSES = 12


@given(hostile_replies)
def test_the_work_of_reading_a_final_answer_is_linear_in_its_length(reply):
    with counting(codes, PATTERNS) as work:
        parse_final_answer(reply)
    assert work.handed <= PASSES * (len(reply) + 1) and work.decoded <= reply.count("[") + reply.count("{")
