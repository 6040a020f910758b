"""The one Pushshift reader: stream a `.zst` or plain NDJSON dump as batches of raw lines.

Lines stay bytes: a chunk boundary can split a multi-byte UTF-8 character, but never a b"\\n", so
splitting bytes on newlines needs no decode-and-retry dance, and orjson validates UTF-8 per line.
"""

import functools
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

import zstandard

from tasks.core.preflight import UserError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
OTHER_COMPRESSIONS = {"gzip": b"\x1f\x8b", "bzip2": b"BZh", "xz": b"\xfd7zXZ\x00"}
# Editors on Windows start UTF-8 text with one; it is not part of the first record.
BYTE_ORDER_MARK = b"\xef\xbb\xbf"
# Pushshift compressed with `--long=31`; a smaller limit refuses their frames.
MAX_WINDOW_SIZE = 2**31
COMPRESSED_READ_BYTES = 1 << 18
PLAIN_READ_BYTES = 1 << 23
# Decompressed chunks read ahead by the decompressing thread (about 2 MiB each).
READ_AHEAD_CHUNKS = 8
_T = TypeVar("_T")


class DumpError(UserError):
    """A dump that cannot be read; the message names the file and what to do."""


class TruncatedDumpError(DumpError):
    """The zstd stream ends inside a frame: the file was cut short (an interrupted download?)."""


@dataclass(frozen=True)
class LineBlock:
    """Consecutive complete lines of a dump as one bytes object; `first_line` is 1-based."""

    first_line: int
    data: bytes
    bytes_read: int

    @property
    def lines(self) -> list[bytes]:
        lines = self.data.split(b"\n")
        if lines and not lines[-1]:
            lines.pop()
        return lines

    @functools.cached_property  # counted once, where the block is cut
    def line_count(self) -> int:
        return self.data.count(b"\n") + (not self.data.endswith(b"\n") and bool(self.data))


def detect_format(path: Path) -> str:
    """Return 'zstd' (by its magic number) or 'ndjson' (anything else not named .zst).

    NDJSON is not sniffed: its first line is parsed like any other, so a bad one is quarantined, not fatal.
    Raises DumpError for a missing or empty file, a `.zst` without the zstd magic, or another compression.
    """
    if not path.is_file():
        raise DumpError(f"{path}: no such file")
    with path.open("rb") as handle:
        head = handle.read(16)
    if not head:
        raise DumpError(f"{path}: empty file (0 bytes)")
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    for compression, magic in OTHER_COMPRESSIONS.items():
        if head.startswith(magic):
            raise DumpError(
                f"{path}: compressed with {compression}; decompress it, or recompress it with zstd"
            )
    if path.suffix == ".zst":
        raise DumpError(
            f"{path}: not zstd data: it starts with {head!r}, not the zstd magic number "
            "(a corrupt or mislabelled download?)"
        )
    return "ndjson"


def _zstd_chunks(handle: BinaryIO, path: Path, read_size: int) -> Iterator[tuple[bytes, int]]:
    """Decompress every frame of a zstd file; yield (decompressed bytes, compressed bytes read so far)."""
    decompressor = zstandard.ZstdDecompressor(max_window_size=MAX_WINDOW_SIZE)
    frame = decompressor.decompressobj()
    inside_frame = False
    consumed = 0
    while compressed := handle.read(read_size):
        consumed += len(compressed)
        while compressed:
            inside_frame = True
            try:
                output = frame.decompress(compressed)
            except zstandard.ZstdError as error:
                raise DumpError(f"{path}: corrupt zstd data near byte {consumed:,}: {error}") from error
            if output:
                yield output, consumed
            if frame.eof:
                compressed = frame.unused_data
                frame = decompressor.decompressobj()
                inside_frame = False
            else:
                compressed = b""
    if inside_frame:
        raise TruncatedDumpError(
            f"{path}: the zstd stream ends inside a frame after {consumed:,} bytes; the file is "
            "truncated. Download it again, or pass --keep-truncated to keep the records read so far."
        )


def _plain_chunks(handle: BinaryIO, read_size: int) -> Iterator[tuple[bytes, int]]:
    consumed = 0
    while chunk := handle.read(read_size):
        consumed += len(chunk)
        yield chunk, consumed


def _read_ahead(items: Iterator[_T], depth: int = READ_AHEAD_CHUNKS) -> Iterator[_T]:
    """Yield `items`, produced by a thread up to `depth` ahead; its exception is raised here, in order.

    zstd decompresses without holding the GIL, so a file decompresses on one core while this thread
    cuts, filters and hands out the blocks. Closing the generator stops the thread.
    """
    handoff: queue.Queue[tuple[bool, _T | BaseException | None]] = queue.Queue(depth)
    stop = threading.Event()

    def put(entry: tuple[bool, _T | BaseException | None]) -> bool:
        while not stop.is_set():
            try:
                handoff.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((True, item)):
                    return
            put((False, None))
        except BaseException as error:  # handed to the consumer, which raises it
            put((False, error))

    thread = threading.Thread(target=produce, name="zstd-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            is_item, value = handoff.get()
            if is_item:
                yield value  # type: ignore[misc]
            elif value is None:
                return
            else:
                raise value  # type: ignore[misc]
    finally:
        stop.set()
        thread.join()


def iter_line_blocks(
    path: Path, min_block_bytes: int = 1 << 22, read_size: int | None = None
) -> Iterator[LineBlock]:
    """Yield the lines of a dump in order, as blocks of complete lines of at least `min_block_bytes`.

    Memory stays bounded by the block size (plus the zstd window), whatever the file size. A last line
    without a trailing newline is kept. Raises DumpError / TruncatedDumpError naming the file; on a
    truncated stream the complete lines read before the cut are yielded first.
    `read_size` (bytes read from disk per step) exists for tests that force chunk boundaries.
    """
    kind = detect_format(path)
    next_line = 1
    consumed = 0
    # Pieces of the next block; only the piece holding a block's last newline is ever sliced, so each
    # byte is copied once (by the join).
    pending: list[bytes] = []
    pending_bytes = 0

    def block_of(data: bytes, bytes_read: int) -> LineBlock:
        nonlocal next_line
        if next_line == 1:
            data = data.removeprefix(BYTE_ORDER_MARK)
        block = LineBlock(next_line, data, bytes_read)
        next_line += block.line_count
        return block

    with path.open("rb") as handle:
        if kind == "zstd":
            chunks = _read_ahead(_zstd_chunks(handle, path, read_size or COMPRESSED_READ_BYTES))
        else:
            chunks = _plain_chunks(handle, read_size or PLAIN_READ_BYTES)
        try:
            for chunk, consumed in chunks:
                pending.append(chunk)
                pending_bytes += len(chunk)
                cut = chunk.rfind(b"\n") + 1 if pending_bytes >= min_block_bytes else 0
                if cut:
                    pending[-1] = chunk[:cut]
                    yield block_of(b"".join(pending), consumed)
                    pending = [chunk[cut:]]
                    pending_bytes = len(pending[0])
        except TruncatedDumpError:
            # Hand over the complete lines read so far (the cut last line is lost), then report.
            data = b"".join(pending)
            if complete := data[: data.rfind(b"\n") + 1]:
                yield block_of(complete, consumed)
            raise
    if data := b"".join(pending):
        yield block_of(data, consumed)
