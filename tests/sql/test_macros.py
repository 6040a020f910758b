"""The text and id macros of sql/macros, called directly on literal values."""

from typing import Any

import pytest

from tests.sql.rows import pseudonym


def call(duck, expression: str, **values: Any) -> Any:
    return duck.execute(f"select {expression}", values).fetchall()[0][0]


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        # HTML references: the API's &amp; first, then named (seed), decimal and hexadecimal ones
        ("Tom &amp; Jerry &lt;3 &gt; quote", "Tom & Jerry <3 > quote"),
        ("&amp;#x200B;\n\n&amp;#x200B;\n\nHello there", "Hello there"),
        ("caf&eacute; &#8217;s &#x2019;s &nbsp;end", "café ’s ’s end"),
        ("bad &#xD800; &#0; and &unknownname; stay", "bad \ufffd \ufffd and &unknownname; stay"),
        # links: markdown keeps its text, URLs go, closing punctuation stays
        ("see [the guide](https://nhs.uk/x_(y)) now", "see the guide now"),
        ("see https://x.org/a?b=c. Or www.mayo.edu, or HTTP://CAPS.COM", "see . Or , or"),
        ("(https://example.com/path) done", "() done"),
        # privacy: e-mails and phone numbers masked; doses, dates and pressures kept
        ("mail jane.doe+md@mail.example.co.uk now", "mail [email] now"),
        ("call (555) 123-4567 or +1 555.123.4567", "call [phone] or [phone]"),
        (
            "BP 120/80 on 2019-04-01, 0.5 mg, id 12345678901",
            "BP 120/80 on 2019-04-01, 0.5 mg, id 12345678901",
        ),
        ("https://x.org/5551234567 gone", "gone"),
        # whitespace: blanks collapse, at most two newlines, no blanks around newlines or at the ends
        ("  a \t b\u00a0c\u200bd \r\n\r\n\r\n\n e  ", "a b cd\n\ne"),
        ("one  \ntwo\n \nthree", "one\ntwo\n\nthree"),
        ("", ""),
    ],
)
def test_clean_text(duck, raw, cleaned):
    assert call(duck, "clean_text($raw)", raw=raw) == cleaned


def test_clean_text_keeps_null(duck):
    assert call(duck, "clean_text(null)") is None


@pytest.mark.parametrize(
    "phone",
    [
        # North America, with and without the country code
        "(555) 123-4567",
        "555-123-4567",
        "555.123.4567",
        "555 123 4567",
        "5551234567",
        "+1 555 123 4567",
        "+1 (555) 123-4567",
        "1-800-555-0199",
        "1 800 555 0199",
        "555-0143",
        "867-5309",
        # international, written with `+` and the country code
        "+44 20 7946 0958",
        "+44 (0)20 7946 0958",
        "+44 7700 900123",
        "+33 1 23 45 67 89",
        "+33 6 12 34 56 78",
        "+49 30 12345678",
        "+49 (30) 1234-5678",
        "+61 2 9876 5432",
        "+61 412 345 678",
        "+91 98765 43210",
        "+353 1 234 5678",
        "+81 3-1234-5678",
        "+34 612 34 56 78",
        "+27 21 123 4567",
        "+447700900123",
        # international with the `00` or North America's `011` exit code in place of `+`
        "0044 20 7946 0958",
        "00 44 20 7946 0958",
        "011 44 20 7946 0958",
        "011-44-20-7946-0958",
        # Indian mobiles written 5-5 without the country code
        "98765 43210",
        "98765-43210",
        # a local number written with a space
        "555 0143",
        # full-width digits and signs
        "５５５－０１４３",
        "(５５５) １２３-４５６７",
        "＋４４ ２０ ７９４６ ０９５８",
        # national formats with the trunk prefix 0
        "07700 900123",
        "07700900123",
        "020 7946 0958",
        "(020) 7946 0958",
        "0121 496 0000",
        "01 23 45 67 89",
        "01.23.45.67.89",
        "06-12-34-56-78",
        "030 12345678",
        "030 1234 5678",
        "0412 345 678",
        "(02) 9876 5432",
    ],
)
def test_mask_phone_numbers_masks_phone_numbers(duck, phone):
    assert call(duck, "mask_phone_numbers($text)", text=f"call me on {phone}, thanks") == (
        "call me on [phone], thanks"
    )


@pytest.mark.parametrize(
    "text",
    [
        "500 mg",
        "1,200 mg",
        "0.5 mg/kg",
        "0.5 0.25 0.125 mg",
        "2023-04-05",
        "on 05.04.2023",
        "05-04-2023",
        "12/03/2021",
        "37.5 C",
        "98.6 F",
        "BP 120/80",
        "BP 120/80 mmHg, pulse 72",
        "HbA1c 6.5%",
        "age 34",
        "34 M, 180 cm, 75 kg",
        "3-4 times a day",
        "10-15 minutes",
        "2019-2021",
        "500-1000 mg",
        "1200-1500 calories",
        "150-450 x10^9/L",
        "200-2000 IU",
        "WBC 4.5-11.0",
        "from 08:30 to 17:00",
        "0800-1700",
        "TSH 0.45, T4 12.3",
        "id 12345678901",
        "ages 25 30 35 40",
        "2020 2021 2022",
        "+2 mm",
        "HER2+ 3",
        "2+2=4",
        "$1,200.50",
        "100,000 steps",
        "2 x 500 mg, 3 x 250 mg",
        "60000-80000 a year",
        "10000 20000 steps",
        "walked 7000 8000 steps",
        "1200 1500 calories",
        "Tylenol 325 1000 mg",
        "from 325 2019 to 410 2021",
        "from 1998 2003",
        "in 2019 5000 people",
        "HR 110 bpm, 1 in 1000",
        "for 3 weeks, 2 years ago, aged 67",
        "from 00 12 minutes",
        "BP 150/95, temp 38.5",
    ],
)
def test_mask_phone_numbers_keeps_ordinary_numbers(duck, text):
    assert call(duck, "mask_phone_numbers($text)", text=text) == text


