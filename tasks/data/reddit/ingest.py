"""Streaming ingest: one dump file -> typed Parquet in the raw layer, bad lines quarantined.

A dump is read once, in bounded memory. Records of other subreddits and posts outside the time window
are dropped as early as possible (in all-of-Reddit monthly dumps, before any JSON is parsed). Each
dump gets its own folder `raw/<table>/source=<file name>-<path hash>/`, written under a temporary
name and renamed when complete, with an `_ingest.json` receipt (fingerprint, settings, counts) that
lets a later build skip files it already holds.
"""

import hashlib
import json
import os
import re
import shutil
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from prefect import get_run_logger, task
from prefect.artifacts import create_progress_artifact, update_progress_artifact

from tasks.core.provenance import artifact_key
from tasks.data.lake import partition_dir, source_key
from tasks.data.reddit.blocks import BlockJob, run_block_job
from tasks.data.reddit.contracts import RAW_REJECTS
from tasks.data.reddit.reader import DumpError, TruncatedDumpError, iter_line_blocks
from tasks.data.reddit.records import BlockResult, DumpKind, IngestFilter, rows_to_table
from tasks.data.sources import REDDIT

MONTHLY_DUMP_NAME = re.compile(r"^R[SC]_\d{4}-\d{2}")
RECEIPT_NAME = "_ingest.json"
PROGRESS_EVERY_SECONDS = 5.0
# Blocks are parsed by DuckDB and written by Arrow, which release the GIL: one thread per core parses
# while another decompresses.
DEFAULT_WORKERS = os.cpu_count() or 1
# Below this compressed size a dump is parsed in the calling thread: a block or two gain nothing from a pool.
POOL_MIN_BYTES = 16 << 20
# Bytes of lines per block (and Parquet part): large blocks spread the fixed cost of each DuckDB query
# and Arrow call; at most 4 per worker are in flight.
BLOCK_BYTES = 16 << 20


@dataclass
class IngestSummary:
    """Counts of one dump's ingest; `dropped` and `rejected` are keyed by reason, `repaired` (values of kept
    records that lost part of their value when cast to their column's type) by column."""

    source_file: str
    kind: str
    lines: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    repaired: Counter = field(default_factory=Counter)
    truncated: bool = False
    bytes_read: int = 0
    seconds: float = 0.0

    def add(self, result: BlockResult) -> None:
        self.lines += result.lines
        self.kept += result.kept
        self.dropped.update(result.dropped)
        self.rejected.update(result.rejected)
        self.repaired.update(result.repaired)
        self.bytes_read = max(self.bytes_read, result.bytes_read)

    def to_json(self) -> dict[str, Any]:
        counts = {
            "dropped": dict(self.dropped),
            "rejected": dict(self.rejected),
            "repaired": dict(self.repaired),
        }
        return {**asdict(self), **counts}


# --- file-level I/O -------------------------------------------------------------------------------


