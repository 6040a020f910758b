"""Pushshift records -> typed rows of the raw contracts: parsing, filtering and type normalisation.

Pure and free of Prefect. This is the reference, one line at a time; blocks.py gets the same rows faster.
"""

import functools
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

import numpy as np
import orjson
import pyarrow as pa

from tasks.data.contracts import Contract
from tasks.data.reddit.reader import LineBlock
from tasks.data.sources import REDDIT

DumpKind = Literal["submissions", "comments"]
EXCERPT_CHARS = 200
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# created_utc is read as epoch seconds in [0, 2100-01-01): later than any dump, and below any epoch written in
# milliseconds (2020 is 1.58e12), which would otherwise date a comment in the year 52038.
CREATED_UTC_END = 4_102_444_800


@dataclass(frozen=True)
class IngestFilter:
    """What to keep: one subreddit (case-insensitive) and, for posts, a [start, end) UTC window."""

    subreddit: str
    start: date
    end: date

    @property
    def start_epoch(self) -> int:
        return int(datetime(self.start.year, self.start.month, self.start.day, tzinfo=UTC).timestamp())

    @property
    def end_epoch(self) -> int:
        return int(datetime(self.end.year, self.end.month, self.end.day, tzinfo=UTC).timestamp())


def epoch_seconds(value: Any) -> int | None:
    """Epoch seconds from an int, a float or a numeric string (all occur in the dumps); else None."""
    if type(value) is int:
        return value
    if value is None:
        return None
    if isinstance(value, float | str) and not isinstance(value, bool):
        try:
            return int(float(value))
        except (ValueError, OverflowError):
            return None
    return None


def fits_int64(value: Any) -> bool:
    """Whether a value bound for an integer column fits one (a value that is no number becomes null)."""
    number = epoch_seconds(value)
    return number is None or INT64_MIN <= number <= INT64_MAX


def row_fits_int64(row: tuple, columns: Iterable[int]) -> bool:
    """Whether every integer column of a row fits int64 (small ints, the usual case, are checked inline)."""
    for i in columns:
        value = row[i]
        usual = value is None or (type(value) is int and INT64_MIN <= value <= INT64_MAX)
        if not usual and not fits_int64(value):
            return False
    return True


def edited_epoch(value: Any) -> int | None:
    """`edited` is false or an epoch (int or float); return the epoch or None."""
    return None if value is False or value is None else epoch_seconds(value)


def richtext_flair(value: Any) -> str | None:
    """Concatenate the text pieces of `author_flair_richtext` (emoji pieces carry no text); None when a
    text piece's text is not a string (`"t": null`): a flair read in part could read as another one."""
    if not value or not isinstance(value, list):
        return None
    pieces = [p.get("t", "") for p in value if isinstance(p, dict) and p.get("e") == "text"]
    if not all(isinstance(piece, str) for piece in pieces):
        return None
    return "".join(pieces) or None


def submission_row(record: dict[str, Any], created: int, line_number: int, source: str) -> tuple:
    get = record.get
    return (
        record["id"], get("subreddit"), get("author"), get("title"), get("selftext"), created,
        get("is_self"), get("domain"), get("url"), get("post_hint"), get("is_gallery"), get("is_video"),
        get("removed_by_category"), get("banned_by"), epoch_seconds(get("banned_at_utc")),
        get("distinguished"), get("stickied"), get("num_comments"), get("score"),
        get("author_flair_text"), richtext_flair(get("author_flair_richtext")), get("link_flair_text"),
        edited_epoch(get("edited")), epoch_seconds(get("retrieved_on", get("retrieved_utc"))),
        source, line_number,
    )  # fmt: skip


def comment_row(record: dict[str, Any], created: int, line_number: int, source: str) -> tuple:
    get = record.get
    return (
        record["id"], get("subreddit"), get("link_id"), get("parent_id"), get("author"), get("body"),
        created, get("distinguished"), get("stickied"), get("is_submitter"), get("banned_by"),
        get("removed_by_category"), get("author_flair_text"), richtext_flair(get("author_flair_richtext")),
        get("score"), edited_epoch(get("edited")),
        epoch_seconds(get("retrieved_on", get("retrieved_utc"))), source, line_number,
    )  # fmt: skip


ROW_BUILDERS: dict[str, Callable[[dict[str, Any], int, int, str], tuple]] = {
    "submissions": submission_row,
    "comments": comment_row,
}
# Integer columns read from the record (created_utc is checked on its own; source_line is ours).
INTEGER_COLUMNS: dict[str, tuple[int, ...]] = {
    kind: tuple(
        i for i, column in enumerate(contract.schema)
        if pa.types.is_integer(column.type) and column.name not in ("created_utc", "source_line")
    )
    for kind, contract in REDDIT.lake_tables.items()
}  # fmt: skip


