"""Compaction: a ledger's sealed segments merged into one Parquet file, written durably, then removed.

`ledger/compacted/<time>-<token>.parquet` holds one row per call key (`COMPACTED`: the typed columns of
tasks/llm/ledger_rows.py, and the record whole in `record`, the JSON line it was written as), in the order
the records were written, so a resume walking its plan reads them a row group at a time. Only each key's
outcome is kept (its success, else its latest failure: what the ledger reads anyway); lines that were not
records (a writer killed mid-line, a disk that failed) are counted and named, never read as calls.

The file is written to a temporary name, synced, renamed and its folder synced before any input is
removed: a kill -9 or an OS crash at any point leaves the inputs, or the new file, or both (the same
records twice, which read as once). One process compacts a folder at a time (an flock, released by the OS
if it dies); another finds it taken and leaves the work to it.
"""

import fcntl
import os
import secrets
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.llm.ledger_rows import CALL_ROWS, COMPACTED, RECORD_COLUMN, outcome_indices
from tasks.llm.segments import (
    SEGMENT_SUFFIX,
    SEGMENTS_DIR,
    SegmentIndex,
    WriterIdentity,
    cache_path,
    index_segment,
    read_cached_index,
    writer_is_gone,
)

COMPACTED_DIR = "compacted"
COMPACTED_SUFFIX = ".parquet"
# Rows per row group: what one record read from a compacted file decodes (about 8 MB of records).
ROW_GROUP_ROWS = 8192
# Compacted files merged into the next one once there are this many (a long history of resumed runs).
MAX_COMPACTED_FILES = 4
LOCK_FILE = ".compaction.lock"


class Compaction(NamedTuple):
    """What one compaction did: the file written, its records, the files it replaced, and the lines of
    its segments that were not records ('<segment>@<offset>'), dropped with them."""

    written: Path
    records: int
    segments: int
    files: int
    unreadable: list[str]


def compacted_files(root: Path) -> list[Path]:
    """The compacted files of the ledger folder `root`, oldest first."""
    folder = root / COMPACTED_DIR
    return sorted(folder.glob(f"*{COMPACTED_SUFFIX}")) if folder.is_dir() else []


def sealed_segments(root: Path, sealed_here: Collection[Path]) -> list[Path]:
    """The segments of `root` no process writes any more: `sealed_here` (this process's) and those whose
    writer is gone."""
    folder = root / SEGMENTS_DIR
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob(f"*{SEGMENT_SUFFIX}")):
        writer = WriterIdentity.of_segment(path.name)
        if path in sealed_here or (writer is not None and writer_is_gone(writer)):
            found.append(path)
    return found


def compact(root: Path, sealed_here: Collection[Path]) -> Compaction | None:
    """Merge the sealed segments of the ledger folder `root` (and its compacted files, once there are
    MAX_COMPACTED_FILES) into one compacted file; None when there is nothing to merge or another process is
    compacting the folder."""
    with held_lock(root) as held:
        if not held:
            return None
        segments = sealed_segments(root, sealed_here)
        files = compacted_files(root)
        files = files if len(files) >= MAX_COMPACTED_FILES else []
        if not segments and not files:
            return None
        # In the order every reader reads them (call_store.CallStore._order): the same outcome of each key.
        inputs = [_FileInput(path) for path in files] + [_SegmentInput(root, path) for path in segments]
        kept = _split(_kept_rows(inputs), [len(source.rows) for source in inputs])
        written = write_compacted(
            root, (batch for source, mask in zip(inputs, kept, strict=True) for batch in source.batches(mask))
        )
        for source in inputs:
            source.remove()
        unreadable = [place for source in inputs for place in source.unreadable()]
        return Compaction(
            written, pq.ParquetFile(written).metadata.num_rows, len(segments), len(files), unreadable
        )


def write_compacted(root: Path, batches: Iterator[pa.Table]) -> Path:
    """Write `batches` (COMPACTED) as a new compacted file of `root`, durably; return its path."""
    folder = root / COMPACTED_DIR
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{secrets.token_hex(4)}{COMPACTED_SUFFIX}"

    def write(tmp: Path) -> None:
        with pq.ParquetWriter(tmp, COMPACTED, compression="zstd") as writer:
            for group in _row_groups(batches):
                writer.write_table(group.cast(COMPACTED), row_group_size=ROW_GROUP_ROWS)

    return write_durably(folder / name, write)


