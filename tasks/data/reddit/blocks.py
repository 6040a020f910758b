"""One block of dump lines -> a Parquet part: parsed by DuckDB, filtered and typed column by column.

records.classify_line is the reference: one line at a time through orjson and Python. This module gets
the same rows, counts and order with DuckDB's JSON reader (yyjson, C++) and Arrow kernels for every
line on which the two provably agree, and hands each other line to classify_line:
- before parsing, by bytes (lines_for_python): lines that do not start with "{" and end with "}"
  (blank, cut short), that are not UTF-8, that hold a \\u escape of an ASCII or surrogate code point,
  a bare word where a value starts (yyjson takes `nan` and `inf`, orjson does not), a trailing comma
  (yyjson takes `[1,]`) or more than one space before a value;
- after parsing, by value (block_outcomes): whatever the per-line path would quarantine or coerce: a
  missing id or created_utc, a number or object where text is expected, a created_utc string that is
  not plain digits, a subreddit that is not ASCII, a number beyond int64, ...
If DuckDB refuses the block anyway (a malformed line the byte checks let through), the whole block
takes the per-line path. One difference remains: a record repeating a key is read with the first
value here and the last in the per-line path (JSON leaves duplicate keys undefined; dumps have none).
"""

import codecs
import functools
import json
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tasks.data.reddit.reader import LineBlock
from tasks.data.reddit.records import (
    CREATED_UTC_END,
    DROP_REASONS,
    BlockResult,
    DumpKind,
    IngestFilter,
    classify_line,
    parse_lines,
    richtext_flair,
    rows_to_table,
)
from tasks.data.sources import REDDIT

# How each contract column is read when its name and type do not say it: epoch seconds of drifting
# types, `edited` (false or an epoch), retrieved_on or else retrieved_utc, flair richtext pieces.
SPECIAL_COLUMNS = {
    "created_utc": "epoch",
    "banned_at_utc": "epoch",
    "edited_utc": "epoch",  # false (or true) means not edited: epoch_seconds gives None for booleans
    "retrieved_utc": "retrieved",
    "author_flair_richtext_text": "richtext",
}
FIELD_OF = {"edited_utc": "edited", "author_flair_richtext_text": "author_flair_richtext"}
OWN_COLUMNS = ("source_file", "source_line")
# What each fast line became; "python" hands it to classify_line.
OUTCOMES = ("keep", "python", "other_subreddit", "missing_subreddit", "outside_window")
SCAN_WINDOW = 1 << 20
# Columns of few distinct values, dictionary-encoded in the Parquet parts: trying it on every column (the
# default) costs a third of the writing time for texts and ids, which fall back to plain anyway.
DICTIONARY_COLUMNS = frozenset({
    "subreddit", "author", "distinguished", "removed_by_category", "banned_by", "author_flair_text",
    "author_flair_richtext_text", "link_flair_text", "domain", "post_hint", "source_file",
})  # fmt: skip
# Text fields are read as VARCHAR, so a number, boolean, object or array comes out as its JSON text: a
# string that could be one of these goes the per-line way (whose str() of a number or bool differs).
MAYBE_SCALAR = r"^(-?[0-9][0-9.eE+-]*|true|false)$"
MAYBE_CONTAINER = r"(?s)^[\[{].*[\]}]$"  # "[deleted]" too: json.loads tells them apart
MAYBE_NOT_TEXT_START = np.frombuffer(b"-0123456789tf[{", np.uint8)
# Epoch seconds as the per-line path reads them (epoch_seconds): an integer; a string of plain digits,
# short enough to pass through float() exactly; a decimal whose int() is its integer part (few enough
# digits that float() cannot round it up to the next integer). Anything else goes the per-line way.
INTEGER = r"^-?[0-9]{1,18}$"
EPOCH = r'^(?:"(?P<quoted>-?[0-9]{1,15})"|(?P<decimal>-?[0-9]{1,10})\.[0-9]{1,6})$'


def _how(name: str, dtype: pa.DataType) -> str:
    if name in SPECIAL_COLUMNS:
        return SPECIAL_COLUMNS[name]
    return "text" if pa.types.is_string(dtype) else "bool" if pa.types.is_boolean(dtype) else "int"


