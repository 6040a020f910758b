from collections import Counter
from datetime import date

import numpy as np
import pyarrow.parquet as pq
import pytest

from tasks.data.contracts import Contract
from tasks.data.reddit.blocks import BlockJob, line_bounds, lines_for_python, parse_block, run_block_job
from tasks.data.reddit.contracts import RAW_COMMENTS, RAW_SUBMISSIONS
from tasks.data.reddit.reader import LineBlock, iter_line_blocks
from tasks.data.reddit.records import IngestFilter, parse_lines, rows_to_table
from tasks.synth.generator import generate_dumps

KEEP = IngestFilter("AskDocs", date(2015, 1, 1), date(2023, 7, 1))
C = b'"subreddit":"AskDocs","created_utc":1451606400'  # a kept comment, but for its other fields

# Every kind of line the per-line path meets, each beside plain ones: the fast path must agree on all.
ODD_COMMENTS = [
    b'{"id":"c1",' + C + b',"author":"a","body":"plain","score":3,"edited":false,"retrieved_on":1451700000}',
    b"",
    b"   ",
    b'{"id":"c2",' + C + b',"body":"cut short',
    b'{"id":"c3",' + C + b',"body":"not \xff\xfe UTF-8"}',
    b'{"body":"no id",' + C + b"}",
    b'{"id":"",' + C + b"}",
    b'{"id":5,' + C + b"}",
    b"[1, 2]",
    b'{"id":"c4",' + C + b',"body":"broken \\ud83d emoji"}',
    b'{"id":"c5",' + C + b',"body":"pair \\ud83d\\ude00 ok"}',
    b'{"id":"c6",' + C + b',"gilded":NaN}',
    b'{"id":"c7",' + C + b',"gilded":nan}',
    b'{"id":"c8",' + C + b',"gilded":-Infinity}',
    b'{"id":"c9",' + C + b',"awards":[1,]}',
    b'{"id":"c10",' + C + b',"retrieved_on":null,"retrieved_utc":1451700000}',
    b'{"id":"c11",' + C + b',"retrieved_utc":1451700000}',
    b'{"id":"c12","subreddit":"\\u0041skDocs","created_utc":1451606400}',
    b'{"id":"c13","subreddit":"As\xe2\x84\xaaDocs","created_utc":1451606400}',
    b'{"id":"c14","subreddit":"AskReddit","created_utc":"soon","author":5}',
    b'{"id":"c15","subreddit":0,"created_utc":1451606400}',
    b'{"id":"c16","subreddit":"","created_utc":1451606400}',
    b'{"id":"c17","created_utc":1451606400}',
    b'{"id":"c18","subreddit":["AskDocs"],"created_utc":1451606400}',
    b'{"id":"c19","subreddit":"askdocs","created_utc":"1451606400"}',
    b'{"id":"c20","subreddit":"ASKDOCS","created_utc":1451606400.9}',
    b'{"id":"c21","subreddit":"AskDocs","created_utc":"1.5e9"}',
    b'{"id":"c22","subreddit":"AskDocs","created_utc":"1e30"}',
    b'{"id":"c23","subreddit":"AskDocs","created_utc":true}',
    b'{"id":"c24","subreddit":"AskDocs","created_utc":null}',
    b'{"id":"c25",' + C + b',"edited":1473703199.0,"score":-2}',
    b'{"id":"c26",' + C + b',"edited":true,"score":2.5}',
    b'{"id":"c27",' + C + b',"edited":"1473703199","score":"7"}',
    b'{"id":"c28",' + C + b',"edited":1e300,"score":99999999999999999999}',
    b'{"id":"c29",' + C + b',"score":true,"stickied":1,"is_submitter":"yes"}',
    b'{"id":"c30",' + C + b',"author":123,"body":true,"distinguished":{"a":1},"banned_by":[1]}',
    b'{"id":"c31",'
    + C
    + b',"author":"123","body":"[deleted]","distinguished":"moderator","banned_by":"[1]"}',
    b'{"id":"c32",' + C + b',"author":"true","body":"{\\"a\\": 1}","author_flair_text":"-5"}',
    b'{"id":"c33",' + C + b',"author":1.5e400,"body":"x"}',
    b'{"id":"c34",' + C + b',"author_flair_richtext":[{"e":"emoji","a":":md:"},{"e":"text","t":"MD"}]}',
    b'{"id":"c35",' + C + b',"author_flair_richtext":[],"author_flair_text":"MD"}',
    b'{"id":"c36",' + C + b',"author_flair_richtext":"MD"}',
    b'{"id":"c37",' + C + b',"author_flair_richtext":[{"e":"text"},5,{"e":"\\u0074ext","t":"a"}]}',
    b'{"id":"c38",'
    + C
    + b',"stickied":true,"is_submitter":false,"banned_by":null,"removed_by_category":"x"}',
    b'{"id":"c39",' + C + b',"retrieved_on":1451700001,"retrieved_utc":1451700002,"edited":-0.5}',
    b'{"id":"c40",' + C + b',"retrieved_on":"1451700001","edited":"1.0"}',
    b'{"id":"c41",' + C + b',"body":"caf\xc3\xa9 \xf0\x9f\x98\x80 \\u00e9 \\" \\\\ \\n ok"}',
    b'{"id":"c42",' + C + b',"body":"commas, infinite nan ideas, [and] {braces}"}',
    b'{"id":"c43",' + C + b' , "body" : "spaced"}',
    b'{"id":"c44",' + C + b',"body":"ok"}\r',
    b'{"id":"c45",' + C + b"}",
    # a flair piece whose text is null; dates in milliseconds, past DuckDB's timestamps, before 1970
    b'{"id":"c46",' + C + b',"author_flair_richtext":[{"e":"text","t":null},{"e":"text","t":"MD"}]}',
    b'{"id":"c47","subreddit":"AskDocs","created_utc":1580000000000}',
    b'{"id":"c48","subreddit":"AskDocs","created_utc":100000000000000}',
    b'{"id":"c49","subreddit":"AskDocs","created_utc":-1}',
    b'{"id":"c50","subreddit":"AskDocs","created_utc":4102444799}',
]


