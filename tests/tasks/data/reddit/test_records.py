from collections import Counter
from datetime import date
from decimal import Decimal

from hypothesis import example, given
from hypothesis import strategies as st

from tasks.data.reddit.contracts import RAW_COMMENTS
from tasks.data.reddit.reader import LineBlock
from tasks.data.reddit.records import (
    LOWERS_TO_ASCII,
    IngestFilter,
    candidate_lines,
    comment_row,
    edited_epoch,
    epoch_seconds,
    parse_line,
    parse_lines,
    richtext_flair,
    rows_to_table,
)

KEEP = IngestFilter("AskDocs", date(2015, 1, 1), date(2023, 7, 1))
JAN_2016 = 1451606400


def block(lines: list[bytes], first_line: int = 1) -> LineBlock:
    return LineBlock(first_line, b"".join(line + b"\n" for line in lines), 0)


def test_epoch_seconds_accepts_every_drifted_type():
    assert [epoch_seconds(v) for v in (1424100000, "1424100000", 1518653586.0, "1.5e9", "x", None, True)] == [
        1424100000, 1424100000, 1518653586, 1500000000, None, None, None,
    ]  # fmt: skip
    assert [edited_epoch(v) for v in (False, 1473703199.0, 1473703199, None)] == [
        None, 1473703199, 1473703199, None,
    ]  # fmt: skip


def test_richtext_flair_keeps_text_pieces_only():
    pieces = [{"e": "emoji", "a": ":md:", "u": "https://x"}, {"e": "text", "t": "Physician | Moderator"}]
    assert richtext_flair(pieces) == "Physician | Moderator"
    assert richtext_flair([]) is None
    assert richtext_flair(None) is None
    # A text piece without a text string leaves the flair unread (it crashed the ingest).
    assert richtext_flair([{"e": "text", "t": None}, {"e": "text", "t": "Physician"}]) is None


def test_a_comment_dated_in_milliseconds_or_past_2100_is_quarantined_not_dated_in_another_millennium():
    lines = [
        b'{"id":"c1","subreddit":"AskDocs","created_utc":1580000000000}',
        b'{"id":"c2","subreddit":"AskDocs","created_utc":100000000000000}',
        b'{"id":"c3","subreddit":"AskDocs","created_utc":-1}',
        b'{"id":"c4","subreddit":"AskDocs","created_utc":4102444799}',
    ]
    result = parse_lines(block(lines), "comments", KEEP, "RC_x.zst", prefilter=False)
    assert ([row[0] for row in result.rows], [(r[1], r[2]) for r in result.rejects]) == (
        ["c4"],
        [(1, "bad_created_utc"), (2, "bad_created_utc"), (3, "bad_created_utc")],
    )


def test_parse_line_quarantine_reasons():
    assert parse_line(b'{"id":"abc","x":1}') == ({"id": "abc", "x": 1}, None)
    assert parse_line(b'{"id":"abc",') == (None, "invalid_json")
    assert parse_line(b'{"id":"ab\xff"}') == (None, "invalid_utf8")
    assert parse_line(b'{"body":"no id"}') == (None, "missing_id")
    assert parse_line(b"[1, 2]") == (None, "not_an_object")
    record, reason = parse_line(b'{"id":"s1","body":"broken \\ud83d emoji"}')
    assert reason is None
    assert record["body"] == "broken \ud83d emoji"


def test_process_lines_counts_every_line():
    lines = [
        b'{"id":"p1","subreddit":"AskDocs","created_utc":"1451606400","title":"t"}',
        b'{"id":"p2","subreddit":"askdocs","created_utc":1451606400}',
        b'{"id":"p3","subreddit":"AskReddit","created_utc":1451606400}',
        b'{"id":"p4","subreddit":"AskDocs","created_utc":1388534400}',
        b'{"id":"p5","created_utc":1451606400}',
        b"",
        b'{"id":"p6","subreddit":"AskDocs","created_utc":"soon"}',
        b"not json at all",
    ]
    result = parse_lines(block(lines, 10), "submissions", KEEP, "RS_x.zst", prefilter=False)
    assert [row[0] for row in result.rows] == ["p1", "p2"]
    assert [(row[5], row[-1]) for row in result.rows] == [(JAN_2016, 10), (JAN_2016, 11)]
    assert [(r[1], r[2]) for r in result.rejects] == [(16, "bad_created_utc"), (17, "invalid_json")]
    assert (result.lines, result.kept) == (8, 2)
    assert result.dropped == Counter(other_subreddit=1, outside_window=1, missing_subreddit=1, empty_line=1)
    assert result.rejected == Counter(bad_created_utc=1, invalid_json=1)


