"""Synthetic r/AskDocs Pushshift dumps whose dataset is known by construction.

`generate_dumps` writes zstd NDJSON dumps shaped like the real ones (shared/spec/pushshift-format.md):
fields and types drift by era, flair comes in every shape AskDocs used, bots, deleted, removed and image
posts abound, and a few lines are malformed or duplicated. A few percent of posts carry *designed*
comment trees: applying shared/spec/dataset.md to them selects a branch known in advance (or none),
and every trap (ties, tombstones, impostors, filtered answers, post-level drops...) occurs at any scale
from 1,000 posts. `truth/` lists the rows the build must produce. All other posts are noise that can
never yield a thread: no top-level subtree of theirs holds more than one OP comment, so no branch
reaches three questions.

Two random streams keep the subreddit's lines identical in both layouts: one draws everything about
the subreddit, the other only the other subreddits' records that share the monthly files. README.md
says which module holds which piece.
"""

import random
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow.parquet as pq
from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.synth.others import OTHER_LINES_PER_LINE, OtherSubreddits, PopularSubreddits
from tasks.synth.people import People
from tasks.synth.plans import Plan, plan_posts
from tasks.synth.render import Encoder, Renderer
from tasks.synth.sinks import MonthlySink, Sink, SubredditSink
from tasks.synth.subreddit import SubredditStream
from tasks.synth.timeline import MONTH_STARTS, MONTHS, post_times
from tasks.synth.truth import truth_tables


@dataclass(frozen=True)
class SynthSummary:
    """What `generate_dumps` wrote: dump files with their line counts, the truth, the expectations."""

    files: tuple[Path, ...]
    records: dict[str, int]  # lines per dump file name, malformed and duplicate lines included
    truth_threads: Path
    truth_qa_pairs: Path
    full_threads: int
    answered_threads: int
    seconds: float

    @property
    def total_records(self) -> int:
        return sum(self.records.values())


_LINES_PER_PROGRESS = 10_000


class _Progress:
    """Reports the lines written so far to the caller, every _LINES_PER_PROGRESS lines and at the end."""

    def __init__(self, callback: Callable[[int], None] | None) -> None:
        self._callback, self.lines, self._next = callback, 0, _LINES_PER_PROGRESS

    def add(self, lines: int) -> None:
        self.lines += lines
        if self._callback is not None and self.lines >= self._next:
            self._callback(self.lines)
            self._next = self.lines + _LINES_PER_PROGRESS

    def done(self) -> None:
        if self._callback is not None:
            self._callback(self.lines)


def _months(times: list[int]) -> Iterator[tuple[int, range]]:
    """Each month with posts, with the indices of the posts created in it."""
    for month in range(MONTHS - 1):
        yield (
            month,
            range(bisect_left(times, MONTH_STARTS[month]), bisect_left(times, MONTH_STARTS[month + 1])),
        )


def _write_dumps(
    stream: SubredditStream, times: list[int], plans: dict[int, Plan], sink: Sink, progress: _Progress
) -> None:
    """Posts month by month; a month's comments once no later post can reply into it."""
    renderer, encoder = Renderer(stream.rng), Encoder(stream.rng)

    def release(month: int) -> None:
        lines = []
        for comment in stream.forge.queue.release(month):
            lines += encoder.lines(renderer.comment(comment), created=comment.created, inert=comment.inert)
        progress.add(sink.comments(month, lines))

    for month, indices in _months(times):
        if month:
            release(month - 1)
        sink.start_month(month)
        for index in indices:
            post = stream.post(times[index], plans.get(index))
            lines = encoder.lines(renderer.submission(post), created=post.created, inert=post.inert)
            progress.add(sink.submission(lines, post.created))
    release(MONTHS - 2)
    release(MONTHS - 1)


def generate_dumps(
    out_dir: Path,
    posts: int,
    seed: int,
    layout: Literal["subreddit", "monthly"] = "subreddit",
    subreddit: str = "AskDocs",
    progress: Callable[[int], None] | None = None,
    others_per_line: int = OTHER_LINES_PER_LINE,
) -> SynthSummary:
    """Write dumps holding `posts` subreddit posts inside the default window (and ~3% outside it) with
    their comments, plus `truth/` with the designed outcomes. The same arguments give the same bytes."""
    if layout not in ("subreddit", "monthly"):
        raise ValueError(f"layout must be 'subreddit' or 'monthly', not {layout!r}")
    started = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    people = People(rng, posts)
    times = post_times(rng, posts)
    plans = plan_posts(rng, times, posts)
    stream = SubredditStream(rng, people, subreddit)
    if layout == "subreddit":
        sink: Sink = SubredditSink(out_dir, subreddit)
    else:
        popular = PopularSubreddits(seed, people)
        sink = MonthlySink(out_dir, OtherSubreddits(seed, people), popular, others_per_line)
    counter = _Progress(progress)
    _write_dumps(stream, times, plans, sink, counter)
    counts = sink.close()
    counter.done()
    threads, pairs = truth_tables(stream.truths)
    truth_dir = out_dir / "truth"
    truth_dir.mkdir(exist_ok=True)
    pq.write_table(threads, truth_dir / "threads.parquet")
    pq.write_table(pairs, truth_dir / "qa_pairs.parquet")
    return SynthSummary(
        files=tuple(counts),
        records={path.name: lines for path, lines in counts.items()},
        truth_threads=truth_dir / "threads.parquet",
        truth_qa_pairs=truth_dir / "qa_pairs.parquet",
        full_threads=sum(threads["in_full"].to_pylist()),
        answered_threads=sum(threads["in_answered"].to_pylist()),
        seconds=time.perf_counter() - started,
    )


@task(name="write-synthetic-dumps", cache_policy=NO_CACHE)
def write_synthetic_dumps(
    out_dir: str, posts: int, seed: int, layout: Literal["subreddit", "monthly"] = "subreddit"
) -> dict[str, Any]:
    """Dumps and truth tables -> out_dir (see generate_dumps); return the files, line total, expectations."""
    summary = generate_dumps(Path(out_dir), posts, seed, layout)
    return {
        "files": [str(path) for path in summary.files],
        "records": summary.total_records,
        "truth_dir": str(summary.truth_threads.parent),
        "full_threads": summary.full_threads,
        "answered_threads": summary.answered_threads,
        "seconds": summary.seconds,
    }