def block(lines: list[bytes], first_line: int = 1) -> LineBlock:
    return LineBlock(first_line, b"".join(line + b"\n" for line in lines), 0)


def per_line(lines: list[bytes], kind: str, first_line: int = 1):
    result = parse_lines(block(lines, first_line), kind, KEEP, "x.zst", prefilter=False)
    return result, rows_to_table(result.rows, RAW_COMMENTS if kind == "comments" else RAW_SUBMISSIONS)


def assert_same(lines: list[bytes], kind: str, first_line: int = 1) -> None:
    expected, expected_table = per_line(lines, kind, first_line)
    result, table = parse_block(block(lines, first_line), kind, KEEP, "x.zst")
    assert table.to_pylist() == expected_table.to_pylist()
    assert table.schema == expected_table.schema
    assert list(result.dropped.items()) == list(expected.dropped.items())
    assert list(result.rejected.items()) == list(expected.rejected.items())
    assert result.rejects == expected.rejects
    assert (result.lines, result.kept) == (expected.lines, expected.kept)


def test_the_fast_path_gives_the_per_line_paths_rows_counts_and_rejects_for_every_odd_line():
    assert_same(ODD_COMMENTS, "comments", first_line=41)


@pytest.mark.parametrize("line", ODD_COMMENTS)
def test_each_odd_line_alone_gets_the_per_line_result(line):
    assert_same([ODD_COMMENTS[0], line, ODD_COMMENTS[-1]], "comments")


def test_submissions_keep_the_window_and_their_own_columns():
    created = {"before": 1388534400, "inside": 1451606400, "end": 1688169600}
    lines = [
        b'{"id":"p%d","subreddit":"AskDocs","created_utc":%d,"title":"t","selftext":"s","is_self":true,'
        b'"num_comments":%d,"url":"u","is_video":false,"banned_at_utc":"1451606401","link_flair_text":null}'
        % (i, epoch, i)
        for i, epoch in enumerate(created.values())
    ] + [b'{"id":"p9","subreddit":"AskDocs","created_utc":1451606400,"num_comments":1.0,"is_gallery":1}']
    assert_same(lines, "submissions")
    result, table = parse_block(block(lines), "submissions", KEEP, "x.zst")
    assert (table["id"].to_pylist(), dict(result.dropped)) == (["p1", "p9"], {"outside_window": 2})