def test_monthly_prefilter_skips_lines_without_the_subreddit_s_name_unread_and_says_so():
    """A skipped line was never parsed: a corrupt or empty one among them is not called other_subreddit."""
    lines = [
        b'{"id":"c1","subreddit":"AskReddit", broken',
        b'{"id":"c2","subreddit":"ASKDOCS","created_utc":5}',
        b"",
        b'{"id":"c3","subreddit":"pics","created_utc":5}',
    ]
    result = parse_lines(block(lines), "comments", KEEP, "RC_2016-01.zst", prefilter=True)
    # Comments are kept whatever their own date: they follow their post.
    assert [row[0] for row in result.rows] == ["c2"]
    assert result.dropped == Counter(no_subreddit_name=3)
    assert result.rejected == Counter()


def test_the_prefilter_never_drops_a_subreddit_spelled_another_way():
    """JSON may escape any letter and str.lower() folds the Kelvin sign to "k": such a record is kept."""
    lines = [
        b'{"id":"c1","subreddit":"AskReddit","created_utc":5}',
        b'{"id":"c2","subreddit":"\\u0041sk\\u0044ocs","created_utc":5}',
        b'{"id":"c3","subreddit":"As\xe2\x84\xaaDocs","created_utc":5}',
        b'{"id":"c4","subreddit":"As\\u212ADocs","created_utc":5}',
        b'{"id":"c5","subreddit":"AskReddit","body":"caf\\u00e9 \\u2019","created_utc":5}',
    ]
    result = parse_lines(block(lines), "comments", KEEP, "RC_2016-01.zst", prefilter=True)
    assert [row[0] for row in result.rows] == ["c2", "c3", "c4"]
    # c5's escapes are of no ASCII letter: neither it nor c1 is parsed.
    assert list(result.dropped.items()) == [("no_subreddit_name", 2)]


def test_candidate_lines_are_the_lines_that_may_hold_the_subreddit_with_their_index():
    data = b'{"s":"x"}\n{"s":"ASKDOCS","b":"askdocs"}\n\n{"s":"y"}\n{"s":"\\u0061skdocs"}\n{"s":"AskDocs"}'
    assert candidate_lines(data, "askdocs") == [
        (1, b'{"s":"ASKDOCS","b":"askdocs"}'),
        (4, b'{"s":"\\u0061skdocs"}'),
        (5, b'{"s":"AskDocs"}'),
    ]
    assert candidate_lines(b"", "askdocs") == []


def test_the_prefilter_counts_lines_in_the_order_the_line_by_line_filter_met_them():
    """Receipts list drop reasons in the order first met, so the counters keep that order."""
    lines = [
        b'{"id":"p1","subreddit":"AskDocs","created_utc":1388534400}',
        b'{"id":"p2","subreddit":"AskReddit","created_utc":1451606400}',
        b"",
        b'{"id":"p3","subreddit":"AskDocs","created_utc":1451606400}',
        b'{"id":"p4","subreddit":"pics","created_utc":1451606400}',
    ]
    result = parse_lines(block(lines), "submissions", KEEP, "RS_2016-01.zst", prefilter=True)
    assert list(result.dropped.items()) == [("outside_window", 1), ("no_subreddit_name", 3)]
    assert [(row[0], row[-1]) for row in result.rows] == [("p3", 4)]
    assert result.lines == 5


def test_lowers_to_ascii_lists_every_character_that_lowercases_into_a_reddit_name():
    name_characters = set("abcdefghijklmnopqrstuvwxyz0123456789_")
    folding = [chr(c) for c in range(128, 0x110000) if name_characters & set(chr(c).lower())]
    assert "".join(folding) == LOWERS_TO_ASCII