# json.loads joins an escaped surrogate pair into one character, so a surrogate left in a string is lone.
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _coerce(value: Any, dtype: pa.DataType) -> Any:
    """Best-effort cast of one odd value (a number where text was expected, and so on) to `dtype`."""
    if value is None:
        return None
    if pa.types.is_string(dtype):
        if isinstance(value, str):
            # Lone surrogates (a broken emoji escape) cannot be written as UTF-8: each becomes one U+FFFD.
            return LONE_SURROGATE.sub("\ufffd", value)
        return None if isinstance(value, dict | list) else str(value)
    if pa.types.is_boolean(dtype):
        return value if isinstance(value, bool) else None
    number = epoch_seconds(value)
    return number if number is None or INT64_MIN <= number <= INT64_MAX else None


def _is_repaired(value: Any, coerced: Any) -> bool:
    """Whether _coerce lost part of a value: nulled it, replaced characters of its text, or cut a number
    (a number written as text, or read as text, is read whole and is not counted)."""
    if value is None:
        return False
    if coerced is None:
        return True
    if isinstance(coerced, str):
        return isinstance(value, str) and coerced != value
    if type(coerced) is int:
        try:
            return Decimal(str(value).strip()) != coerced
        except InvalidOperation:
            return True
    return False


def rows_to_table(rows: list[tuple], contract: Contract, repaired: Counter | None = None) -> pa.Table:
    """Columns of `rows` as a table of the contract; odd values are coerced (or nulled) column by column,
    and those that lost part of their value are counted by column in `repaired` (their record is kept)."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(contract.schema)
    arrays = []
    for values, schema_field in zip(columns, contract.schema, strict=True):
        # A float bound for an integer column is read by _coerce: Arrow casts a whole one to the integer it
        # holds, which past 2**53 need not be the number written (3.602879701896397e+16).
        if not (pa.types.is_integer(schema_field.type) and any(type(value) is float for value in values)):
            try:
                arrays.append(pa.array(values, type=schema_field.type))
                continue
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, UnicodeEncodeError):
                pass
        coerced = [_coerce(v, schema_field.type) for v in values]
        arrays.append(pa.array(coerced, type=schema_field.type))
        count = sum(map(_is_repaired, values, coerced))
        if repaired is not None and count:
            repaired[schema_field.name] += count
    return pa.Table.from_arrays(arrays, schema=contract.schema)


def parse_line(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """Parse one NDJSON line: (record, None) or (None, reject reason)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return None, "invalid_utf8"
        try:
            # orjson refuses lone surrogate escapes that the standard library accepts.
            record = json.loads(text)
        except ValueError:
            return None, "invalid_json"
    if not isinstance(record, dict):
        return None, "not_an_object"
    if not isinstance(record.get("id"), str) or not record["id"]:
        return None, "missing_id"
    return record, None


def excerpt(line: bytes) -> str:
    return line[: EXCERPT_CHARS * 2].decode("utf-8", "replace")[:EXCERPT_CHARS]


@dataclass
class BlockResult:
    """What one block of lines became: typed rows, quarantined lines, counts by reason, and the values
    of kept rows that lost part of their value when cast to their column's type (rows_to_table), by column."""

    rows: list[tuple]
    rejects: list[tuple]
    lines: int
    dropped: Counter
    rejected: Counter
    kept: int = 0
    bytes_read: int = 0
    repaired: Counter = field(default_factory=Counter)

    def add_line(
        self, row: tuple | None, reason: str | None, line: bytes, line_number: int, source: str
    ) -> None:
        """Count one line classify_line has classified: keep its row, count its drop, or quarantine it."""
        if row is not None:
            self.rows.append(row)
        elif reason in DROP_REASONS:
            self.dropped[reason] += 1
        else:
            self.rejected[reason] += 1
            self.rejects.append((source, line_number, reason, excerpt(line)))


# Characters other than ASCII letters that str.lower() turns into ASCII: LATIN CAPITAL LETTER I WITH
# DOT ABOVE -> "i" + a combining dot, KELVIN SIGN -> "k" (a test checks the list is complete).
LOWERS_TO_ASCII = "\u0130\u212a"
# Reddit's names; any other character (a "/" may be written "\\/") turns the prefilter off.
SUBREDDIT_NAME = re.compile(r"[a-z0-9_]+")


