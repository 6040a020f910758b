"""The one Pushshift reader: stream a `.zst` or plain NDJSON dump as batches of raw lines.

Lines stay bytes: a chunk boundary can split a multi-byte UTF-8 character, but never a b"\\n", so
splitting bytes on newlines needs no decode-and-retry dance, and orjson validates UTF-8 per line.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import zstandard

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Pushshift compressed with `--long=31`; a smaller limit refuses their frames.
MAX_WINDOW_SIZE = 2**31
COMPRESSED_READ_BYTES = 1 << 18
PLAIN_READ_BYTES = 1 << 23


class DumpError(Exception):
    """A dump that cannot be read; the message names the file and what to do."""


class TruncatedDumpError(DumpError):
    """The zstd stream ends inside a frame: the file was cut short (an interrupted download?)."""


@dataclass(frozen=True)
class LineBatch:
    """Consecutive lines of a dump; `first_line` is the 1-based line number of `lines[0]`."""

    first_line: int
    lines: list[bytes]
    bytes_read: int


def detect_format(path: Path) -> str:
    """Return 'zstd' or 'ndjson' from the first bytes; raise DumpError for anything else."""
    if not path.is_file():
        raise DumpError(f"{path}: no such file")
    with path.open("rb") as handle:
        head = handle.read(4096)
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    stripped = head.lstrip()
    if not stripped or stripped.startswith(b"{"):
        return "ndjson"
    raise DumpError(f"{path}: neither a zstd file nor NDJSON (starts with {head[:16]!r})")


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


def iter_line_batches(
    path: Path, min_batch_bytes: int = 1 << 24, read_size: int | None = None
) -> Iterator[LineBatch]:
    """Yield the lines of a dump in order, in batches of at least `min_batch_bytes` of text.

    `read_size` (bytes read from disk per step) exists for tests that force chunk boundaries.
    Memory stays bounded by the batch size (plus the zstd window), whatever the file size. A last line
    without a trailing newline is kept. Raises DumpError / TruncatedDumpError naming the file.
    """
    kind = detect_format(path)
    next_line = 1
    pending: list[bytes] = []
    pending_bytes = 0
    tail = b""
    consumed = 0
    with path.open("rb") as handle:
        if kind == "zstd":
            chunks = _zstd_chunks(handle, path, read_size or COMPRESSED_READ_BYTES)
        else:
            chunks = _plain_chunks(handle, read_size or PLAIN_READ_BYTES)
        try:
            for chunk, consumed in chunks:
                pieces = (tail + chunk).split(b"\n")
                tail = pieces.pop()
                pending.extend(pieces)
                pending_bytes += len(chunk)
                if pending_bytes >= min_batch_bytes:
                    yield LineBatch(next_line, pending, consumed)
                    next_line += len(pending)
                    pending, pending_bytes = [], 0
        except TruncatedDumpError:
            # Hand over the complete lines read so far (the cut last line is lost), then report.
            if pending:
                yield LineBatch(next_line, pending, consumed)
            raise
    if tail:
        pending.append(tail)
    if pending:
        yield LineBatch(next_line, pending, consumed)
