"""JSON Lines segments: the files a ledger's calls are recorded in, one per writing process.

`ledger/segments/<host>_<boot>_<pid namespace>_<pid>_<token>.jsonl`: the name says which process writes it
(the machine's name and boot, the process's pid and pid namespace, a random token), so no two writers ever
share a file, on one machine or several sharing the folder over a network file system. A record is one
line, appended by one `write(2)` to a file nobody else writes: a kill -9 leaves at most a last line without
its newline, which readers never read, and a write that fails (a full disk) is cut back to the line before
it. Each writer syncs its file to disk at most once a second (`SYNC_INTERVAL_S`), so an OS crash or power
cut loses at most the last second of records of each writer; a process kill loses nothing written.

A segment is sealed when its writer is known to write no more: this process's own after `rotate()`, or
one whose process is gone (same machine, same pid namespace, pid no longer running). Only sealed
segments are compacted (tasks/llm/compaction.py); another machine's segments wait for a run there.

Readers index a segment once and then only its new bytes: `index/<segment>.arrow` caches the index (the
rows of tasks/llm/ledger_rows.py and each line's offset), keyed by the bytes it covers.
"""

import contextlib
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from tasks.core.files import write_atomic
from tasks.llm.ledger_rows import CALL_ROWS, ParsedLines, parse_lines

SEGMENTS_DIR = "segments"
INDEX_DIR = "index"
SEGMENT_SUFFIX = ".jsonl"
SYNC_INTERVAL_S = 1.0
# Bytes read at a time when indexing a segment: memory stays bounded whatever the segment's size.
SCAN_CHUNK_BYTES = 64 * 2**20
# New bytes indexed before the cache is written again (a run's own small refreshes do not rewrite it).
CACHE_MIN_BYTES = 4 * 2**20
INDEX_SCHEMA = CALL_ROWS.append(pa.field("offset", pa.int64())).append(pa.field("length", pa.int64()))
# Chunks an index's rows may have before they are combined into one: each read of another process's new
# lines adds one, and every Arrow operation on the rows walks them (8,000 reads took 12.5 s; combined at 64,
# 0.5 s).
MAX_INDEX_CHUNKS = 64


class WriterIdentity(NamedTuple):
    """Who writes a segment: a machine (name, boot), a pid namespace, a pid, and a token of its own."""

    host: str
    boot: str
    pid_namespace: str
    pid: int
    token: str

    def segment_name(self) -> str:
        return f"{self.host}_{self.boot}_{self.pid_namespace}_{self.pid}_{self.token}{SEGMENT_SUFFIX}"

    @classmethod
    def of_segment(cls, name: str) -> "WriterIdentity | None":
        """The writer named by a segment's file name; None for a name no writer makes."""
        parts = name.removesuffix(SEGMENT_SUFFIX).split("_")
        if not name.endswith(SEGMENT_SUFFIX) or len(parts) != 5 or not parts[3].isdigit():
            return None
        return cls(parts[0], parts[1], parts[2], int(parts[3]), parts[4])


def new_writer() -> WriterIdentity:
    """This process as the writer of a new segment."""
    host, boot, namespace = this_machine()
    return WriterIdentity(host, boot, namespace, os.getpid(), secrets.token_hex(6))


def this_machine() -> tuple[str, str, str]:
    """(host name, boot id, pid namespace) of this process; '' where the system does not say (not Linux)."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()) or "host"
    boot = _read_or_empty(Path("/proc/sys/kernel/random/boot_id"))[:8]
    try:
        namespace = str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        namespace = ""
    return host, boot, namespace


def _read_or_empty(path: Path) -> str:
    try:
        return path.read_text().strip().replace("-", "")
    except OSError:
        return ""


def writer_is_gone(writer: WriterIdentity) -> bool:
    """Whether `writer` certainly writes no more: a process of this machine's boot and pid namespace that is
    not running. A process elsewhere (or on a system that does not say) is never assumed gone."""
    host, boot, namespace = this_machine()
    if (
        not boot
        or not namespace
        or (writer.host, writer.boot, writer.pid_namespace) != (host, boot, namespace)
    ):
        return False
    try:
        os.kill(writer.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # running, as another user
        return False
    return False


class SegmentWriter:
    """This process's segment of one ledger folder: appends one record line at a time, thread-safe."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._writer: WriterIdentity | None = None
        self._synced_at = 0.0

    @property
    def path(self) -> Path | None:
        """The segment written now; None before the first record (or since `rotate`)."""
        return None if self._writer is None else self.folder / self._writer.segment_name()

    def append(self, line: bytes) -> tuple[Path, int]:
        """Append `line` (one record, ending in a newline) → (its segment, its offset there)."""
        with self._lock:
            if self._writer is None or self._writer.pid != os.getpid():  # a forked child writes its own
                self._start()
            assert self._writer is not None
            path = self.folder / self._writer.segment_name()
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND)
            try:
                offset = os.fstat(descriptor).st_size
                try:
                    _write_all(descriptor, line)
                except BaseException:
                    self._cut_back(descriptor, offset)
                    raise
                if time.monotonic() - self._synced_at >= SYNC_INTERVAL_S:
                    os.fdatasync(descriptor)
                    self._synced_at = time.monotonic()
            finally:
                os.close(descriptor)
            return path, offset

    def rotate(self) -> Path | None:
        """Seal the segment written now (the next record starts a new one); return it, if there was one."""
        with self._lock:
            sealed, self._writer = self.path, None
            return sealed

    def _start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        writer = new_writer()
        descriptor = os.open(self.folder / writer.segment_name(), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(descriptor)
        _sync_folder(self.folder)  # the new file's name survives an OS crash with its first records
        self._writer, self._synced_at = writer, 0.0

    def _cut_back(self, descriptor: int, offset: int) -> None:
        """After a failed write: drop its part line, or, if that fails too, never append after it again."""
        try:
            os.ftruncate(descriptor, offset)
        except OSError:
            self._writer = None


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view) :]


