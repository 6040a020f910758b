from collections import Counter
from datetime import date

import pyarrow.parquet as pq
import pytest

from tasks import ingest
from tasks.contracts import RAW_COMMENTS, RAW_REJECTS, RAW_SUBMISSIONS
from tasks.ingest import ingest_dump, receipt_matches, settings_key
from tasks.reader import TruncatedDumpError
from tasks.records import (
    IngestFilter,
    edited_epoch,
    epoch_seconds,
    parse_line,
    parse_lines,
    richtext_flair,
)
from tests.tasks.test_reader import write_zstd

KEEP = IngestFilter("AskDocs", date(2015, 1, 1), date(2023, 7, 1))
JAN_2016 = 1451606400


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
    result = parse_lines(lines, 10, "submissions", KEEP, "RS_x.zst", prefilter=False)
    assert [row[0] for row in result.rows] == ["p1", "p2"]
    assert [(row[5], row[-1]) for row in result.rows] == [(JAN_2016, 10), (JAN_2016, 11)]
    assert [(r[1], r[2]) for r in result.rejects] == [(16, "bad_created_utc"), (17, "invalid_json")]
    assert (result.lines, result.kept) == (8, 2)
    assert result.dropped == Counter(other_subreddit=1, outside_window=1, missing_subreddit=1, empty_line=1)
    assert result.rejected == Counter(bad_created_utc=1, invalid_json=1)


def test_monthly_prefilter_skips_other_subreddits_without_parsing():
    lines = [
        b'{"id":"c1","subreddit":"AskReddit", broken',
        b'{"id":"c2","subreddit":"ASKDOCS","created_utc":5}',
    ]
    result = parse_lines(lines, 1, "comments", KEEP, "RC_2016-01.zst", prefilter=True)
    # Comments are kept whatever their own date: they follow their post.
    assert [row[0] for row in result.rows] == ["c2"]
    assert result.dropped == Counter(other_subreddit=1)
    assert result.rejected == Counter()


def _dump(tmp_path, name, lines):
    return write_zstd(tmp_path / name, b"\n".join(lines) + b"\n")


def test_ingest_dump_writes_contract_parquet_rejects_and_receipt(tmp_path):
    dump = _dump(tmp_path, "AskDocs_comments.zst", [
        b'{"id":"c1","subreddit":"AskDocs","created_utc":1451606400,"link_id":"t3_p1","parent_id":"t3_p1",'
        b'"author":"doc","body":"Rest &amp; fluids","score":"7","edited":1451606500.0,"is_submitter":false,'
        b'"author_flair_richtext":[{"e":"text","t":"Physician"}],"author_flair_text":null,"retrieved_on":1460000000}',
        b'{"subreddit":"AskDocs","body":"no id"}',
    ])  # fmt: skip
    receipt = ingest_dump(dump, "comments", tmp_path / "lake", KEEP)
    table = pq.read_table(tmp_path / "lake/raw/raw_reddit__comments/source=AskDocs_comments.zst")
    assert table.schema == RAW_COMMENTS.schema
    assert table.to_pylist() == [{
        "id": "c1", "subreddit": "AskDocs", "link_id": "t3_p1", "parent_id": "t3_p1", "author": "doc",
        "body": "Rest &amp; fluids", "created_utc": 1451606400, "distinguished": None, "stickied": None,
        "is_submitter": False, "banned_by": None, "removed_by_category": None, "author_flair_text": None,
        "author_flair_richtext_text": "Physician", "score": 7, "edited_utc": 1451606500,
        "retrieved_utc": 1460000000, "source_file": "AskDocs_comments.zst", "source_line": 1,
    }]  # fmt: skip
    rejects = pq.read_table(
        tmp_path / "lake/raw/raw_reddit__rejects/source=AskDocs_comments.zst/part-0.parquet"
    )
    assert rejects.schema == RAW_REJECTS.schema
    assert rejects.select(["source_file", "source_line", "reason"]).to_pylist() == [
        {"source_file": "AskDocs_comments.zst", "source_line": 2, "reason": "missing_id"}
    ]
    assert receipt["summary"]["kept"] == 1
    assert receipt["summary"]["rejected"] == {"missing_id": 1}
    assert receipt_matches(receipt, dump, settings_key("comments", KEEP, False))
    assert not receipt_matches(receipt, dump, settings_key("comments", KEEP, True))


def test_receipt_survives_touch_but_not_a_content_change(tmp_path):
    dump = _dump(
        tmp_path, "AskDocs_submissions.zst", [b'{"id":"p1","subreddit":"AskDocs","created_utc":1451606400}']
    )
    receipt = ingest_dump(dump, "submissions", tmp_path / "lake", KEEP)
    key = settings_key("submissions", KEEP, False)
    dump.touch()
    assert receipt_matches(receipt, dump, key)
    _dump(
        tmp_path, "AskDocs_submissions.zst", [b'{"id":"p2","subreddit":"AskDocs","created_utc":1451606400}']
    )
    assert not receipt_matches(receipt, dump, key)


def test_truncated_dump_fails_unless_asked_to_keep_what_was_read(tmp_path):
    template = b'{"id":"p%d","subreddit":"AskDocs","created_utc":1451606400,"title":"%s"}'
    lines = [template % (i, b"x" * (i % 89)) for i in range(30000)]
    full = _dump(tmp_path, "full.zst", lines)
    cut = tmp_path / "RS_2016-01.zst"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    lake = tmp_path / "lake"
    with pytest.raises(TruncatedDumpError, match=r"RS_2016-01\.zst"):
        ingest_dump(cut, "submissions", lake, KEEP)
    assert not (lake / "raw/raw_reddit__submissions/source=RS_2016-01.zst").exists()
    receipt = ingest_dump(cut, "submissions", lake, KEEP, keep_truncated=True)
    kept = pq.read_table(lake / "raw/raw_reddit__submissions/source=RS_2016-01.zst")
    assert receipt["summary"]["truncated"] is True
    assert 0 < kept.num_rows == receipt["summary"]["kept"] < 30000
    assert kept.schema == RAW_SUBMISSIONS.schema


def test_worker_processes_write_the_same_rows_as_inline_parsing(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "POOL_MIN_BYTES", 0)  # the test dump is small; use the pool anyway
    template = b'{"id":"c%d","subreddit":"AskDocs","created_utc":1451606400,"link_id":"t3_p1","body":"%s"}'
    lines = [template % (i, b"word " * (i % 50)) for i in range(20000)] + [b"{broken"]
    dump = _dump(tmp_path, "AskDocs_comments.zst", lines)
    inline = ingest_dump(dump, "comments", tmp_path / "inline", KEEP, workers=0)
    pooled = ingest_dump(dump, "comments", tmp_path / "pooled", KEEP, workers=2)
    folder = "raw/raw_reddit__comments/source=AskDocs_comments.zst"
    assert pq.read_table(tmp_path / "pooled" / folder) == pq.read_table(tmp_path / "inline" / folder)
    assert pooled["summary"] | {"seconds": 0} == inline["summary"] | {"seconds": 0}
    assert pooled["summary"]["rejected"] == {"invalid_json": 1}
