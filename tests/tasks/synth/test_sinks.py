"""The two layouts' files: zstd streams with a 2 GiB window, monthly files mixed with other subreddits."""

import calendar
from collections import Counter

import pytest
import zstandard

from tasks.synth.others import OTHER_SUBREDDITS, POPULAR_SUBREDDITS
from tests.tasks.synth.dump_files import read_lines, read_records


def utc(year: int, month: int) -> int:
    return calendar.timegm((year, month, 1, 0, 0, 0))


def test_files_declare_a_2gib_window_that_default_decoders_refuse(subreddit_dump):
    path = subreddit_dump / "AskDocs_comments.zst"
    frame = zstandard.get_frame_parameters(path.read_bytes()[:18])
    assert (frame.window_size, frame.content_size) == (2**31, zstandard.CONTENTSIZE_UNKNOWN)
    with path.open("rb") as handle, pytest.raises(zstandard.ZstdError, match="too much memory"):
        zstandard.ZstdDecompressor().stream_reader(handle).read(100)
    assert read_lines(path)


def test_monthly_layout_writes_every_month_mixed_with_other_subreddits(monthly_dump):
    names = {path.name for path in monthly_dump.glob("*.zst")}
    months = [f"{year}-{month:02d}" for year in range(2014, 2024) for month in range(1, 13)]
    assert {f"RS_{month}.zst" for month in months} | {f"RC_{month}.zst" for month in months} <= names
    counts = Counter(
        record.get("subreddit", "").lower() == "askdocs"
        for path in monthly_dump.glob("R[SC]_2020-*.zst")
        for record in read_records(path)
    )
    assert counts[True] / (counts[True] + counts[False]) < 0.005  # as in a real all-of-Reddit month
    subreddits = {record.get("subreddit") for record in read_records(monthly_dump / "RS_2021-03.zst")}
    assert subreddits & set(OTHER_SUBREDDITS) and subreddits & set(POPULAR_SUBREDDITS)


def test_popular_subreddits_carry_the_fields_of_their_month(monthly_dump):
    """The bulk of a month has the key sets of its era, like every other record (pushshift-format.md 2)."""
    early = [r for r in read_records(monthly_dump / "RC_2016-03.zst") if r.get("subreddit") == "AskReddit"]
    late = [r for r in read_records(monthly_dump / "RC_2022-03.zst") if r.get("subreddit") == "AskReddit"]
    assert early and late
    assert not any("is_submitter" in r or "author_fullname" in r for r in early)
    assert all("is_submitter" in r and "author_fullname" in r for r in late)
    assert {type(r["created_utc"]) for r in early + late} == {int}


def test_replies_go_to_the_month_of_their_own_creation(monthly_dump):
    for path in monthly_dump.glob("RC_2019-*.zst"):
        created = {int(float(record["created_utc"])) for record in read_records(path)}
        month = int(path.stem[-2:])
        assert utc(2019, month) <= min(created) and max(created) < utc(2019 + month // 12, month % 12 + 1)