def _sync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class SegmentIndex(NamedTuple):
    """A segment's records through its first `size` bytes: their rows and lines, and the lines that are
    not records (their offsets)."""

    rows: pa.Table  # CALL_ROWS
    offsets: np.ndarray
    lengths: np.ndarray
    size: int
    unreadable: list[int]

    @classmethod
    def empty(cls) -> "SegmentIndex":
        return cls(CALL_ROWS.empty_table(), np.empty(0, np.int64), np.empty(0, np.int64), 0, [])

    def extended(self, later: "SegmentIndex") -> "SegmentIndex":
        """This index followed by `later`, the lines after it (through `later.size`)."""
        rows = pa.concat_tables([self.rows, later.rows])
        if rows.column(0).num_chunks > MAX_INDEX_CHUNKS:
            rows = rows.combine_chunks()
        return SegmentIndex(
            rows,
            np.concatenate([self.offsets, later.offsets]),
            np.concatenate([self.lengths, later.lengths]),
            later.size,
            self.unreadable + later.unreadable,
        )


def index_segment(path: Path, known: SegmentIndex, size: int) -> SegmentIndex:
    """`known` extended with the lines `path` holds between `known.size` and `size` (its size now); a last
    line without its newline is left for later (it is being written, or its writer was killed)."""
    parts = [known]
    for start, parsed in segment_chunks(path, known.size, size):
        unreadable = [start + offset for offset in parsed.unreadable]
        parts.append(
            SegmentIndex(parsed.rows, parsed.offsets + start, parsed.lengths, start + parsed.end, unreadable)
        )
    return SegmentIndex(
        pa.concat_tables([part.rows for part in parts]),
        np.concatenate([part.offsets for part in parts]),
        np.concatenate([part.lengths for part in parts]),
        parts[-1].size,
        [offset for part in parts for offset in part.unreadable],
    )


def segment_chunks(path: Path, start: int, size: int) -> Iterator[tuple[int, ParsedLines]]:
    """The whole lines of `path` between `start` and `size`, parsed a chunk at a time: (chunk start, its
    lines). Memory stays bounded whatever the segment's size; a chunk grows only for a longer line."""
    chunk = SCAN_CHUNK_BYTES
    with open(path, "rb") as file:
        while start < size:
            file.seek(start)
            data = file.read(min(chunk, size - start))
            parsed = parse_lines(data)
            if parsed.end == 0:
                if len(data) < chunk:  # the last line has no newline yet
                    return
                chunk *= 2
                continue
            yield start, parsed
            start += parsed.end
            chunk = SCAN_CHUNK_BYTES


def cache_path(root: Path, segment: Path) -> Path:
    return root / INDEX_DIR / f"{segment.name}.arrow"


def read_cached_index(root: Path, segment: Path, size: int) -> SegmentIndex:
    """The cached index of `segment`, if one covers no more than its `size` bytes; else an empty one."""
    try:
        with pa.memory_map(str(cache_path(root, segment))) as source:
            table = pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowInvalid):
        return SegmentIndex.empty()
    metadata = table.schema.metadata or {}
    covered = int(metadata.get(b"size", b"-1"))
    if not 0 <= covered <= size or table.schema.remove_metadata() != INDEX_SCHEMA:
        return SegmentIndex.empty()
    unreadable = [int(offset) for offset in metadata.get(b"unreadable", b"").split()]
    return SegmentIndex(
        table.select(CALL_ROWS.names),
        table["offset"].to_numpy(),
        table["length"].to_numpy(),
        covered,
        unreadable,
    )


def write_cached_index(root: Path, segment: Path, index: SegmentIndex) -> None:
    """Cache `index` of `segment`, atomically."""
    table = index.rows.append_column("offset", pa.array(index.offsets, pa.int64()))
    table = table.append_column("length", pa.array(index.lengths, pa.int64()))
    metadata = {"size": str(index.size), "unreadable": " ".join(map(str, index.unreadable))}
    table = table.replace_schema_metadata(metadata)
    options = pa.ipc.IpcWriteOptions(compression="zstd")

    def write(tmp: Path) -> None:
        with pa.ipc.new_file(str(tmp), table.schema, options=options) as writer:
            writer.write_table(table)

    with contextlib.suppress(OSError):  # a folder nobody may write keeps no cache: it only saves time
        write_atomic(cache_path(root, segment), write)
