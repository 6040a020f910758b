"""Streaming ingest: one dump file -> typed Parquet in the raw layer, bad lines quarantined.

A dump is read once, in bounded memory. Records of other subreddits and posts outside the time window
are dropped as early as possible (in all-of-Reddit monthly dumps, before any JSON is parsed). Each
dump gets its own folder `raw/<table>/source=<file name>/`, written under a temporary name and renamed
when complete, with an `_ingest.json` receipt (fingerprint, settings, counts) that lets a later build
skip files it already holds.
"""

import hashlib
import json
import multiprocessing
import os
import queue
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, Literal

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from prefect import get_run_logger, task

from tasks.contracts import RAW_COMMENTS, RAW_REJECTS, RAW_SUBMISSIONS, Contract
from tasks.reader import TruncatedDumpError, iter_line_batches

DumpKind = Literal["submissions", "comments"]
CONTRACTS: dict[str, Contract] = {"submissions": RAW_SUBMISSIONS, "comments": RAW_COMMENTS}
MONTHLY_DUMP_NAME = re.compile(r"^R[SC]_\d{4}-\d{2}")
RECEIPT_NAME = "_ingest.json"
EXCERPT_CHARS = 200
PROGRESS_EVERY_SECONDS = 5.0


@dataclass(frozen=True)
class IngestFilter:
    """What to keep: one subreddit (case-insensitive) and, for posts, a [start, end) UTC window."""

    subreddit: str
    start: date
    end: date

    @property
    def start_epoch(self) -> int:
        return int(datetime(self.start.year, self.start.month, self.start.day, tzinfo=UTC).timestamp())

    @property
    def end_epoch(self) -> int:
        return int(datetime(self.end.year, self.end.month, self.end.day, tzinfo=UTC).timestamp())


@dataclass
class IngestSummary:
    """Counts of one dump's ingest; `dropped` and `rejected` are keyed by reason."""

    source_file: str
    kind: str
    lines: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)
    truncated: bool = False
    bytes_read: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "dropped": dict(self.dropped), "rejected": dict(self.rejected)}


# --- pure normalisation ---------------------------------------------------------------------------


def epoch_seconds(value: Any) -> int | None:
    """Epoch seconds from an int, a float or a numeric string (all occur in the dumps); else None."""
    if type(value) is int:
        return value
    if isinstance(value, float | str) and not isinstance(value, bool):
        try:
            return int(float(value))
        except (ValueError, OverflowError):
            return None
    return None


def edited_epoch(value: Any) -> int | None:
    """`edited` is false or an epoch (int or float); return the epoch or None."""
    return None if value is False or value is None else epoch_seconds(value)


def richtext_flair(value: Any) -> str | None:
    """Concatenate the text pieces of `author_flair_richtext` (emoji pieces carry no text)."""
    if not isinstance(value, list):
        return None
    text = "".join(p.get("t", "") for p in value if isinstance(p, dict) and p.get("e") == "text")
    return text or None


def submission_row(record: dict[str, Any], created: int, line_number: int, source: str) -> tuple:
    get = record.get
    return (
        record["id"], get("subreddit"), get("author"), get("title"), get("selftext"), created,
        get("is_self"), get("domain"), get("url"), get("post_hint"), get("is_gallery"), get("is_video"),
        get("removed_by_category"), get("banned_by"), epoch_seconds(get("banned_at_utc")),
        get("distinguished"), get("stickied"), get("num_comments"), get("score"),
        get("author_flair_text"), richtext_flair(get("author_flair_richtext")), get("link_flair_text"),
        edited_epoch(get("edited")), epoch_seconds(get("retrieved_on", get("retrieved_utc"))),
        source, line_number,
    )  # fmt: skip


def comment_row(record: dict[str, Any], created: int, line_number: int, source: str) -> tuple:
    get = record.get
    return (
        record["id"], get("subreddit"), get("link_id"), get("parent_id"), get("author"), get("body"),
        created, get("distinguished"), get("stickied"), get("is_submitter"), get("banned_by"),
        get("removed_by_category"), get("author_flair_text"), richtext_flair(get("author_flair_richtext")),
        get("score"), edited_epoch(get("edited")),
        epoch_seconds(get("retrieved_on", get("retrieved_utc"))), source, line_number,
    )  # fmt: skip


ROW_BUILDERS: dict[str, Callable[[dict[str, Any], int, int, str], tuple]] = {
    "submissions": submission_row,
    "comments": comment_row,
}


def _coerce(value: Any, dtype: pa.DataType) -> Any:
    """Best-effort cast of one odd value (a number where text was expected, and so on) to `dtype`."""
    if value is None:
        return None
    if pa.types.is_string(dtype):
        if isinstance(value, str):
            # Lone surrogates (a broken emoji escape) cannot be written as UTF-8.
            return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        return None if isinstance(value, dict | list) else str(value)
    if pa.types.is_boolean(dtype):
        return value if isinstance(value, bool) else None
    return epoch_seconds(value)