def test_only_odd_lines_leave_the_fast_path_by_their_bytes():
    lines = [
        b'{"id":"c1","body":"plain, nothing odd","a":[],"b":[1, 2],"c":{}}',
        b'{"id":"c2","x":nan}',
        b'{"id":"c3","x":[1, ]}',
        b'{"id":"c4","body":"\\ud83d"}',
        b'{"id":"c5","body":"\\u0041"}',
        b'{"id":"c6","body":"\\u00e9"}',
        b'{"id":"c8","body":"\xff"}',
        b'{"id":"c9"',
        b"",
        b'{"id":"c10","body":"a text, infinitely long"}',  # may be a bare word: left to the per-line path
    ]
    data = b"\n".join(lines)
    raw = np.frombuffer(data, np.uint8)
    slow = lines_for_python(data, raw, *line_bounds(raw))
    assert slow.tolist() == [False, True, True, True, True, False, True, True, True, True]


def test_a_line_duckdb_refuses_sends_its_block_down_the_per_line_path():
    lines = [b'{"id":"c1",' + C + b"}", b'{"id":"c2" ' + C + b"}"]
    assert_same(lines, "comments")
    result, table = parse_block(block(lines), "comments", KEEP, "x.zst")
    assert (table["id"].to_pylist(), dict(result.rejected)) == (["c1"], {"invalid_json": 1})


def test_drop_reasons_keep_the_order_the_per_line_path_first_met_them():
    lines = [
        b'{"id":"c1","subreddit":"AskDocs","created_utc":1,"body":"\\u0041"}',
        b"",
        b'{"id":"c2","subreddit":"pics","created_utc":1}',
        b'{"id":"c3","created_utc":1}',
        b'{"id":"c4","subreddit":"pics","created_utc":1,"body":"\\u0041"}',
    ]
    result, _ = parse_block(block(lines), "comments", KEEP, "x.zst")
    assert list(result.dropped.items()) == [
        ("empty_line", 1),
        ("other_subreddit", 2),
        ("missing_subreddit", 1),
    ]


def test_a_generated_dump_ingests_the_same_on_both_paths(tmp_path):
    generate_dumps(tmp_path, 150, seed=3)
    for kind in ("submissions", "comments"):
        for dump_block in iter_line_blocks(tmp_path / f"AskDocs_{kind}.zst", min_block_bytes=1 << 16):
            expected = parse_lines(dump_block, kind, KEEP, "x.zst", prefilter=False)
            result, table = parse_block(dump_block, kind, KEEP, "x.zst")
            contract: Contract = RAW_COMMENTS if kind == "comments" else RAW_SUBMISSIONS
            assert table.equals(rows_to_table(expected.rows, contract))
            assert (result.dropped, result.rejected, result.rejects) == (
                expected.dropped,
                expected.rejected,
                expected.rejects,
            )


def test_a_block_without_kept_rows_gets_the_same_part_as_an_empty_table(tmp_path):
    written = tmp_path / "written.parquet"
    pq.write_table(rows_to_table([], RAW_COMMENTS), written, compression="zstd")
    job = BlockJob(block([b'{"id":"c1","subreddit":"pics"}']), "comments", KEEP, "RC_x", True, tmp_path / "p")
    assert run_block_job(job).dropped == Counter(no_subreddit_name=1)
    assert (tmp_path / "p").read_bytes() == written.read_bytes()


def test_both_paths_count_the_same_values_that_lost_part_of_their_value(tmp_path):
    lines = [
        b'{"id":"c1","subreddit":"AskDocs","created_utc":5,"body":"pain \\ud83d here","score":"7"}',
        b'{"id":"c2","subreddit":"AskDocs","created_utc":5,"score":"abc","author_flair_text":123}',
        b'{"id":"c3","subreddit":"AskDocs","created_utc":5,"score":7.5,"stickied":"yes"}',
        b'{"id":"c4","subreddit":"AskDocs","created_utc":5,"body":"fine","score":3}',
    ]
    result, table = parse_block(block(lines), "comments", KEEP, "x.zst")
    assert table.equals(per_line(lines, "comments")[1])
    assert result.repaired == Counter(body=1, score=2, stickied=1)
    # The per-line path of a monthly dump (prefilter) counts them too.
    monthly = BlockJob(block(lines), "comments", KEEP, "RC_x", True, tmp_path / "part.parquet")
    assert run_block_job(monthly).repaired == result.repaired