@functools.cache
def read_sql(kind: DumpKind) -> str:
    """DuckDB query: the fields the contract needs from each line, text as VARCHAR, the rest as JSON text."""
    fields: dict[str, str] = {}
    for column in REDDIT.lake_tables[kind].schema:
        if column.name in OWN_COLUMNS:
            continue
        how = _how(column.name, column.type)
        names = (
            ["retrieved_on", "retrieved_utc"]
            if how == "retrieved"
            else [FIELD_OF.get(column.name, column.name)]
        )
        fields |= {name: "VARCHAR" if how == "text" else "JSON" for name in names}
    structure = "{" + ", ".join(f'"{name}": "{dtype}"' for name, dtype in fields.items()) + "}"
    return f"select unnest(json_transform(line, '{structure}')) from block_lines where fast"


_LOCAL = threading.local()


def _connection() -> duckdb.DuckDBPyConnection:
    """This thread's single-threaded connection: the ingest already runs one block per core."""
    if not hasattr(_LOCAL, "connection"):
        _LOCAL.connection = duckdb.connect(config={"threads": 1})
    return _LOCAL.connection


def read_fields(kind: DumpKind, lines: pa.Array, fast: np.ndarray) -> pa.Table:
    """The lines marked `fast` (JSON objects; the others are not read, not even as UTF-8) -> their fields
    as columns (see read_sql)."""
    connection = _connection()
    connection.register("block_lines", pa.table({"line": lines, "fast": fast}))
    try:
        return connection.sql(read_sql(kind)).to_arrow_table()
    finally:
        connection.unregister("block_lines")


# --- the per-line path's normalisation, on whole columns ----------------------------------------------


