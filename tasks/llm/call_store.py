"""A ledger folder as one process sees it: every record indexed by call key, this process's segment to
append to, what other processes appended since, and a feed of outcome changes (progress reads it).

Layout of `RUN_DIR/ledger/`:

    segments/*.jsonl      records as written: one JSON object per line, one file per writing process
                          (tasks/llm/segments.py)
    compacted/*.parquet   the records of sealed segments, one row per call key (tasks/llm/compaction.py)
    index/*.arrow         each segment's cached index (derived: deleting it costs one re-read)
    sources.json          the ledgers whose successes this one reuses (tasks/llm/ledger.py)
    receipts/*.parquet    the jobs whose every call a run found here (tasks/evals/receipts.py; derived)

A key's outcome is its success if it has one, else its latest failure (`ledger_rows.outcome_indices`).
Every CallLedger of a folder in a process shares one CallStore (`store_for`), so a task looks a key up in
a dict instead of on disk, and the folder is read once: compacted files by their typed columns, segments
from their cached index and then only the bytes appended since. A lookup that misses reads what other
processes (Dask workers, other machines) appended since, at most once a second (`REFRESH_S`), or at once
when about to make the call (`fresh`; a Dask worker's key holder reads instead, when another worker may
have recorded the call: tasks/llm/cluster.py). Totals (`outcomes`) are computed over Arrow columns, never one
Python object per record.
"""

import contextlib
import logging
import os
import threading
import time
import weakref
from collections import OrderedDict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import ValidationError

from tasks.core.gc_pause import garbage_collection_paused
from tasks.llm import compaction
from tasks.llm.compaction import Compaction, compacted_files
from tasks.llm.ledger_rows import CALL_ROWS, outcome_indices
from tasks.llm.legacy_ledger import has_legacy_files, migrate, migration_line, read_legacy
from tasks.llm.record import CallRecord
from tasks.llm.segments import (
    CACHE_MIN_BYTES,
    SEGMENT_SUFFIX,
    SEGMENTS_DIR,
    SegmentIndex,
    SegmentWriter,
    index_segment,
    read_cached_index,
    write_cached_index,
)
from tasks.llm.store_sources import CompactedFile, InPlace, Segment, Source, Vanished, source_name

logger = logging.getLogger(__name__)

REFRESH_S = 1.0
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# A record's place: its source's number in the store, then its row there.
POSITION_BITS = 40
LOCATION = "location"
# Stores kept open by a process (a test session opens thousands of folders); an evicted one closes its files.
MAX_OPEN_STORES = 32


class Change(NamedTuple):
    """A key's outcome changed: what it was (None: nothing recorded) and what it is now."""

    before: CallRecord | None
    after: CallRecord


class Follower:
    """What one reader of a store's changes (a progress display) has not read yet: the outcomes to count
    from (`snapshot`: when it started following, or when the store was read again from disk), then each
    change since."""

    def __init__(self, snapshot: pa.Table) -> None:
        self.snapshot: pa.Table | None = snapshot
        self.changes: list[Change] = []

    def take(self) -> tuple[pa.Table | None, list[Change]]:
        """(the outcomes to count again from, if any; the changes after them), as unread until now."""
        snapshot, changes = self.snapshot, self.changes
        self.snapshot, self.changes = None, []
        return snapshot, changes