def file_fingerprint(path: Path) -> dict[str, Any]:
    """Size, modification time and sha256 of a dump (the sha256 proves identity when mtime changed)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest.hexdigest()}


def receipt_matches(receipt: dict[str, Any], path: Path, settings_key: dict[str, Any]) -> bool:
    """Whether a stored receipt describes this very file ingested with these settings, and holds every
    count an ingest makes now (a receipt without `repaired` predates its count: the dump is read again)."""
    stored = receipt.get("fingerprint", {})
    if receipt.get("settings") != settings_key or receipt.get("complete") is not True:
        return False
    if "repaired" not in receipt.get("summary", {}):
        return False
    stat = path.stat()
    if stored.get("size") != stat.st_size:
        return False
    if stored.get("mtime_ns") == stat.st_mtime_ns:
        return True
    return stored.get("sha256") == file_fingerprint(path)["sha256"]


def settings_key(kind: DumpKind, keep: IngestFilter, keep_truncated: bool) -> dict[str, Any]:
    return {"kind": kind, "subreddit": keep.subreddit.lower(), "start": keep.start.isoformat(),
            "end": keep.end.isoformat(), "keep_truncated": keep_truncated}  # fmt: skip


def _results_in_order(jobs: Iterator[BlockJob], workers: int) -> Iterator[BlockResult]:
    """Run block jobs on `workers` threads (0: in this one), yielding results in input order.

    Threads, not processes: DuckDB, Arrow and the Parquet writer work without the GIL, so blocks need
    no pickling. At most four blocks per worker are in flight: memory stays bounded whatever the file.
    """
    if workers == 0:
        yield from map(run_block_job, jobs)
        return
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ingest-block") as pool:
        in_flight: deque[Future[BlockResult]] = deque()
        for job in jobs:
            in_flight.append(pool.submit(run_block_job, job))
            if len(in_flight) >= 4 * workers:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()


def ingest_dump(
    path: Path, kind: DumpKind, lake_dir: Path, keep: IngestFilter, keep_truncated: bool = False,
    workers: int = 0, on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Stream one dump into the raw layer; return its receipt (also written as `_ingest.json`).

    A thread decompresses; `workers` threads parse and write Parquet parts (0: the calling thread).
    Raises DumpError for unreadable files and dumps without records, TruncatedDumpError for a cut zstd
    stream unless `keep_truncated`, in which case the complete records read so far are kept and flagged.
    Whatever ends it early (an error, Ctrl-C), no partial folder is left behind.
    """
    key = source_key(path)
    final_dirs = [
        partition_dir(lake_dir, contract, key) for contract in (REDDIT.lake_tables[kind], RAW_REJECTS)
    ]
    work_dirs = [folder.with_name(f"{folder.name}.partial-{os.getpid()}") for folder in final_dirs]
    for folder in work_dirs:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    try:
        summary, rejects = _stream_dump(path, kind, work_dirs[0], keep, keep_truncated, workers, on_progress)
        check_has_records(path, summary)
        receipt = {
            "source_file": path.name,
            "source_key": key,
            "path": str(path.resolve()),
            "fingerprint": file_fingerprint(path),
            "settings": settings_key(kind, keep, keep_truncated),
            "summary": summary.to_json(),
            "complete": True,
        }
        (work_dirs[0] / RECEIPT_NAME).write_text(json.dumps(receipt, indent=2))
        pq.write_table(rows_to_table(rejects, RAW_REJECTS), work_dirs[1] / "part-0.parquet")
    except BaseException:
        for folder in work_dirs:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    # Rejects first: the raw folder holds the receipt that marks the dump as done.
    for work_dir, final_dir in reversed(list(zip(work_dirs, final_dirs, strict=True))):
        shutil.rmtree(final_dir, ignore_errors=True)
        work_dir.rename(final_dir)
    return receipt


def _stream_dump(
    path: Path, kind: DumpKind, work_dir: Path, keep: IngestFilter, keep_truncated: bool, workers: int,
    on_progress: Callable[[dict[str, Any]], None] | None,
) -> tuple[IngestSummary, list[tuple]]:  # fmt: skip
    """Write the Parquet parts of one dump into `work_dir`; return its counts and quarantined lines."""
    summary = IngestSummary(source_file=path.name, kind=kind)
    prefilter = bool(MONTHLY_DUMP_NAME.match(path.name))
    total_bytes = path.stat().st_size
    started = last_report = time.monotonic()
    rejects: list[tuple] = []
    jobs = (
        BlockJob(block, kind, keep, path.name, prefilter, work_dir / f"part-{index:05d}.parquet")
        for index, block in enumerate(iter_line_blocks(path, BLOCK_BYTES))
    )
    try:
        for result in _results_in_order(jobs, workers if total_bytes >= POOL_MIN_BYTES else 0):
            summary.add(result)
            rejects += result.rejects
            if on_progress and time.monotonic() - last_report >= PROGRESS_EVERY_SECONDS:
                last_report = time.monotonic()
                on_progress(_progress(summary, total_bytes, last_report - started))
    except TruncatedDumpError:
        if not keep_truncated:
            raise
        summary.truncated = True
    if not any(work_dir.glob("*.parquet")):
        pq.write_table(rows_to_table([], REDDIT.lake_tables[kind]), work_dir / "part-00000.parquet")
    summary.seconds = round(time.monotonic() - started, 3)
    if on_progress:
        on_progress(_progress(summary, total_bytes, summary.seconds))
    return summary, rejects


def check_has_records(path: Path, summary: IngestSummary) -> None:
    """Refuse a dump with no line that parsed as a record: empty, blank, or not a dump at all."""
    if summary.truncated:
        return  # kept on purpose; the build still refuses to publish nothing (see check_records_found)
    lines = summary.lines - summary.dropped["empty_line"]
    if not lines:
        found = "blank lines only" if summary.lines else "nothing once decompressed"
        raise DumpError(f"{path}: no records in this dump ({found})")
    if not summary.kept and sum(summary.rejected.values()) == lines:
        reasons = ", ".join(f"{reason}: {count}" for reason, count in sorted(summary.rejected.items()))
        raise DumpError(
            f"{path}: none of its {lines} lines is a usable record ({reasons}); is it a Pushshift dump?"
        )


