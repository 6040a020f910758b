from datetime import date

import duckdb
import pyarrow.parquet as pq
import pytest

from tasks.data.lake import partition_dir, raw_partitions, source_key
from tasks.data.reddit import ingest
from tasks.data.reddit.blocks import run_block_job
from tasks.data.reddit.contracts import RAW_COMMENTS, RAW_REJECTS, RAW_SUBMISSIONS
from tasks.data.reddit.ingest import (
    ingest_dump,
    kinds_without_records,
    no_records_message,
    receipt_matches,
    settings_key,
)
from tasks.data.reddit.reader import DumpError, TruncatedDumpError
from tasks.data.reddit.records import IngestFilter
from tests.tasks.data.reddit.test_reader import write_zstd

KEEP = IngestFilter("AskDocs", date(2015, 1, 1), date(2023, 7, 1))


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
    table = pq.read_table(partition_dir(tmp_path / "lake", RAW_COMMENTS, receipt["source_key"]))
    assert table.schema == RAW_COMMENTS.schema
    assert table.to_pylist() == [{
        "id": "c1", "subreddit": "AskDocs", "link_id": "t3_p1", "parent_id": "t3_p1", "author": "doc",
        "body": "Rest &amp; fluids", "created_utc": 1451606400, "distinguished": None, "stickied": None,
        "is_submitter": False, "banned_by": None, "removed_by_category": None, "author_flair_text": None,
        "author_flair_richtext_text": "Physician", "score": 7, "edited_utc": 1451606500,
        "retrieved_utc": 1460000000, "source_file": "AskDocs_comments.zst", "source_line": 1,
    }]  # fmt: skip
    rejects = pq.read_table(partition_dir(tmp_path / "lake", RAW_REJECTS, receipt["source_key"]))
    assert rejects.schema == RAW_REJECTS.schema
    assert rejects.select(["source_file", "source_line", "reason"]).to_pylist() == [
        {"source_file": "AskDocs_comments.zst", "source_line": 2, "reason": "missing_id"}
    ]
    assert receipt["summary"]["kept"] == 1
    assert receipt["summary"]["rejected"] == {"missing_id": 1}
    # The score "7" is read whole: no value lost a part.
    assert receipt["summary"]["repaired"] == {}
    assert receipt_matches(receipt, dump, settings_key("comments", KEEP, False))
    assert not receipt_matches(receipt, dump, settings_key("comments", KEEP, True))


def test_a_receipt_from_before_repaired_values_were_counted_reads_the_dump_again(tmp_path):
    dump = _dump(
        tmp_path, "AskDocs_submissions.zst", [b'{"id":"p1","subreddit":"AskDocs","created_utc":1451606400}']
    )
    receipt = ingest_dump(dump, "submissions", tmp_path / "lake", KEEP)
    older = {**receipt, "summary": {k: v for k, v in receipt["summary"].items() if k != "repaired"}}
    assert not receipt_matches(older, dump, settings_key("submissions", KEEP, False))


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
    assert not partition_dir(lake, RAW_SUBMISSIONS, source_key(cut)).exists()
    receipt = ingest_dump(cut, "submissions", lake, KEEP, keep_truncated=True)
    kept = pq.read_table(partition_dir(lake, RAW_SUBMISSIONS, receipt["source_key"]))
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
    assert pq.read_table(partition_dir(tmp_path / "pooled", RAW_COMMENTS, pooled["source_key"])) == (
        pq.read_table(partition_dir(tmp_path / "inline", RAW_COMMENTS, inline["source_key"]))
    )
    assert pooled["summary"] | {"seconds": 0} == inline["summary"] | {"seconds": 0}
    assert pooled["summary"]["rejected"] == {"invalid_json": 1}


def test_same_named_dumps_in_two_folders_both_reach_the_raw_layer(tmp_path):
    lake = tmp_path / "lake"
    receipts = []
    for year in ("2019", "2020"):
        (tmp_path / year).mkdir()
        line = b'{"id":"c%s","subreddit":"AskDocs","created_utc":1451606400}' % year.encode()
        receipts.append(
            ingest_dump(_dump(tmp_path / year, "AskDocs_comments.zst", [line]), "comments", lake, KEEP)
        )
    files = raw_partitions(str(lake), receipts)["raw_reddit__comments"]
    rows = duckdb.sql(f"select id, source_file from read_parquet({files}) order by id").fetchall()
    assert rows == [("c2019", "AskDocs_comments.zst"), ("c2020", "AskDocs_comments.zst")]