def rows_to_table(rows: list[tuple], contract: Contract) -> pa.Table:
    """Columns of `rows` as a table of the contract; odd values are coerced (or nulled) column by column."""
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(contract.schema)
    arrays = []
    for values, schema_field in zip(columns, contract.schema, strict=True):
        try:
            arrays.append(pa.array(values, type=schema_field.type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, UnicodeEncodeError):
            arrays.append(pa.array([_coerce(v, schema_field.type) for v in values], type=schema_field.type))
    return pa.Table.from_arrays(arrays, schema=contract.schema)


def parse_line(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """Parse one NDJSON line: (record, None) or (None, reject reason)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            return None, "invalid_utf8"
        try:
            # orjson refuses lone surrogate escapes that the standard library accepts.
            record = json.loads(text)
        except ValueError:
            return None, "invalid_json"
    if not isinstance(record, dict):
        return None, "not_an_object"
    if not isinstance(record.get("id"), str) or not record["id"]:
        return None, "missing_id"
    return record, None


def excerpt(line: bytes) -> str:
    return line[: EXCERPT_CHARS * 2].decode("utf-8", "replace")[:EXCERPT_CHARS]


@dataclass
class BatchResult:
    rows: list[tuple]
    rejects: list[tuple]


def process_lines(
    lines: Iterable[bytes], first_line: int, kind: DumpKind, keep: IngestFilter, source: str,
    summary: IngestSummary, prefilter: bool,
) -> BatchResult:  # fmt: skip
    """Filter, parse and normalise a batch of lines; count every line in `summary`."""
    build_row = ROW_BUILDERS[kind]
    wanted = keep.subreddit.lower()
    needle = wanted.encode()
    start, end = keep.start_epoch, keep.end_epoch
    rows: list[tuple] = []
    rejects: list[tuple] = []
    line_number = first_line - 1
    for line in lines:
        line_number += 1
        summary.lines += 1
        if not line.strip():
            summary.dropped["empty_line"] += 1
            continue
        if prefilter and needle not in line.lower():
            summary.dropped["other_subreddit"] += 1
            continue
        record, reason = parse_line(line)
        if record is None:
            summary.rejected[reason] += 1
            rejects.append((source, line_number, reason, excerpt(line)))
            continue
        subreddit = record.get("subreddit")
        if not isinstance(subreddit, str) or subreddit.lower() != wanted:
            summary.dropped["other_subreddit" if subreddit else "missing_subreddit"] += 1
            continue
        created = epoch_seconds(record.get("created_utc"))
        if created is None:
            summary.rejected["bad_created_utc"] += 1
            rejects.append((source, line_number, "bad_created_utc", excerpt(line)))
            continue
        if kind == "submissions" and not start <= created < end:
            summary.dropped["outside_window"] += 1
            continue
        rows.append(build_row(record, created, line_number, source))
    summary.kept += len(rows)
    return BatchResult(rows, rejects)


# --- file-level I/O -------------------------------------------------------------------------------


def partition_dir(lake_dir: Path, contract: Contract, source: str) -> Path:
    return lake_dir / "raw" / contract.name / f"source={source}"


def file_fingerprint(path: Path) -> dict[str, Any]:
    """Size, modification time and sha256 of a dump (the sha256 proves identity when mtime changed)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest.hexdigest()}


def receipt_matches(receipt: dict[str, Any], path: Path, settings_key: dict[str, Any]) -> bool:
    """Whether a stored receipt describes this very file ingested with these settings."""
    stored = receipt.get("fingerprint", {})
    if receipt.get("settings") != settings_key or receipt.get("complete") is not True:
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


def ingest_dump(
    path: Path, kind: DumpKind, lake_dir: Path, keep: IngestFilter, keep_truncated: bool = False,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Stream one dump into the raw layer; return its receipt (also written as `_ingest.json`).

    Raises DumpError for unreadable files, TruncatedDumpError for a cut zstd stream unless
    `keep_truncated`, in which case the complete records read so far are kept and flagged.
    """
    contract = CONTRACTS[kind]
    source = path.name
    final_dir = partition_dir(lake_dir, contract, source)
    rejects_dir = partition_dir(lake_dir, RAW_REJECTS, source)
    work_dir = final_dir.with_name(f"{final_dir.name}.partial-{os.getpid()}")
    shutil.rmtree(work_dir, ignore_errors=True)
    work_dir.mkdir(parents=True)
    summary = IngestSummary(source_file=source, kind=kind)
    prefilter = bool(MONTHLY_DUMP_NAME.match(source))
    started = time.monotonic()
    last_report = started
    all_rejects: list[tuple] = []
    total_bytes = path.stat().st_size
    try:
        with pq.ParquetWriter(work_dir / "part-0.parquet", contract.schema, compression="zstd") as writer:
            for batch in iter_line_batches(path):
                result = process_lines(batch.lines, batch.first_line, kind, keep, source, summary, prefilter)
                writer.write_table(rows_to_table(result.rows, contract))
                all_rejects.extend(result.rejects)
                summary.bytes_read = batch.bytes_read
                if on_progress and time.monotonic() - last_report >= PROGRESS_EVERY_SECONDS:
                    last_report = time.monotonic()
                    on_progress(_progress(summary, total_bytes, last_report - started))
    except TruncatedDumpError:
        if not keep_truncated:
            shutil.rmtree(work_dir, ignore_errors=True)
            raise
        summary.truncated = True
    summary.seconds = round(time.monotonic() - started, 3)
    receipt = {
        "source_file": source,
        "path": str(path.resolve()),
        "fingerprint": file_fingerprint(path),
        "settings": settings_key(kind, keep, keep_truncated),
        "summary": summary.to_json(),
        "complete": True,
    }
    (work_dir / RECEIPT_NAME).write_text(json.dumps(receipt, indent=2))
    _write_rejects(rejects_dir, all_rejects)
    shutil.rmtree(final_dir, ignore_errors=True)
    work_dir.rename(final_dir)
    if on_progress:
        on_progress(_progress(summary, total_bytes, summary.seconds))
    return receipt


def _write_rejects(rejects_dir: Path, rejects: list[tuple]) -> None:
    rejects_dir.mkdir(parents=True, exist_ok=True)
    pq.write_table(rows_to_table(rejects, RAW_REJECTS), rejects_dir / "part-0.parquet")


def _progress(summary: IngestSummary, total_bytes: int, seconds: float) -> dict[str, Any]:
    return {
        "source_file": summary.source_file,
        "bytes_read": summary.bytes_read,
        "total_bytes": total_bytes,
        "lines": summary.lines,
        "kept": summary.kept,
        "records_per_s": summary.lines / seconds if seconds > 0 else 0.0,
    }


def load_receipt(lake_dir: Path, kind: DumpKind, source: str) -> dict[str, Any] | None:
    path = partition_dir(lake_dir, CONTRACTS[kind], source) / RECEIPT_NAME
    return json.loads(path.read_text()) if path.is_file() else None


# --- process isolation: JSON parsing holds the GIL, so each dump is parsed in its own process -----------


def _ingest_in_child(messages: Any, kwargs: dict[str, Any]) -> None:
    try:
        receipt = ingest_dump(**kwargs, on_progress=lambda p: messages.put(("progress", p)))
        messages.put(("done", receipt))
    except Exception as error:  # sent back whole, re-raised by the parent
        messages.put(("error", error))


def ingest_dump_isolated(on_progress: Callable[[dict[str, Any]], None], **kwargs: Any) -> dict[str, Any]:
    """Run `ingest_dump` in a spawned process and relay its progress; re-raise its failure here."""
    context = multiprocessing.get_context("spawn")
    messages = context.Queue()
    child = context.Process(target=_ingest_in_child, args=(messages, kwargs), daemon=True)
    child.start()
    try:
        while True:
            try:
                kind, payload = messages.get(timeout=1.0)
            except queue.Empty:
                if not child.is_alive():
                    message = f"ingest of {kwargs['path']} died (exit code {child.exitcode})"
                    raise RuntimeError(message) from None
                continue
            if kind == "progress":
                on_progress(payload)
            elif kind == "done":
                return payload
            else:
                raise payload
    finally:
        child.join(timeout=10)


def describe_progress(progress: dict[str, Any]) -> str:
    share = progress["bytes_read"] / progress["total_bytes"] if progress["total_bytes"] else 1.0
    return (
        f"{progress['source_file']}: {share:.0%} of {progress['total_bytes'] / 2**20:,.0f} MiB, "
        f"{progress['lines']:,} lines ({progress['records_per_s']:,.0f}/s), {progress['kept']:,} kept"
    )


@task(name="ingest-dump", tags=["ingest"])
def ingest_dump_file(
    path: str, kind: DumpKind, lake_dir: str, keep: IngestFilter, keep_truncated: bool = False
) -> dict[str, Any]:
    """Dump file -> raw Parquet partition (skipped when its receipt matches); return the receipt."""
    logger = get_run_logger()
    dump = Path(path)
    existing = load_receipt(Path(lake_dir), kind, dump.name)
    if existing and receipt_matches(existing, dump, settings_key(kind, keep, keep_truncated)):
        logger.info("%s: already in the lake (same fingerprint and settings), skipped", dump.name)
        return {**existing, "skipped": True}
    receipt = ingest_dump_isolated(
        on_progress=lambda p: logger.info(describe_progress(p)),
        path=dump, kind=kind, lake_dir=Path(lake_dir), keep=keep, keep_truncated=keep_truncated,
    )  # fmt: skip
    if receipt["summary"]["truncated"]:
        logger.warning("%s is truncated: kept the %s records read before the cut",
                       dump.name, receipt["summary"]["kept"])  # fmt: skip
    return {**receipt, "skipped": False}
