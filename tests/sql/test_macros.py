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
    ("text", "is_marker"),
    [
        ("[deleted]", True),
        (" [removed] ", True),
        ("\\[removed\\]", True),
        ("[removed] by mods", False),
        (None, False),
    ],
)
def test_is_removal_sentinel(duck, text, is_marker):
    assert call(duck, "is_removal_sentinel($text)", text=text) is is_marker


def test_post_question_text(duck):
    assert call(duck, "post_question_text('Title', 'Body')") == "Title\n\nBody"
    assert call(duck, "post_question_text('Title', '')") == "Title"
    assert call(duck, "post_question_text('Title', null)") is None