class CallStore:
    """One ledger folder's records for this process: see the module's docstring."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.RLock()
        self._writer = SegmentWriter(root / SEGMENTS_DIR)
        self._sealed: set[Path] = set()  # this process's segments it writes no more
        self._sources: list[Source] = []
        self._segments: dict[Path, int] = {}
        self._files: dict[Path, int] = {}
        self._in_place: pa.Table | None = None
        self._loaded = False
        self._successes: dict[str, tuple[int, int]] | None = None  # key -> (finished_at in µs, location)
        self._failures: dict[str, tuple[int, int]] | None = None  # key -> (finished_at in µs, location)
        self._read_at = float("-inf")
        self._followers: weakref.WeakSet[Follower] = weakref.WeakSet()
        self._named_unreadable: set[str] = set()

    # Writing

    def write(self, record: CallRecord) -> None:
        """Append `record` to this process's segment (durable against a kill once this returns)."""
        line = record.model_dump_json().encode("utf-8") + b"\n"  # JSON escapes every newline in a value
        with self._lock:
            path, offset = self._writer.append(line)
            if not self._loaded:
                return  # read with the rest when the store is first read
            number = self._segments.get(path)
            if number is None:
                number = self._add(Segment(path, SegmentIndex.empty()), self._segments, path)
            segment = self._sources[number]
            assert isinstance(segment, Segment)
            if segment.size != offset:  # lines of this process the index has not read (never, but cheap)
                self._read_segment(number, offset)
            segment.own.append((record, offset, len(line) - 1))
            self._apply(number, len(segment) - 1, record.key, record.status, _micros(record), record)

    # Reading

    def lookup(self, key: str, fresh: bool = False) -> CallRecord | None:
        """The success of `key`; None if it has none. A miss reads what other processes appended since,
        when the last read is older than REFRESH_S or `fresh` (the caller is about to make the call)."""
        for _ in range(3):
            with self._lock:
                found = self._tables()[0].get(key)
                if found is None and (fresh or time.monotonic() - self._read_at >= REFRESH_S):
                    self.refresh()
                    found = self._tables()[0].get(key)
                if found is None:
                    return None
            try:
                return self.record_at(found[1])
            except Vanished:
                self._reload()
        raise RuntimeError(f"{self.root}: the ledger's files keep changing while they are read")

    def last_failure(self, key: str) -> CallRecord | None:
        """The latest failure of `key`, unless it has succeeded since."""
        for _ in range(3):
            with self._lock:
                if time.monotonic() - self._read_at >= REFRESH_S:
                    self.refresh()
                successes, failures = self._tables()
                if key in successes or key not in failures:
                    return None
                _, location = failures[key]
            try:
                return self.record_at(location)
            except Vanished:
                self._reload()
        raise RuntimeError(f"{self.root}: the ledger's files keep changing while they are read")

    def record_at(self, location: int) -> CallRecord | None:
        """The record at `location` (of `outcomes`); None when its line is not a record (counted, named)."""
        position = location & ((1 << POSITION_BITS) - 1)
        with self._lock:
            source = self._sources[location >> POSITION_BITS]
            try:
                line = source.line(position)
            except FileNotFoundError:
                raise Vanished from None
        try:
            return CallRecord.model_validate_json(line)
        except ValidationError as error:
            self._name_unreadable(f"{source_name(source)}@{position}", str(error).splitlines()[0])
            return None

    def outcomes(self) -> pa.Table:
        """Each key's outcome (CALL_ROWS and its `location`), successes first, after a refresh."""
        with self._lock:
            self.refresh()
            rows = self._all_rows()
            return rows.take(outcome_indices(rows))

    def succeeded_keys(self) -> pa.Array:
        """The key of every success recorded (a key twice when two processes made it at once), after a
        refresh: what a membership test reads, without computing each key's outcome."""
        with self._lock:
            self.refresh()
            rows = self._all_rows()
            return rows["key"].filter(pc.equal(rows["status"], "ok")).combine_chunks()

    def outcome_records(self, status: str | None = None) -> list[CallRecord]:
        """The record of each key's outcome (only those of `status`, if given): successes first, each
        status by key. Records whose line does not read are left out (see `record_at`)."""
        for _ in range(3):
            outcomes = self.outcomes()
            if status is not None:
                outcomes = outcomes.filter(pc.equal(outcomes["status"], status))
            order = pc.sort_indices(outcomes, [("status", "descending"), ("key", "ascending")])
            locations = outcomes[LOCATION].take(order).to_numpy()
            records: list[CallRecord | None] = [None] * len(locations)
            try:
                # Read in the order they are stored (a compacted file's row group once), then put in order.
                with garbage_collection_paused():
                    for index in np.argsort(locations, kind="stable").tolist():
                        records[index] = self.record_at(int(locations[index]))
            except Vanished:
                self._reload()
                continue
            return [record for record in records if record is not None]
        raise RuntimeError(f"{self.root}: the ledger's files keep changing while they are read")

    def follow(self) -> Follower:
        """A follower of every outcome change from now on (while it is referenced), from the outcomes now."""
        with self._lock:
            self._tables()  # changes are told as the lookup tables take them in
            follower = Follower(self.outcomes())
            self._followers.add(follower)
            return follower

    def refresh(self) -> None:
        """Read what was written since the last read: other processes' new lines, new compacted files; read
        the folder again if a file was removed (compacted by another process)."""
        with self._lock:
            if not self._loaded:
                self._load()
                return
            segments, files = _listing(self.root)
            if any(path not in segments for path in self._segments) or any(
                p not in files for p in self._files
            ):
                self._reload()
                return
            for path in files:
                if path not in self._files:
                    number = self._add(CompactedFile(path), self._files, path)
                    self._apply_rows(number, 0, self._sources[number].rows())
            for path, size in segments.items():
                number = self._segments.get(path)
                if number is None:
                    number = self._add(Segment(path, SegmentIndex.empty()), self._segments, path)
                segment = self._sources[number]
                assert isinstance(segment, Segment)
                if size > segment.size:
                    self._read_segment(number, size)
            self._read_at = time.monotonic()

    # Compaction

    def compact(self) -> Compaction | None:
        """Seal this process's segment and merge every sealed segment into a compacted file (see
        tasks/llm/compaction.py); None when there was nothing to merge or another process is merging."""
        with self._lock:
            sealed = self._writer.rotate()
            if sealed is not None:
                self._sealed.add(sealed)
            self._cache_indexes()
            done = compaction.compact(self.root, self._sealed)
            self._sealed = {path for path in self._sealed if path.exists()}
            if done is not None:
                self._reload()
        if done is not None and done.unreadable:
            places = ", ".join(done.unreadable[:5]) + (" ..." if len(done.unreadable) > 5 else "")
            logger.warning(
                "ledger %s: %d lines were not whole records and read as calls not made (dropped when "
                "compacted): %s",
                self.root,
                len(done.unreadable),
                places,
            )
        return done

    def close(self) -> None:
        """Close the files the store reads (it reopens them if used again)."""
        with self._lock:
            for source in self._sources:
                source.close()

    # The index

    def _tables(self) -> tuple[dict[str, tuple[int, int]], dict[str, tuple[int, int]]]:
        """The lookup tables, built from every source's rows on first use."""
        if not self._loaded:
            self._load()
        if self._successes is None or self._failures is None:
            rows = self._all_rows()
            locations = rows[LOCATION].to_numpy()
            ok = pc.equal(rows["status"], "ok").to_numpy(zero_copy_only=False)
            keys = rows["key"].to_numpy(zero_copy_only=False)
            at = rows["finished_at"].cast(pa.int64()).to_numpy()
            # A key's earliest success is its success (as outcome_indices says): latest first, the last wins.
            order = np.argsort(at[ok], kind="stable")[::-1]
            columns = (keys[ok][order].tolist(), at[ok][order].tolist(), locations[ok][order].tolist())
            self._successes = {key: (when, location) for key, when, location in zip(*columns, strict=True)}
            finished = at[~ok]
            order = np.argsort(finished, kind="stable")  # the latest failure last, so it is the one kept
            failed_keys, failed_at, failed_at_location = (
                keys[~ok][order],
                finished[order],
                locations[~ok][order],
            )
            self._failures = {
                key: (at, location)
                for key, at, location in zip(
                    failed_keys.tolist(), failed_at.tolist(), failed_at_location.tolist(), strict=True
                )
            }
        return self._successes, self._failures

    def _all_rows(self) -> pa.Table:
        """Every source's rows in reading order (`_order`: CALL_ROWS), with each row's `location`."""
        tables = []
        for number in sorted(range(len(self._sources)), key=self._order):
            rows = self._sources[number].rows()
            locations = (number << POSITION_BITS) + np.arange(rows.num_rows, dtype=np.int64)
            tables.append(rows.append_column(LOCATION, pa.array(locations)))
        schema = CALL_ROWS.append(pa.field(LOCATION, pa.int64()))
        return pa.concat_tables(tables) if tables else schema.empty_table()

    def _order(self, number: int) -> tuple[int, str]:
        """Where source `number` is read among the others, whenever each was found: the old layout, then
        compacted files, then segments, each kind by name. Which of two successes (or failures) of a key
        finished at the same microsecond is its outcome follows this order, so every reader, whatever it read
        first, agrees with `outcome_indices` over `_all_rows`."""
        source = self._sources[number]
        if isinstance(source, InPlace):
            return (0, "")
        return (1 if isinstance(source, CompactedFile) else 2, source.path.name)

    def _rank(self, location: int) -> tuple[tuple[int, str], int]:
        return self._order(location >> POSITION_BITS), location & ((1 << POSITION_BITS) - 1)

    def _apply(
        self, number: int, position: int, key: str, status: str, at: int, record: CallRecord | None
    ) -> None:
        """Take one new record into the lookup tables (if built), telling followers of a changed outcome."""
        if self._successes is None or self._failures is None:
            return
        location = (number << POSITION_BITS) | position
        rank = (self._order(number), position)
        succeeded = self._successes.get(key)
        failed = self._failures.get(key)
        if succeeded is not None:
            # A key's earliest success is its outcome (one found later may have finished earlier).
            if status != "ok" or (succeeded[0], self._rank(succeeded[1])) <= (at, rank):
                return
            self._successes[key], replaced = (at, location), succeeded[1]
        elif status == "ok":
            self._successes[key], replaced = (at, location), failed[1] if failed is not None else None
        elif failed is None or (at, rank) > (failed[0], self._rank(failed[1])):
            self._failures[key], replaced = (at, location), failed[1] if failed is not None else None
        else:
            return
        if self._followers:
            previous = self.record_at(replaced) if replaced is not None else None
            change = Change(previous, record or self.record_at(location))
            if change.after is not None:
                for follower in self._followers:
                    follower.changes.append(change)

    def _apply_rows(self, number: int, start: int, rows: pa.Table) -> None:
        """Take `rows`, those of source `number` from `start` on, into the lookup tables."""
        if self._successes is None:
            return
        at = rows["finished_at"].cast(pa.int64()).to_pylist()
        for offset, (key, status) in enumerate(
            zip(rows["key"].to_pylist(), rows["status"].to_pylist(), strict=True)
        ):
            self._apply(number, start + offset, key, status, at[offset], None)

    def _read_segment(self, number: int, size: int) -> None:
        """Index the lines segment `number` holds up to `size` bytes that are not indexed yet."""
        segment = self._sources[number]
        assert isinstance(segment, Segment)
        start = len(segment.rows())
        try:
            new = index_segment(segment.path, SegmentIndex.empty()._replace(size=segment.size), size)
        except FileNotFoundError:
            raise Vanished from None
        segment.index = segment.index.extended(new)
        for offset in new.unreadable:
            self._name_unreadable(f"{segment.path.name}@{offset}", "not a record")
        self._apply_rows(number, start, new.rows)

    def _load(self) -> None:
        """Read the folder: its compacted files, then its segments (their cached index, then new bytes)."""
        for _ in range(3):
            try:
                self._load_once()
                return
            except Vanished:
                continue
        raise RuntimeError(f"{self.root}: the ledger's files keep changing while they are read")

    def _load_once(self) -> None:
        if has_legacy_files(self.root):
            self._take_in_legacy()
        self._close_sources()
        self._sources, self._segments, self._files = [], {}, {}
        self._successes = self._failures = None
        segments, files = _listing(self.root)  # segments first: a compaction between reads both, not neither
        try:
            if self._in_place is not None:
                self._sources.append(InPlace(self._in_place))
            for path in files:
                self._add(CompactedFile(path), self._files, path)
        except FileNotFoundError:
            raise Vanished from None
        for path, size in segments.items():
            cached = read_cached_index(self.root, path, size)
            number = self._add(Segment(path, cached), self._segments, path)
            if size > cached.size:
                self._read_segment(number, size)
                if size - cached.size >= CACHE_MIN_BYTES:
                    write_cached_index(self.root, path, self._sources[number].index)
        self._loaded = True
        self._read_at = time.monotonic()

    def _reload(self) -> None:
        with self._lock:
            self._loaded = False
            self._load()
            if self._followers:
                self._tables()
                snapshot = self.outcomes()
                for follower in self._followers:
                    follower.snapshot, follower.changes = snapshot, []

    def _take_in_legacy(self) -> None:
        """Migrate an old-layout ledger (once), or read it in place if its folder cannot be written."""
        try:
            migrate(self.root)
        except OSError as error:
            legacy = read_legacy(self.root)
            self._in_place = legacy.table
            if "in place" not in self._named_unreadable:
                self._named_unreadable.add("in place")
                logger.warning("%s", migration_line(self.root, legacy, f"and read as it is ({error})"))

    def _cache_indexes(self) -> None:
        """Cache the index of every segment this store has read whole (compaction then parses none again)."""
        for path, number in self._segments.items():
            segment = self._sources[number]
            assert isinstance(segment, Segment)
            segment.rows()
            write_cached_index(self.root, path, segment.index)

    def _add(self, source: Source, names: dict[Path, int], path: Path) -> int:
        self._sources.append(source)
        names[path] = len(self._sources) - 1
        return names[path]

    def _close_sources(self) -> None:
        for source in self._sources:
            source.close()

    def _name_unreadable(self, place: str, why: str) -> None:
        """Say once per line that it is not a record (read as a call not made)."""
        if place not in self._named_unreadable:
            self._named_unreadable.add(place)
            logger.warning(
                "ledger %s: %s is not a whole record (%s): read as a call not made", self.root, place, why
            )