def _progress(summary: IngestSummary, total_bytes: int, seconds: float) -> dict[str, Any]:
    return {
        "source_file": summary.source_file,
        "bytes_read": summary.bytes_read,
        "total_bytes": total_bytes,
        "lines": summary.lines,
        "kept": summary.kept,
        "records_per_s": summary.lines / seconds if seconds > 0 else 0.0,
    }


def load_receipt(lake_dir: Path, kind: DumpKind, key: str) -> dict[str, Any] | None:
    path = partition_dir(lake_dir, REDDIT.lake_tables[kind], key) / RECEIPT_NAME
    return json.loads(path.read_text()) if path.is_file() else None


def read_share(progress: dict[str, Any]) -> float:
    return progress["bytes_read"] / progress["total_bytes"] if progress["total_bytes"] else 1.0


def describe_progress(progress: dict[str, Any]) -> str:
    return (
        f"{progress['source_file']}: {read_share(progress):.0%} of "
        f"{progress['total_bytes'] / 2**20:,.0f} MiB, "
        f"{progress['lines']:,} lines ({progress['records_per_s']:,.0f}/s), {progress['kept']:,} kept"
    )


@task(name="ingest-dump", tags=["ingest"])
def ingest_dump_file(
    path: str, kind: DumpKind, lake_dir: str, keep: IngestFilter, keep_truncated: bool = False,
    workers: int = DEFAULT_WORKERS,
) -> dict[str, Any]:  # fmt: skip
    """Dump file -> raw Parquet partition (skipped when its receipt matches); return the receipt."""
    logger = get_run_logger()
    dump = Path(path)
    key = source_key(dump)
    existing = load_receipt(Path(lake_dir), kind, key)
    if existing and receipt_matches(existing, dump, settings_key(kind, keep, keep_truncated)):
        logger.info("%s: already in the lake (same fingerprint and settings), skipped", dump)
        return {**existing, "skipped": True}
    artifact = create_progress_artifact(
        progress=0.0, key=artifact_key("ingest", key), description=f"Ingest of {dump}: share read"
    )

    def report(progress: dict[str, Any]) -> None:
        logger.info(describe_progress(progress))
        update_progress_artifact(artifact_id=artifact, progress=100 * read_share(progress))

    receipt = ingest_dump(
        dump, kind, Path(lake_dir), keep, keep_truncated, workers=workers, on_progress=report
    )
    if receipt["summary"]["truncated"]:
        logger.warning("%s is truncated: kept the %s records read before the cut",
                       dump.name, receipt["summary"]["kept"])  # fmt: skip
    return {**receipt, "skipped": False}


class NoRecordsError(DumpError):
    """The dumps hold no submission or no comment of the chosen subreddit: the dataset would be empty."""


def kinds_without_records(receipts: Sequence[dict[str, Any]]) -> list[str]:
    """The dump kinds of which no record was kept (a build needs both posts and comments)."""
    kept = Counter({kind: 0 for kind in REDDIT.lake_tables})
    for receipt in receipts:
        kept[receipt["settings"]["kind"]] += receipt["summary"]["kept"]
    return [kind for kind in REDDIT.lake_tables if not kept[kind]]


def no_records_message(kinds: Sequence[str], keep: IngestFilter, receipts: Sequence[dict[str, Any]]) -> str:
    parts = []
    for kind in kinds:
        names = [r["source_file"] for r in receipts if r["settings"]["kind"] == kind]
        files = ", ".join(names) if len(names) <= 3 else f"{len(names)} dump files"
        window = f" from {keep.start} to {keep.end} (exclusive)" if kind == "submissions" else ""
        parts.append(f"no {kind} of r/{keep.subreddit}{window} in {files or 'no dump file'}")
    return "; ".join(parts)


@task(name="check-records-found")
def check_records_found(receipts: list[dict[str, Any]], keep: IngestFilter, allow_empty: bool) -> None:
    """Receipts -> nothing, or NoRecordsError (a warning with `allow_empty`) when a kind has no record."""
    if kinds := kinds_without_records(receipts):
        message = no_records_message(kinds, keep, receipts)
        if not allow_empty:
            raise NoRecordsError(
                f"{message}; check --subreddit, --start and --end, or pass --allow-empty to publish an "
                "empty dataset"
            )
        get_run_logger().warning("publishing an empty dataset, as allowed: %s", message)