def candidate_lines(data: bytes, wanted: str) -> list[tuple[int, bytes]]:
    """The lines of `data` (with their 0-based index) that may hold a record of subreddit `wanted`.

    A byte search before any JSON parsing: besides the lines holding `wanted` in any ASCII case, it
    keeps every line that spells a character another way JSON or str.lower() allows (a \\u escape of
    an ASCII character, or a character in LOWERS_TO_ASCII), so it may keep lines of other subreddits but
    never drops one of `wanted` (a lower-case Reddit name).
    """
    raw = np.frombuffer(data, np.uint8)
    # OR 0x20 lower-cases ASCII letters; it changes other bytes too, which can only add hits.
    folded = (raw | 0x20).tobytes()
    hits = [np.array(_find_all(folded, bytes(b | 0x20 for b in wanted.encode())), dtype=np.int64)]
    escapes = np.flatnonzero(raw[:-5] == ord("\\"))
    escapes = escapes[raw[escapes + 1] == ord("u")]
    digits = raw[escapes[:, None] + np.arange(2, 6)] | 0x20
    ascii_escape = (digits[:, 0] == ord("0")) & (digits[:, 1] == ord("0")) & (digits[:, 2] & 0xF8 == ord("0"))
    hits.append(escapes[ascii_escape])
    for char in LOWERS_TO_ASCII:
        if set(char.lower()) & set(wanted):
            hits.append(escapes[(digits == np.frombuffer(f"{ord(char):04x}".encode(), np.uint8)).all(axis=1)])
            hits.append(_occurrences(raw, char.encode()))
    found = np.concatenate(hits)
    if not len(found):
        return []
    newlines = np.flatnonzero(raw == ord("\n"))
    # A line's index is the number of newlines before it; it starts after the last one.
    indices = np.unique(np.searchsorted(newlines, found))
    starts = np.concatenate(([0], newlines + 1))[indices]
    ends = np.concatenate((newlines, [len(data)]))[indices]
    return [(int(i), data[start:end]) for i, start, end in zip(indices, starts, ends, strict=True)]


def _occurrences(raw: np.ndarray, pattern: bytes) -> np.ndarray:
    """Start positions of `pattern` in `raw`, found from its last byte (rare in text, unlike a lead byte)."""
    at = np.flatnonzero(raw == pattern[-1])
    for back in range(1, len(pattern)):
        at = at[at >= back]
        at = at[raw[at - back] == pattern[-1 - back]]
    return at - (len(pattern) - 1)


def _find_all(data: bytes, needle: bytes) -> list[int]:
    found, position = [], data.find(needle)
    while position >= 0:
        found.append(position)
        position = data.find(needle, position + len(needle))
    return found


# Reasons a line is dropped (counted only); any other reason quarantines it (file, line, excerpt).
# no_subreddit_name: a monthly dump's line whose bytes spell the subreddit's name in no way JSON allows,
# skipped unparsed (candidate_lines). It cannot hold a record of the subreddit, but nothing else about it
# was read: an empty or corrupt line among them is not told apart, so it is not called other_subreddit.
DROP_REASONS = frozenset(
    {"empty_line", "other_subreddit", "missing_subreddit", "outside_window", "no_subreddit_name"}
)


@functools.cache
def _bounds(keep: IngestFilter) -> tuple[str, int, int]:
    return keep.subreddit.lower(), keep.start_epoch, keep.end_epoch


def classify_line(
    line: bytes, line_number: int, kind: DumpKind, keep: IngestFilter, source: str
) -> tuple[tuple | None, str | None]:
    """One dump line -> (its row, None) when kept, else (None, the reason it is dropped or quarantined)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        record = None
    # Fast path for the usual well-formed record; parse_line classifies everything else.
    if type(record) is not dict or type(record.get("id")) is not str or not record["id"]:
        record, reason = parse_line(line)
        if record is None:
            return None, "empty_line" if not line.strip() else reason
    wanted, start, end = _bounds(keep)
    subreddit = record.get("subreddit")
    if not isinstance(subreddit, str) or subreddit.lower() != wanted:
        return None, "other_subreddit" if subreddit else "missing_subreddit"
    created = record.get("created_utc")
    if type(created) is not int:
        created = epoch_seconds(created)
    if created is None or not 0 <= created < CREATED_UTC_END:
        return None, "bad_created_utc"
    if kind == "submissions" and not start <= created < end:
        return None, "outside_window"
    row = ROW_BUILDERS[kind](record, created, line_number, source)
    # One such number (a score of 1e20) would make the whole block unwritable as int64.
    if not row_fits_int64(row, INTEGER_COLUMNS[kind]):
        return None, "number_out_of_range"
    return row, None


def parse_lines(
    block: LineBlock, kind: DumpKind, keep: IngestFilter, source: str, prefilter: bool
) -> BlockResult:
    """Filter, parse and normalise the lines of a block one by one, counting every line that is not kept.

    With `prefilter` (all-of-Reddit monthly dumps), only candidate_lines are parsed; the others count
    as no_subreddit_name, unread.
    """
    wanted = keep.subreddit.lower()
    if prefilter and SUBREDDIT_NAME.fullmatch(wanted):
        numbered: Iterable[tuple[int, bytes]] = candidate_lines(block.data, wanted)
    else:
        numbered = enumerate(block.lines)
        prefilter = False
    result = BlockResult([], [], block.line_count, Counter(), Counter())
    skipped_to = 0
    for index, line in numbered:
        if index > skipped_to:
            # Counted where the line-by-line filter met them, so that counters keep their key order.
            result.dropped["no_subreddit_name"] += index - skipped_to
        skipped_to = index + 1
        line_number = block.first_line + index
        row, reason = classify_line(line, line_number, kind, keep, source)
        result.add_line(row, reason, line, line_number, source)
    if prefilter and result.lines > skipped_to:
        result.dropped["no_subreddit_name"] += result.lines - skipped_to
    result.kept = len(result.rows)
    return result
