"""Final-answer parsing and code checks: given a reply or a code, expect the whole result."""

import pytest

from tasks.benchmarks.snomed.codes import (
    AnswerItems,
    CodeCheck,
    check_codes,
    classify_code,
    find_final_answer,
    format_final_answer,
    has_valid_check_digit,
    parse_final_answer,
    read_answer,
)

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
        ('<Final Answer>: ["Pain severity [Score] 44054006"] and then 38341003', ("44054006",)),
        (
            '<Final Answer>: ["12345", "1234567890123456789", "A44054006", "440540.06"]',
            ("12345", "1234567890123456789"),
        ),
        ("<Final Answer>: []", ()),
        ("<Final Answer>: I cannot tell.", ()),
        ('<Final Answer>: ["1"]\nOn second thought:\n<Final Answer>: ["195662009"]', ("195662009",)),
        ('<Final Answer>: ["10939881000119104"]', (SYNTHEA_ODD_CODE,)),
        ("Do you have a cough?", None),
        ("Before my final answer: do you smoke?", None),
        ("", None),
    ],
)
def test_parse_final_answer(reply, expected):
    assert parse_final_answer(reply) == expected


def test_find_final_answer_keeps_the_raw_list_with_bracketed_names():
    reply = '<Final Answer>: ["44054006 - Diabetes [type 2]", "38341003"] thanks'
    assert find_final_answer(reply) == '["44054006 - Diabetes [type 2]", "38341003"]'


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