def test_numbers_beyond_int64_are_quarantined_and_the_other_lines_kept():
    lines = [
        b'{"id":"c1","subreddit":"AskDocs","created_utc":"1e30"}',
        b'{"id":"c2","subreddit":"AskDocs","created_utc":1451606400,"score":99999999999999999999}',
        b'{"id":"c3","subreddit":"AskDocs","created_utc":1451606400,"edited":1e300}',
        b'{"id":"c4","subreddit":"AskDocs","created_utc":1451606400,"score":"-1e19"}',
        b'{"id":"c5","subreddit":"AskDocs","created_utc":1451606400,"score":9223372036854775807}',
    ]
    result = parse_lines(block(lines), "comments", KEEP, "RC_x.zst", prefilter=False)
    assert [(r[0], r[1], r[2]) for r in result.rejects] == [
        ("RC_x.zst", 1, "bad_created_utc"),
        ("RC_x.zst", 2, "number_out_of_range"),
        ("RC_x.zst", 3, "number_out_of_range"),
        ("RC_x.zst", 4, "number_out_of_range"),
    ]
    assert result.rejected == Counter(bad_created_utc=1, number_out_of_range=3)
    table = rows_to_table(result.rows, RAW_COMMENTS)
    assert table.select(["id", "score"]).to_pylist() == [{"id": "c5", "score": 9223372036854775807}]


def test_a_submission_dated_beyond_int64_is_quarantined_not_dropped_as_outside_the_window():
    lines = [b'{"id":"p1","subreddit":"AskDocs","created_utc":1e30}']
    result = parse_lines(block(lines), "submissions", KEEP, "RS_x.zst", prefilter=False)
    assert (result.rejected, result.dropped) == (Counter(bad_created_utc=1), Counter())


def test_values_that_lose_part_of_their_value_in_their_column_are_counted_by_column():
    """A lone surrogate replaced, a score that is no number nulled, a fraction cut, an object where text
    belongs nulled, a flag that is no boolean nulled; a number written as text is read whole, not counted."""
    lines = [
        b'{"id":"c1","subreddit":"AskDocs","created_utc":5,"body":"pain \\ud83d here","score":"7"}',
        b'{"id":"c2","subreddit":"AskDocs","created_utc":5,"score":"abc","author_flair_text":123}',
        b'{"id":"c3","subreddit":"AskDocs","created_utc":5,"score":7.5,"author":{"name":"x"}}',
        b'{"id":"c4","subreddit":"AskDocs","created_utc":5,"stickied":"yes","body":"fine"}',
    ]
    result = parse_lines(block(lines), "comments", KEEP, "RC_x.zst", prefilter=False)
    repaired: Counter = Counter()
    table = rows_to_table(result.rows, RAW_COMMENTS, repaired)
    assert repaired == Counter(body=1, score=2, author=1, stickied=1)
    assert table.select(["id", "body", "score", "author", "author_flair_text", "stickied"]).to_pylist() == [
        {"id": "c1", "body": "pain \ufffd here", "score": 7, "author": None, "author_flair_text": None,
         "stickied": None},
        {"id": "c2", "body": None, "score": None, "author": None, "author_flair_text": "123",
         "stickied": None},
        {"id": "c3", "body": None, "score": 7, "author": None, "author_flair_text": None, "stickied": None},
        {"id": "c4", "body": "fine", "score": None, "author": None, "author_flair_text": None,
         "stickied": None},
    ]  # fmt: skip


# Text with lone surrogates too (a JSON escape can write one); hypothesis leaves them out by default.
ANY_TEXT = st.text(st.characters(exclude_categories=()))
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)
NUMBER_TEXTS = st.integers(-(10**12), 10**12).map(str) | st.floats(-1e12, 1e12).map(repr)


@given(body=JSON_VALUES, score=JSON_VALUES | NUMBER_TEXTS)
@example(body=None, score=9.223372036854776e18)  # past int64: it raised OverflowError
@example(body=None, score=3.602879701896397e16)  # stored as 2**55, ...968, not the ...970 written
def test_a_value_not_counted_as_repaired_is_stored_whole(body, score):
    """Total (any JSON value in a text and an integer column), and fail closed: whatever is not counted
    reads back as it was written (text as itself, a number as its exact value)."""
    row = comment_row({"id": "c1", "subreddit": "AskDocs", "body": body, "score": score}, 5, 1, "x.zst")
    repaired: Counter = Counter()
    stored = rows_to_table([row], RAW_COMMENTS, repaired).select(["body", "score"]).to_pylist()[0]
    if body is not None and not repaired["body"]:
        assert stored["body"] == (body if isinstance(body, str) else str(body))
    if score is not None and not repaired["score"]:
        assert Decimal(str(score)) == stored["score"]
    assert set(repaired) <= {"body", "score"} and all(count == 1 for count in repaired.values())