def write_durably(path: Path, write: Callable[[Path], object]) -> Path:
    """`write(temporary path)`, then sync it, rename it to `path` and sync the folder: after an OS crash
    the file is there whole, or not at all."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        _sync(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync(path.parent)
    return path


def _sync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _row_groups(batches: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """`batches` regrouped into tables of ROW_GROUP_ROWS rows (the last one shorter)."""
    pending: list[pa.Table] = []
    rows = 0
    for batch in batches:
        pending.append(batch)
        rows += batch.num_rows
        while rows >= ROW_GROUP_ROWS:
            table = pa.concat_tables(pending)
            yield table.slice(0, ROW_GROUP_ROWS)
            pending, rows = [table.slice(ROW_GROUP_ROWS)], rows - ROW_GROUP_ROWS
    if rows:
        yield pa.concat_tables(pending)


def read_compacted_rows(path: Path) -> pa.Table:
    """The CALL_ROWS of a compacted file (its records are read one row group at a time, when asked)."""
    return pq.read_table(path, columns=CALL_ROWS.names).cast(CALL_ROWS)


def _kept_rows(inputs: list["_SegmentInput | _FileInput"]) -> np.ndarray:
    """Whether each row of the inputs (in order) is its key's outcome."""
    rows = pa.concat_tables([source.rows for source in inputs])
    kept = np.zeros(rows.num_rows, bool)
    kept[outcome_indices(rows)] = True
    return kept


def _split(mask: np.ndarray, lengths: list[int]) -> list[np.ndarray]:
    return np.split(mask, np.cumsum(lengths)[:-1]) if lengths else []


class _SegmentInput:
    """A sealed segment being compacted: its rows (from its cached index, then the bytes after it)."""

    def __init__(self, root: Path, path: Path) -> None:
        self.root, self.path = root, path
        size = path.stat().st_size
        self.index: SegmentIndex = index_segment(path, read_cached_index(root, path, size), size)
        self.rows = self.index.rows
        self.torn = size - self.index.size  # a last line without its newline: its writer was killed

    def batches(self, kept: np.ndarray) -> Iterator[pa.Table]:
        """The kept rows with their records, ROW_GROUP_ROWS lines at a time."""
        with open(self.path, "rb") as file:
            for start in range(0, len(self.rows), ROW_GROUP_ROWS):
                stop = min(start + ROW_GROUP_ROWS, len(self.rows))
                offsets, lengths = self.index.offsets[start:stop], self.index.lengths[start:stop]
                file.seek(offsets[0])
                data = file.read(int(offsets[-1] + lengths[-1] - offsets[0]))
                base = int(offsets[0])
                lines = [
                    data[offset - base : offset - base + length]
                    for offset, length in zip(offsets.tolist(), lengths.tolist(), strict=True)
                ]
                records = pa.array(lines, pa.binary()).cast(pa.string())
                rows = self.rows.slice(start, stop - start).append_column(RECORD_COLUMN, records)
                yield rows.filter(pa.array(kept[start:stop]))

    def unreadable(self) -> list[str]:
        places = [f"{self.path.name}@{offset}" for offset in self.index.unreadable]
        return places + ([f"{self.path.name}@{self.index.size}"] if self.torn else [])

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        cache_path(self.root, self.path).unlink(missing_ok=True)


class _FileInput:
    """A compacted file merged into the next one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows = read_compacted_rows(path)

    def batches(self, kept: np.ndarray) -> Iterator[pa.Table]:
        file = pq.ParquetFile(self.path)
        start = 0
        for group in range(file.num_row_groups):
            table = file.read_row_group(group).cast(COMPACTED)
            yield table.filter(pa.array(kept[start : start + table.num_rows]))
            start += table.num_rows

    def unreadable(self) -> list[str]:
        return []

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


@contextmanager
def held_lock(root: Path, wait: bool = False) -> Iterator[bool]:
    """Hold the folder's compaction lock in the body (an flock): yields False when another process has it,
    unless `wait`, which waits for it."""
    path = root / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(descriptor)