def _listing(root: Path) -> tuple[dict[Path, int], list[Path]]:
    """(segments with their sizes, compacted files) of the ledger folder `root`, segments listed first."""
    segments: dict[Path, int] = {}
    with contextlib.suppress(FileNotFoundError), os.scandir(root / SEGMENTS_DIR) as entries:
        for entry in entries:
            if entry.name.endswith(SEGMENT_SUFFIX):
                with contextlib.suppress(FileNotFoundError):
                    segments[Path(entry.path)] = entry.stat().st_size
    return dict(sorted(segments.items())), compacted_files(root)


def _micros(record: CallRecord) -> int:
    """`finished_at` in µs since the epoch, as Arrow holds it."""
    return (record.finished_at - EPOCH) // timedelta(microseconds=1)


_stores: OrderedDict[str, CallStore] = OrderedDict()
_stores_lock = threading.Lock()


def store_for(root: Path) -> CallStore:
    """The store of the ledger folder `root` in this process (one per folder, shared by every task)."""
    name = os.path.abspath(root)
    with _stores_lock:
        store = _stores.get(name)
        if store is None:
            store = _stores[name] = CallStore(Path(name))
            if len(_stores) > MAX_OPEN_STORES:
                _, evicted = _stores.popitem(last=False)
                evicted.close()
        else:
            _stores.move_to_end(name)
        return store