def test_mask_phone_numbers_folds_full_width_digits_it_keeps(duck):
    assert call(duck, "mask_phone_numbers($text)", text="５００ mg twice") == "500 mg twice"


@pytest.mark.parametrize(
    ("text", "words"),
    [("", 0), ("one", 1), ("one two\nthree\n\nfour", 4), (None, None)],
)
def test_count_words_of_cleaned_text(duck, text, words):
    assert call(duck, "count_words($text)", text=text) == words


def test_base36_ids_compare_as_integers(duck):
    assert call(duck, "base36_to_bigint('zz')") == 36 * 36 - 1
    assert call(duck, "base36_to_bigint('100')") == 36**2
    assert call(duck, "base36_to_bigint('K8ZQ0XZ')") == int("k8zq0xz", 36)


@pytest.mark.parametrize(
    ("author", "expected"),
    [("Bob", pseudonym("Bob")), ("bob", pseudonym("bob")), ("[deleted]", None), ("  ", None), (None, None)],
)
def test_pseudonymise_author(duck, author, expected):
    assert call(duck, "pseudonymise_author($author, $salt)", author=author, salt="threadmed-qa") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("thanks u/Dr_Jones!", f"thanks {pseudonym('Dr_Jones')}!"),
        ("/u/bob and u/bob agree", f"{pseudonym('bob')} and {pseudonym('bob')} agree"),
        ("ask U/bob-2 or u/bob_3.", f"ask {pseudonym('bob-2')} or {pseudonym('bob_3')}."),
        # the new editor escapes underscores in markdown: the handle is the name without the escapes
        ("ping u/jane\\_doe\\_md please", f"ping {pseudonym('jane_doe_md')} please"),
        (
            "[u/bob](https://www.reddit.com/u/bob)",
            f"[{pseudonym('bob')}](https://www.reddit.com/{pseudonym('bob')})",
        ),
        ("reddit.com/u/bob", f"reddit.com/{pseudonym('bob')}"),
        # the long form of a user link, an @ handle, and names longer than Reddit's 20 characters
        ("see /user/jane_doe now", f"see {pseudonym('jane_doe')} now"),
        ("(/User/Bob)", f"({pseudonym('Bob')})"),
        ("thanks @Dr_Jones, and @bob-2.", f"thanks {pseudonym('Dr_Jones')}, and {pseudonym('bob-2')}."),
        ("u/" + "x" * 21, pseudonym("x" * 21)),
        ("@" + "y" * 30 + " said", f"{pseudonym('y' * 30)} said"),
        # a handle is written as typed: Reddit's spelling of the account is not known here
        ("u/Bob", pseudonym("Bob")),
        # not handles: markers, too short names, units, abbreviations, e-mail addresses and times
        ("by u/[deleted] and /u/[removed]", "by u/[deleted] and /u/[removed]"),
        ("U/S showed a cyst; ALT 40 U/L", "U/S showed a cyst; ALT 40 U/L"),
        ("insulin 10 u/day, 0.5 u/kg", "insulin 10 u/day, 0.5 u/kg"),
        ("IU/day, menu/bob", "IU/day, menu/bob"),
        (
            "mail jane.doe@mail.example.com, meet @10am, @ab",
            "mail jane.doe@mail.example.com, meet @10am, @ab",
        ),
        ("the user/patient view", "the user/patient view"),
        ("no mention here", "no mention here"),
        ("", ""),
        (None, None),
    ],
)
def test_pseudonymise_mentions(duck, text, expected):
    assert call(duck, "pseudonymise_mentions($text, $salt)", text=text, salt="threadmed-qa") == expected


@pytest.mark.parametrize(
    ("text", "is_marker"),
    [
        ("[deleted]", True),
        (" [removed] ", True),
        ("\\[removed\\]", True),
        ("[removed] by mods", False),
        (None, False),
        # a line break after the marker, and the copyright removal's overwrite, were published as text
        ("[removed]\n", True),
        ("\r\n[deleted]\t", True),
        ("[ Removed by reddit in response to a copyright notice. ]", True),
        ("Removed by reddit in response to a copyright notice", False),
    ],
)
def test_is_removal_sentinel(duck, text, is_marker):
    assert call(duck, "is_removal_sentinel($text)", text=text) is is_marker


def test_post_question_text(duck):
    assert call(duck, "post_question_text('Title', 'Body')") == "Title\n\nBody"
    assert call(duck, "post_question_text('Title', '')") == "Title"
    assert call(duck, "post_question_text('Title', null)") is None
