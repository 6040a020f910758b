"""The call ledger's records as Arrow rows: the columns every total reads, parsed from JSON Lines in bulk, and
the one outcome of each call key.

A record is one JSON object (`CallRecord.model_dump_json()`) on one line. `CALL_ROWS` are the columns that
counts, costs and progress read, so they are computed over a million records without building one Python
object per record; the record itself is parsed (pydantic) only when a call's outcome is asked for.
"""

from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from pydantic import ValidationError

from tasks.llm.record import CallRecord

# Defined once: every total and the compacted files' typed columns.
CALL_ROWS = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("status", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("mode", pa.string(), nullable=False),
        pa.field("reused_from", pa.string()),
        pa.field("attempts", pa.int64(), nullable=False),
        pa.field("prompt_tokens", pa.int64(), nullable=False),
        pa.field("completion_tokens", pa.int64(), nullable=False),
        pa.field("input_cost_usd", pa.float64(), nullable=False),
        pa.field("output_cost_usd", pa.float64(), nullable=False),
        pa.field("finished_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)
# A compacted file: the typed columns, and each record whole as the JSON line it was written as.
RECORD_COLUMN = "record"
COMPACTED = CALL_ROWS.append(pa.field(RECORD_COLUMN, pa.string(), nullable=False))
# Columns a record may lack (written before they existed): read as CallRecord's defaults.
_DEFAULTED = [name for name in CALL_ROWS.names if not CallRecord.model_fields[name].is_required()]
_REQUIRED = [name for name in CALL_ROWS.names if CallRecord.model_fields[name].is_required()]
STATUSES = ("ok", "failed")


class ParsedLines(NamedTuple):
    """The records of a run of JSON Lines: their rows, and where each line is in the bytes read."""

    rows: pa.Table  # CALL_ROWS, one per record line
    offsets: np.ndarray  # int64: each row's line start, from the start of the bytes read
    lengths: np.ndarray  # int64: each row's line length, newline excluded
    unreadable: list[int]  # the offsets of lines that are not a record (a torn or garbled write)
    end: int  # bytes read: through the last newline; what follows is a line still being written


def parse_lines(data: bytes) -> ParsedLines:
    """The record lines of `data`, in order. Lines that are not a whole record are named in `unreadable`
    (never read as one); bytes after the last newline are not read (`end`)."""
    end = data.rfind(b"\n") + 1
    starts, lengths = _line_bounds(data, end)
    filled = lengths > 0
    starts, lengths = starts[filled], lengths[filled]
    rows = _read_rows(pa.py_buffer(data).slice(0, end), len(starts))
    if rows is not None:
        return ParsedLines(rows, starts, lengths, [], end)
    records = [_record_or_none(data[s : s + n]) for s, n in zip(starts, lengths, strict=True)]
    readable = np.array([record is not None for record in records], bool)
    rows = rows_of_records([record for record in records if record is not None])
    return ParsedLines(rows, starts[readable], lengths[readable], starts[~readable].tolist(), end)


def _line_bounds(data: bytes, end: int) -> tuple[np.ndarray, np.ndarray]:
    newlines = np.flatnonzero(np.frombuffer(data, np.uint8, count=end) == ord("\n"))
    starts = np.concatenate(([0], newlines[:-1] + 1)).astype(np.int64) if len(newlines) else newlines
    return starts, newlines - starts


def _read_rows(lines: pa.Buffer, expected: int) -> pa.Table | None:
    """The CALL_ROWS of `lines` (every non-empty line a record), or None when one of them is not a record."""
    if expected == 0:
        return CALL_ROWS.empty_table()
    options = pa_json.ParseOptions(
        explicit_schema=pa.schema([field.with_nullable(True) for field in CALL_ROWS]),
        unexpected_field_behavior="ignore",
    )
    try:
        table = pa_json.read_json(pa.BufferReader(lines), parse_options=options)
    except pa.ArrowInvalid:
        return None
    if table.num_rows != expected or any(table[name].null_count for name in _REQUIRED):
        return None
    if not pc.all(pc.is_in(table["status"], value_set=pa.array(STATUSES))).as_py():
        return None
    return with_defaults(table)


def with_defaults(table: pa.Table) -> pa.Table:
    """`table` as CALL_ROWS, the columns a record lacked read as CallRecord's defaults."""
    columns = {name: table[name] for name in CALL_ROWS.names}
    for name in _DEFAULTED:
        default = CallRecord.model_fields[name].default
        if default is not None:
            columns[name] = pc.fill_null(columns[name], default)
    return pa.table(columns, schema=CALL_ROWS)


def _record_or_none(line: bytes) -> CallRecord | None:
    try:
        return CallRecord.model_validate_json(line)
    except ValidationError:
        return None


def rows_of_records(records: list[CallRecord]) -> pa.Table:
    """The CALL_ROWS of `records`."""
    return pa.Table.from_pylist(
        [record.model_dump(include=set(CALL_ROWS.names)) for record in records], CALL_ROWS
    )


def outcome_indices(rows: pa.Table) -> np.ndarray:
    """The row of each key's outcome, successes first: its earliest success when it has one (two processes
    that made the same call at once both recorded it: either is the call, and the one finished first stays
    it, whatever files hold them), else its latest failure (by `finished_at`); the later row on a tie."""
    if pc.count_distinct(rows["key"]).as_py() == rows.num_rows:  # one row a key (a compacted store): its own
        ok = pc.equal(rows["status"], "ok").to_numpy(zero_copy_only=False)
        return np.concatenate([np.flatnonzero(ok), np.flatnonzero(~ok)]).astype(np.int64)
    return outcome_indices_by_sorting(rows)


def outcome_indices_by_sorting(rows: pa.Table) -> np.ndarray:
    """`outcome_indices` of any rows, keys repeated or not: by sorting each status's rows by key and time."""
    ok = pc.equal(rows["status"], "ok")
    positions = pa.array(np.arange(rows.num_rows, dtype=np.int64))
    timed = pa.table({"key": rows["key"], "row": positions, "at": rows["finished_at"]})
    succeeded, failed = timed.filter(ok), timed.filter(pc.invert(ok))
    failed = failed.filter(pc.invert(pc.is_in(failed["key"], value_set=succeeded["key"])))
    earliest = _first_per_key(succeeded, "ascending")
    return np.concatenate([earliest, _first_per_key(failed, "descending")]).astype(np.int64)


def _first_per_key(rows: pa.Table, order: str) -> np.ndarray:
    """The row of each key first by `at` in `order` (the earlier row first on a tie when ascending, the later
    when descending), sorted."""
    if rows.num_rows == 0:
        return np.empty(0, np.int64)
    ordered = rows.take(pc.sort_indices(rows, [("key", "ascending"), ("at", order), ("row", order)]))
    keys = ordered["key"]
    first = np.ones(len(keys), bool)
    first[1:] = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1)).to_numpy(zero_copy_only=False)
    return np.sort(ordered["row"].to_numpy()[first])
