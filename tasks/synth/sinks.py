"""The two layouts' writers: per-subreddit files or monthly RS_/RC_ files, each a zstd NDJSON stream."""

import random
from pathlib import Path

import zstandard

from tasks.synth.others import OTHER_LINES_PER_LINE, OtherSubreddits, PopularSubreddits
from tasks.synth.timeline import MONTH_STARTS, month_label

_PARAMETERS = zstandard.ZstdCompressionParameters.from_level(
    3, window_log=31, threads=1, job_size=8 << 20, overlap_log=1, write_checksum=True
)
"""Like `zstd --long=31` on a stream: one frame that declares a 2 GiB window and no content size, so a
reader needs max_window_size=2**31. Multithreaded mode with 8 MiB jobs keeps the compressor near 30 MB
whatever the file size; long-distance matching (the rest of `--long`) would make zstd hold the whole
history in memory, up to 2 GiB, and only changes the compression ratio. zstd's multithreaded output does
not depend on the number of workers, so files stay byte-identical."""


class _ZstdLines:
    """One dump file: NDJSON lines streamed through zstd in a single frame."""

    def __init__(self, path: Path) -> None:
        self.path, self.lines = path, 0
        self._file = path.open("wb")
        self._writer = zstandard.ZstdCompressor(compression_params=_PARAMETERS).stream_writer(self._file)
        self._buffer: list[bytes] = []
        self._size = 0

    def write(self, lines: list[bytes]) -> int:
        self.lines += len(lines)
        self._buffer += lines
        self._size += sum(map(len, lines))
        if self._size > 1 << 20:
            self._flush()
        return len(lines)

    def _flush(self) -> None:
        if self._buffer:
            self._writer.write(b"\n".join(self._buffer) + b"\n")
        self._buffer, self._size = [], 0

    def close(self) -> None:
        self._flush()
        self._writer.close()


class SubredditSink:
    """`<subreddit>_submissions.zst` and `<subreddit>_comments.zst`, written side by side."""

    def __init__(self, out_dir: Path, subreddit: str) -> None:
        self._submissions = _ZstdLines(out_dir / f"{subreddit}_submissions.zst")
        self._comments = _ZstdLines(out_dir / f"{subreddit}_comments.zst")

    def start_month(self, month: int) -> None:
        pass

    def submission(self, lines: list[bytes], created: int) -> int:
        return self._submissions.write(lines)

    def comments(self, month: int, lines: list[bytes]) -> int:
        return self._comments.write(lines)

    def close(self) -> dict[Path, int]:
        for file in (self._submissions, self._comments):
            file.close()
        return {file.path: file.lines for file in (self._submissions, self._comments)}


class MonthlySink:
    """`RS_YYYY-MM.zst` and `RC_YYYY-MM.zst`, each mixing the subreddit's lines with other subreddits':
    `others` (some named like it) about as many, `popular` `others_per_line` times as many."""

    def __init__(
        self, out_dir: Path, others: OtherSubreddits, popular: PopularSubreddits,
        others_per_line: int = OTHER_LINES_PER_LINE,
    ) -> None:  # fmt: skip
        self._out_dir, self._others, self._popular = out_dir, others, popular
        self._per_line = others_per_line
        self._submissions: _ZstdLines | None = None
        self._counts: dict[Path, int] = {}

    def start_month(self, month: int) -> None:
        self._close_submissions()
        self._submissions = _ZstdLines(self._out_dir / f"RS_{month_label(month)}.zst")
        self._submissions.write(self._others.submissions(MONTH_STARTS[month] + 1, count=3))

    def submission(self, lines: list[bytes], created: int) -> int:
        assert self._submissions is not None
        bulk = self._popular.submissions(created, self._per_line * len(lines))
        return self._submissions.write(bulk + lines + self._others.submissions(created))

    def comments(self, month: int, lines: list[bytes]) -> int:
        file = _ZstdLines(self._out_dir / f"RC_{month_label(month)}.zst")
        mixed = _interleave(self._others.rng, lines, self._others.comments(month, count=len(lines) + 3))
        bulk = self._popular.comments(month, self._per_line * len(mixed))
        file.write(_interleave(self._popular.rng, mixed, bulk))
        file.close()
        self._counts[file.path] = file.lines
        return file.lines

    def _close_submissions(self) -> None:
        if self._submissions is not None:
            self._submissions.close()
            self._counts[self._submissions.path] = self._submissions.lines

    def close(self) -> dict[Path, int]:
        self._close_submissions()
        return dict(sorted(self._counts.items()))


Sink = SubredditSink | MonthlySink


def _interleave(rng: random.Random, ours: list[bytes], theirs: list[bytes]) -> list[bytes]:
    """Merge two lists of lines at random, keeping the order within each."""
    merged, i, j = [], 0, 0
    while i < len(ours) or j < len(theirs):
        if j == len(theirs) or (i < len(ours) and rng.random() < len(ours) / (len(ours) + len(theirs))):
            merged.append(ours[i])
            i += 1
        else:
            merged.append(theirs[j])
            j += 1
    return merged
