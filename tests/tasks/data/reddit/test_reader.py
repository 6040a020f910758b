import io
import threading
from pathlib import Path

import pytest
import zstandard

from tasks.data.reddit.reader import DumpError, TruncatedDumpError, detect_format, iter_line_blocks

LINES = [b'{"id":"a1","body":"caf\xc3\xa9 \xe2\x9c\x93"}', b'{"id":"a2","body":"\xf0\x9f\x98\x80 ok"}']


def write_zstd(path: Path, payload: bytes, frames: int = 1) -> Path:
    """Stream-compress like Pushshift: a 2 GiB window declared, no content size recorded."""
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=31, enable_ldm=True)
    compressor = zstandard.ZstdCompressor(compression_params=params)
    size = len(payload) // frames
    pieces = [payload[i * size : (i + 1) * size if i < frames - 1 else None] for i in range(frames)]
    with path.open("wb") as handle:
        for piece in pieces:
            with compressor.stream_writer(handle, closefd=False) as writer:
                writer.write(piece)
    return path


def read_all(path: Path, **kwargs) -> list[bytes]:
    return [line for block in iter_line_blocks(path, **kwargs) for line in block.lines]


def test_reads_a_2gib_window_file_that_default_decoders_refuse(tmp_path):
    path = write_zstd(tmp_path / "RC.zst", b"\n".join(LINES) + b"\n")
    with pytest.raises(zstandard.ZstdError, match="too much memory"):
        zstandard.ZstdDecompressor().stream_reader(io.BytesIO(path.read_bytes())).read(10)
    assert read_all(path) == LINES


def test_reads_every_frame_of_a_multi_frame_file(tmp_path):
    payload = b"".join(b'{"id":"c%d"}\n' % i for i in range(3000))
    path = write_zstd(tmp_path / "multi.zst", payload, frames=3)
    assert read_all(path) == payload.split(b"\n")[:-1]


def test_characters_split_across_chunk_boundaries_survive(tmp_path):
    payload = b"\n".join(LINES * 50) + b"\n"
    zst = write_zstd(tmp_path / "x.zst", payload)
    plain = tmp_path / "x.ndjson"
    plain.write_bytes(payload)
    # One-byte reads cut every multi-byte character at some point.
    assert read_all(zst, read_size=1, min_block_bytes=7) == LINES * 50
    assert read_all(plain, read_size=3, min_block_bytes=5) == LINES * 50


def test_last_line_without_newline_is_kept(tmp_path):
    path = write_zstd(tmp_path / "x.zst", b"\n".join(LINES))
    assert read_all(path) == LINES


def test_line_numbers_are_contiguous_across_batches(tmp_path):
    payload = b"".join(b'{"id":"c%d"}\n' % i for i in range(100))
    path = tmp_path / "x.ndjson"
    path.write_bytes(payload)
    blocks = list(iter_line_blocks(path, read_size=64, min_block_bytes=64))
    assert len(blocks) > 5
    starts = [block.first_line for block in blocks]
    assert starts == [1 + sum(len(b.lines) for b in blocks[:i]) for i in range(len(blocks))]


def test_truncated_stream_fails_naming_the_file_after_handing_over_complete_lines(tmp_path):
    payload = b"".join(b'{"id":"c%d","text":"%s"}\n' % (i, b"x" * (i % 97)) for i in range(20000))
    full = write_zstd(tmp_path / "full.zst", payload)
    cut = tmp_path / "cut.zst"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    lines: list[bytes] = []
    with pytest.raises(TruncatedDumpError, match=r"cut\.zst.*truncated"):
        for block in iter_line_blocks(cut, min_block_bytes=1 << 12):
            lines.extend(block.lines)
    assert 0 < len(lines) < 20000
    assert lines == payload.split(b"\n")[: len(lines)]


def test_missing_empty_and_mislabelled_files_give_clear_errors(tmp_path):
    with pytest.raises(DumpError, match=r"nope\.zst: no such file"):
        detect_format(tmp_path / "nope.zst")
    for name in ("empty.zst", "empty.ndjson"):
        (tmp_path / name).write_bytes(b"")
        with pytest.raises(DumpError, match=rf"^\S*{name}: empty file \(0 bytes\)$"):
            detect_format(tmp_path / name)
    pdf = tmp_path / "paper.zst"
    pdf.write_bytes(b"%PDF-1.7 binary")
    with pytest.raises(DumpError, match=r"paper\.zst: not zstd data: it starts with b'%PDF-1\.7 binary'"):
        detect_format(pdf)
    gzipped = tmp_path / "RC.ndjson.gz"
    gzipped.write_bytes(b"\x1f\x8b\x08\x00rest")
    with pytest.raises(DumpError, match=r"RC\.ndjson\.gz: compressed with gzip; .* zstd"):
        detect_format(gzipped)
    corrupt = tmp_path / "corrupt.zst"
    corrupt.write_bytes(b"\x28\xb5\x2f\xfd" + b"\xff" * 64)
    with pytest.raises(DumpError, match=r"corrupt\.zst: corrupt zstd data"):
        read_all(corrupt)


def test_zstd_is_known_by_its_magic_number_and_anything_else_is_read_as_ndjson(tmp_path):
    assert detect_format(write_zstd(tmp_path / "RC_2019-01", b"{}\n")) == "zstd"
    for head in (b"[1, 2]\n{}\n", b'"text"\n', b"\xef\xbb\xbf{}\n", b"%PDF-1.7\n"):
        (tmp_path / "x.ndjson").write_bytes(head)
        assert detect_format(tmp_path / "x.ndjson") == "ndjson"
    assert read_all(tmp_path / "x.ndjson") == [b"%PDF-1.7"]


def test_a_byte_order_mark_is_stripped_from_the_first_line_only(tmp_path):
    bom = b"\xef\xbb\xbf"
    payload = bom + b"\n".join(LINES) + b"\n" + bom + LINES[0] + b"\n"
    plain = tmp_path / "x.ndjson"
    plain.write_bytes(payload)
    zst = write_zstd(tmp_path / "x.zst", payload)
    expected = [*LINES, bom + LINES[0]]
    assert read_all(plain) == read_all(plain, read_size=1, min_block_bytes=1) == expected
    assert read_all(zst) == read_all(zst, read_size=1, min_block_bytes=1) == expected


def test_a_reader_closed_early_stops_its_decompressing_thread(tmp_path):
    payload = b"".join(b'{"id":"c%d","body":"%s"}\n' % (i, b"x" * (i % 300)) for i in range(20000))
    path = write_zstd(tmp_path / "big.zst", payload)
    blocks = iter_line_blocks(path, min_block_bytes=1 << 12, read_size=512)
    assert next(blocks).first_line == 1
    blocks.close()
    assert [thread for thread in threading.enumerate() if thread.name == "zstd-read-ahead"] == []
