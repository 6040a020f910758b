"""Reading generated dump files back, as the tests of every generator module need."""

import contextlib
from pathlib import Path

import orjson
import zstandard

POSTS, MONTHLY_POSTS, SEED = 1000, 300, 7


def read_lines(path: Path) -> list[bytes]:
    with path.open("rb") as handle:
        return (
            zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(handle).read().split(b"\n")[:-1]
        )


def read_records(path: Path) -> list[dict]:
    records = []
    for line in read_lines(path):
        with contextlib.suppress(orjson.JSONDecodeError):  # the rare malformed line
            records.append(orjson.loads(line))
    return records


def flair_of(record: dict) -> str | None:
    pieces = record.get("author_flair_richtext") or []
    return record["author_flair_text"] or "".join(piece.get("t", "") for piece in pieces) or None