def _numpy(mask: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return pc.fill_null(mask, False).to_numpy(zero_copy_only=False)


def _first_bytes(texts: pa.Array) -> np.ndarray:
    """The first byte of each value (0 for an empty or null one)."""
    offsets = np.frombuffer(texts.buffers()[1], np.int32 if pa.types.is_string(texts.type) else np.int64)
    offsets = offsets[texts.offset : texts.offset + len(texts) + 1]
    if texts.buffers()[2] is None:
        return np.zeros(len(texts), np.uint8)
    data = np.frombuffer(texts.buffers()[2], np.uint8)
    first = data[np.minimum(offsets[:-1], len(data) - 1)] if len(data) else np.zeros(len(texts), np.uint8)
    return np.where((np.diff(offsets) > 0) & _numpy(texts.is_valid()), first, 0)


def _maybe_not_text(texts: pa.Array) -> np.ndarray:
    """Which values read as VARCHAR may be a JSON number, boolean, object or array (see MAYBE_NOT_TEXT)."""
    suspects = np.flatnonzero(np.isin(_first_bytes(texts), MAYBE_NOT_TEXT_START))
    found = np.zeros(len(texts), bool)
    if not len(suspects):
        return found
    values = texts.take(suspects)
    found[suspects] = _numpy(pc.match_substring_regex(values, MAYBE_SCALAR))
    containers = np.flatnonzero(_numpy(pc.match_substring_regex(values, MAYBE_CONTAINER)))
    encoded = pc.dictionary_encode(values.take(containers))
    parsed = pa.array([_is_json(value) for value in encoded.dictionary.to_pylist()], pa.bool_())
    found[suspects[containers]] = _numpy(parsed.take(encoded.indices))
    return found


def _is_json(text: str) -> bool:
    try:
        json.loads(text)  # the most lenient reader of the per-line path
    except ValueError:
        return False
    return True


def _epochs(values: pa.Array, booleans_are_null: bool) -> tuple[pa.Array, np.ndarray]:
    """JSON texts -> (epoch seconds as epoch_seconds reads them, where only the per-line path reads them)."""
    plain = _numpy(pc.match_substring_regex(values, INTEGER))
    numbers = np.zeros(len(values), np.int64)
    numbers[plain] = pc.cast(values.filter(plain), pa.int64()).to_numpy()
    known, unread = plain.copy(), np.zeros(len(values), bool)
    odd = np.flatnonzero(_numpy(values.is_valid()) & ~plain)
    if len(odd):
        others = values.take(odd)
        parts = pc.extract_regex(others, EPOCH)
        found = _numpy(parts.is_valid())
        quoted = parts.field("quoted").filter(found)
        digits = pc.if_else(pc.equal(quoted, ""), parts.field("decimal").filter(found), quoted)
        numbers[odd[found]] = pc.cast(digits, pa.int64()).to_numpy()
        known[odd[found]] = True
        boolean = _numpy(pc.is_in(others, pa.array(["true", "false"]))) & booleans_are_null
        unread[odd] = ~found & ~boolean
    return pa.array(numbers, pa.int64(), mask=~known), unread


def _integers(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    plain = _numpy(pc.match_substring_regex(values, INTEGER))
    numbers = np.where(plain, pc.cast(pc.if_else(plain, values, "0"), pa.int64()).to_numpy(), 0)
    return pa.array(numbers, pa.int64(), mask=~plain), _numpy(values.is_valid()) & ~plain


def _booleans(values: pa.Array) -> tuple[pa.Array, np.ndarray]:
    boolean = _numpy(pc.is_in(values, pa.array(["true", "false"])))
    return pc.equal(values, "true"), _numpy(values.is_valid()) & ~boolean


def _richtext(values: pa.Array) -> pa.Array:
    """richtext_flair of each JSON value, computed once per distinct value (flairs repeat)."""
    encoded = pc.dictionary_encode(pc.if_else(pc.equal(values, "[]"), None, values))
    texts = [richtext_flair(orjson.loads(value)) for value in encoded.dictionary.to_pylist()]
    return pa.array(texts, pa.string()).take(encoded.indices)


def block_outcomes(
    kind: DumpKind, keep: IngestFilter, fields: pa.Table, lines: pa.Array, fast_index: np.ndarray
) -> tuple[np.ndarray, dict[str, pa.Array]]:
    """Fields of the fast lines (`lines[fast_index]`) -> (each one's index into OUTCOMES, their columns).

    The checks come in the per-line path's order, so a line is counted for the first reason that path
    would have met (an id, then the subreddit, then created_utc and the window, then the values).
    """
    # One plain string array per field (_first_bytes reads its buffers), whatever DuckDB hands over.
    read = {name: fields[name].combine_chunks().cast(pa.string()) for name in fields.column_names}
    columns: dict[str, pa.Array] = {}
    odd_of: dict[str, np.ndarray] = {}  # values only the per-line path reads right
    for column in REDDIT.lake_tables[kind].schema:
        if column.name in OWN_COLUMNS:
            continue
        how = _how(column.name, column.type)
        field = FIELD_OF.get(column.name, column.name)
        if how == "text":
            columns[column.name], odd = read[field], _maybe_not_text(read[field])
        elif how == "bool":
            columns[column.name], odd = _booleans(read[field])
        elif how == "int":
            columns[column.name], odd = _integers(read[field])
        elif how == "epoch":
            columns[column.name], odd = _epochs(read[field], column.name != "created_utc")
        elif how == "retrieved":
            on, utc = read["retrieved_on"], read["retrieved_utc"]
            columns[column.name], odd = _epochs(pc.coalesce(on, utc), booleans_are_null=True)
            # The per-line path reads retrieved_on when the key is there, even as null; DuckDB reads a
            # null as absent, so a line naming retrieved_on without a value for it goes the per-line way.
            unsure = np.flatnonzero(~_numpy(on.is_valid()) & _numpy(utc.is_valid()))
            odd[unsure] |= _numpy(pc.match_substring(lines.take(fast_index[unsure]), '"retrieved_on"'))
        else:
            columns[column.name], odd = _richtext(read[field]), np.zeros(fields.num_rows, bool)
        odd_of[column.name] = odd
    ids, subreddits, created = columns["id"], columns["subreddit"], columns["created_utc"]
    wanted = keep.subreddit.lower()
    unread = np.logical_or.reduce([odd for name, odd in odd_of.items() if name != "created_utc"])
    checks = [
        (~_numpy(pc.greater(pc.binary_length(ids), 0)) | odd_of["id"], "python"),
        (~_numpy(pc.greater(pc.binary_length(subreddits), 0)), "missing_subreddit"),
        (odd_of["subreddit"] | ~_numpy(pc.string_is_ascii(subreddits)), "python"),
        (~_numpy(pc.equal(pc.ascii_lower(subreddits), wanted)), "other_subreddit"),
        (~_numpy(created.is_valid()), "python"),
        (_numpy(pc.or_(pc.less(created, 0), pc.greater_equal(created, CREATED_UTC_END))), "python"),
        (_numpy(pc.or_(pc.less(created, keep.start_epoch), pc.greater_equal(created, keep.end_epoch)))
         if kind == "submissions" else np.zeros(len(created), bool), "outside_window"),
        (unread, "python"),
    ]  # fmt: skip
    outcome = np.select([mask for mask, _ in checks], [OUTCOMES.index(reason) for _, reason in checks], 0)
    return outcome.astype(np.uint8), columns


def line_bounds(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive, without the newline) of each line of a block, as LineBlock counts them."""
    # A window at a time, read from the cache (see lines_for_python).
    newlines = np.concatenate(
        [
            begin + np.flatnonzero(raw[begin : begin + SCAN_WINDOW] == ord("\n"))
            for begin in range(0, len(raw), SCAN_WINDOW)
        ]
        or [np.zeros(0, np.int64)]
    )
    starts = np.concatenate(([0], newlines + 1))
    ends = np.concatenate((newlines, [len(raw)]))
    if (len(raw) and raw[-1] == ord("\n")) or not len(raw):
        starts, ends = starts[:-1], ends[:-1]
    return starts, ends


def _line_of(positions: np.ndarray, starts: np.ndarray) -> np.ndarray:
    return np.searchsorted(starts, positions, side="right") - 1


def lines_for_python(data: bytes, raw: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Mask of the lines the fast path must leave to classify_line, found by bytes (see the module doc)."""
    slow = np.zeros(len(starts), bool)
    if not len(starts):
        return slow
    slow |= (raw[starts] != ord("{")) | (raw[np.maximum(ends - 1, 0)] != ord("}")) | (ends == starts)
    suspects = [_invalid_utf8_lines(data, raw, starts, ends)]
    # Scanned a window at a time, so that each of the passes over the bytes reads them from the cache.
    for begin in range(0, len(raw), SCAN_WINDOW):
        window = raw[begin : begin + SCAN_WINDOW + 8]  # 8 more: a pattern may start at its last byte
        suspects += [begin + found for found in _odd_bytes(window)]
    slow[_line_of(np.concatenate(suspects), starts)] = True
    return slow


def _odd_bytes(window: np.ndarray) -> list[np.ndarray]:
    """Positions in `window` of escapes yyjson and orjson may read apart, bare words and trailing commas."""
    padded = np.concatenate((window, np.zeros(8, np.uint8)))
    escapes = np.flatnonzero(window == ord("\\"))
    escapes = escapes[padded[escapes + 1] == ord("u")]
    hex1, hex2, hex3 = (padded[escapes + i] | 0x20 for i in (2, 3, 4))
    ascii_escape = (hex1 == ord("0")) & (hex2 == ord("0")) & (hex3 & 0xF8 == ord("0"))
    surrogate = (hex1 == ord("d")) & np.isin(hex2, np.frombuffer(b"89abcdef", np.uint8))
    # Where a value starts (after ":", "," or "[", a space, a sign): a bare word (nan, inf, infinity, in
    # any case); more space (looked at closer by the per-line path); after a comma, a closing bracket.
    at = np.flatnonzero((window == ord(":")) | (window == ord(",")) | (window == ord("[")))
    comma = window[at] == ord(",")
    at += 1
    at += padded[at] == ord(" ")
    at += (padded[at] == ord("-")) | (padded[at] == ord("+"))
    first, second, third = padded[at] | 0x20, padded[at + 1] | 0x20, padded[at + 2] | 0x20
    word = ((first == ord("n")) & (second == ord("a")) & (third == ord("n"))) | (
        (first == ord("i")) & (second == ord("n")) & (third == ord("f"))
    )
    space = np.isin(padded[at], np.frombuffer(b" \t\r", np.uint8))
    closing = comma & np.isin(padded[at], np.frombuffer(b"}]", np.uint8))
    return [escapes[ascii_escape | surrogate], at[word | space | closing]]


def _invalid_utf8_lines(data: bytes, raw: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A position in each line that is not UTF-8 (Arrow checks the block at once; lines only if it fails)."""
    try:
        pa.LargeStringArray.from_buffers(
            1, pa.py_buffer(np.array([0, len(data)], np.int64)), pa.py_buffer(data)
        ).validate(full=True)
        return np.zeros(0, np.int64)
    except pa.ArrowInvalid:
        pass
    bad = []
    for line in np.unique(_line_of(np.flatnonzero(raw >= 0x80), starts)).tolist():
        try:
            codecs.utf_8_decode(data[starts[line] : ends[line]], "strict", True)
        except UnicodeDecodeError:
            bad.append(starts[line])
    return np.array(bad, np.int64)


def _lines_array(data: bytes, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """The lines as one Arrow string array over the block's bytes, not copied (each keeps its newline)."""
    offsets = np.append(starts, ends[-1] if len(ends) else 0).astype(np.int64)
    return pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(data))


def parse_block(
    block: LineBlock, kind: DumpKind, keep: IngestFilter, source: str
) -> tuple[BlockResult, pa.Table]:
    """A block's lines -> (their counts and quarantined lines, the table of kept rows in line order).

    The same as rows_to_table over parse_lines(..., prefilter=False), faster (see the module doc).
    """
    raw = np.frombuffer(block.data, np.uint8)
    starts, ends = line_bounds(raw)
    slow = lines_for_python(block.data, raw, starts, ends)
    try:
        lines = _lines_array(block.data, starts, ends)
        fields = read_fields(kind, lines, ~slow)
    except duckdb.InvalidInputException:  # a malformed line the byte checks let through
        result = parse_lines(block, kind, keep, source, prefilter=False)
        return result, rows_to_table(result.rows, REDDIT.lake_tables[kind], result.repaired)
    fast_index = np.flatnonzero(~slow)
    outcome, columns = block_outcomes(kind, keep, fields, lines, fast_index)
    return _merge(block, kind, keep, source, (fast_index, outcome, columns), starts, ends)


def _merge(
    block: LineBlock, kind: DumpKind, keep: IngestFilter, source: str,
    fast: tuple[np.ndarray, np.ndarray, dict[str, pa.Array]], starts: np.ndarray, ends: np.ndarray,
) -> tuple[BlockResult, pa.Table]:  # fmt: skip
    """Fast outcomes + the per-line path for the other lines -> counts in first-met order and one table."""
    fast_index, outcome, columns = fast
    contract = REDDIT.lake_tables[kind]
    fast_lines = np.zeros(len(starts), bool)
    fast_lines[fast_index] = True
    python_lines = np.union1d(np.flatnonzero(~fast_lines), fast_index[outcome == OUTCOMES.index("python")])
    result = BlockResult([], [], block.line_count, Counter(), Counter())
    first_met: dict[str, int] = {}
    for index in python_lines.tolist():
        line, line_number = block.data[starts[index] : ends[index]], block.first_line + index
        row, reason = classify_line(line, line_number, kind, keep, source)
        result.add_line(row, reason, line, line_number, source)
        if reason is not None:
            first_met.setdefault(reason, index)
    dropped = Counter(result.dropped)
    for code, reason in enumerate(OUTCOMES):
        where = fast_index[outcome == code]
        if reason in DROP_REASONS and len(where):
            dropped[reason] += len(where)
            first_met[reason] = min(first_met.get(reason, len(starts)), int(where[0]))
    # Counters list their reasons in the order the line-by-line path first met them (receipts show it).
    result.dropped = Counter(
        {reason: dropped[reason] for reason in sorted(dropped, key=first_met.__getitem__)}
    )
    kept = np.flatnonzero(outcome == OUTCOMES.index("keep"))
    everything = len(kept) == len(outcome)  # the usual block of a per-subreddit dump: no copy then
    arrays = [
        pa.repeat(source, len(kept)).cast(pa.string()) if column.name == "source_file"
        else pa.array(fast_index[kept] + block.first_line, pa.int64()) if column.name == "source_line"
        else (columns[column.name] if everything else columns[column.name].take(kept)).cast(column.type)
        for column in contract.schema
    ]  # fmt: skip
    table = pa.Table.from_arrays(arrays, schema=contract.schema)
    if result.rows:
        table = pa.concat_tables([table, rows_to_table(result.rows, contract, result.repaired)])
        table = table.take(pc.sort_indices(table["source_line"]))
    result.rows, result.kept = [], table.num_rows
    return result, table.combine_chunks()


@functools.cache
def empty_part(kind: DumpKind) -> bytes:
    """The Parquet part of a block without a kept row (most blocks of a monthly dump), made once."""
    sink = pa.BufferOutputStream()
    pq.write_table(rows_to_table([], REDDIT.lake_tables[kind]), sink, compression="zstd")
    return sink.getvalue().to_pybytes()


@dataclass(frozen=True)
class BlockJob:
    """One block of lines to parse (in a worker thread), and where to write its Parquet part."""

    block: LineBlock
    kind: DumpKind
    keep: IngestFilter
    source: str
    prefilter: bool
    part_path: Path


def run_block_job(job: BlockJob) -> BlockResult:
    """Parse one block and write its rows as a Parquet part: the fast path, or the per-line one for the
    few candidate lines of a monthly dump."""
    if job.prefilter:
        result = parse_lines(job.block, job.kind, job.keep, job.source, prefilter=True)
        table = rows_to_table(result.rows, REDDIT.lake_tables[job.kind], result.repaired)
        result.rows = []
    else:
        result, table = parse_block(job.block, job.kind, job.keep, job.source)
    if table.num_rows:
        dictionary = [name for name in table.column_names if name in DICTIONARY_COLUMNS]
        pq.write_table(table, job.part_path, compression="zstd", use_dictionary=dictionary)
    else:
        job.part_path.write_bytes(empty_part(job.kind))
    result.bytes_read = job.block.bytes_read
    return result