def test_out_of_range_numbers_are_quarantined_with_file_and_line(tmp_path):
    dump = _dump(tmp_path, "AskDocs_comments.zst", [
        b'{"id":"c1","subreddit":"AskDocs","created_utc":"1e30"}',
        b'{"id":"c2","subreddit":"AskDocs","created_utc":1451606400,"score":99999999999999999999}',
        b'{"id":"c3","subreddit":"AskDocs","created_utc":1451606400,"score":3}',
    ])  # fmt: skip
    receipt = ingest_dump(dump, "comments", tmp_path / "lake", KEEP)
    rejects = pq.read_table(partition_dir(tmp_path / "lake", RAW_REJECTS, receipt["source_key"]))
    assert rejects.select(["source_file", "source_line", "reason"]).to_pylist() == [
        {"source_file": "AskDocs_comments.zst", "source_line": 1, "reason": "bad_created_utc"},
        {"source_file": "AskDocs_comments.zst", "source_line": 2, "reason": "number_out_of_range"},
    ]
    kept = pq.read_table(partition_dir(tmp_path / "lake", RAW_COMMENTS, receipt["source_key"]))
    assert kept.select(["id", "score"]).to_pylist() == [{"id": "c3", "score": 3}]


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError])
def test_an_ingest_failing_mid_way_leaves_no_partial_folder(tmp_path, monkeypatch, failure):
    def write_then_fail(job):
        run_block_job(job)
        raise failure

    monkeypatch.setattr(ingest, "run_block_job", write_then_fail)
    line = b'{"id":"c1","subreddit":"AskDocs","created_utc":1451606400}'
    lake = tmp_path / "lake"
    with pytest.raises(failure):
        ingest_dump(_dump(tmp_path, "AskDocs_comments.zst", [line]), "comments", lake, KEEP)
    assert sorted(p.relative_to(lake).as_posix() for p in lake.rglob("*")) == [
        "raw", "raw/raw_reddit__comments", "raw/raw_reddit__rejects"
    ]  # fmt: skip


def test_a_bom_and_a_first_line_that_is_not_an_object_are_handled_like_any_line(tmp_path):
    record = b'{"id":"c%d","subreddit":"AskDocs","created_utc":1451606400}'
    with_bom = tmp_path / "bom.ndjson"
    with_bom.write_bytes(b"\xef\xbb\xbf" + record % 1 + b"\n" + record % 2 + b"\n")
    assert ingest_dump(with_bom, "comments", tmp_path / "lake", KEEP)["summary"]["kept"] == 2
    array_first = tmp_path / "array.ndjson"
    array_first.write_bytes(b"[1, 2]\n" + record % 1 + b"\n")
    summary = ingest_dump(array_first, "comments", tmp_path / "lake", KEEP)["summary"]
    assert (summary["kept"], summary["rejected"]) == (1, {"not_an_object": 1})


def test_a_dump_without_records_is_refused(tmp_path):
    blank = _dump(tmp_path, "blank.zst", [b"", b""])
    with pytest.raises(DumpError, match=r"^\S*blank\.zst: no records in this dump \(blank lines only\)$"):
        ingest_dump(blank, "comments", tmp_path / "lake", KEEP)
    paper = tmp_path / "paper.pdf"
    paper.write_bytes(b"%PDF-1.7\nbinary\n")
    message = r"^\S*paper\.pdf: none of its 2 lines is a usable record \(invalid_json: 2\); is it a Pushshift"
    with pytest.raises(DumpError, match=message):
        ingest_dump(paper, "comments", tmp_path / "lake", KEEP)
    assert not list((tmp_path / "lake").rglob("*.parquet"))


def test_records_found_per_kind_or_a_clear_refusal():
    receipts = [
        {"source_file": "RS_1.zst", "settings": {"kind": "submissions"}, "summary": {"kept": 3}},
        {"source_file": "RC_1.zst", "settings": {"kind": "comments"}, "summary": {"kept": 0}},
        {"source_file": "RC_2.zst", "settings": {"kind": "comments"}, "summary": {"kept": 0}},
    ]
    assert kinds_without_records(receipts) == ["comments"]
    assert kinds_without_records(receipts[:1]) == ["comments"]
    assert kinds_without_records([{**receipts[1], "summary": {"kept": 1}}, receipts[0]]) == []
    assert no_records_message(["comments"], KEEP, receipts) == (
        "no comments of r/AskDocs in RC_1.zst, RC_2.zst"
    )
    assert no_records_message(["submissions", "comments"], KEEP, receipts[:1]) == (
        "no submissions of r/AskDocs from 2015-01-01 to 2023-07-01 (exclusive) in RS_1.zst; "
        "no comments of r/AskDocs in no dump file"
    )
