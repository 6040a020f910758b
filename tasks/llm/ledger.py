"""The call ledger: every LLM call of a run directory, stored by its call key.

Records are appended as JSON Lines, one file per writing process, and compacted into Parquet once their
writers are done (tasks/llm/call_store.py has the layout; segments.py and compaction.py how each file is
written). A kill -9 at any moment loses at most the calls in flight and never a recorded one; every
finished call is found by its key on resume, whichever run, process or machine made it; several processes
and machines sharing the run folder each append to files of their own, with nothing to lock. A run folder
written one file per call (`ok/<k[:2]>/<key>.json`) is migrated once when first opened
(tasks/llm/legacy_ledger.py).

A key's outcome is its success, or else its latest failure: a success retires the call's failures, whose
attempts and costs it carries (tasks/llm/call.py adds every attempt up).

A ledger may name source ledgers (`reuse_calls_of`; a re-judge names the runs it re-judges): a call one of
them holds a success for is that success, never made again. `complete()` copies it into this ledger
(`adopt`), marked `reused_from`, with none of its cost: it was paid where it was made.
"""

import json
import logging
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from tasks.core.files import write_text_atomic
from tasks.llm.call_store import Follower, store_for
from tasks.llm.compaction import Compaction
from tasks.llm.record import CallRecord
from tasks.llm.request import ChatRequest

__all__ = ["SOURCES_FILE", "WITHHELD", "CallLedger", "CallRecord", "compact_ledger"]

logger = logging.getLogger(__name__)

# What the attempts of a call consumed: a reused call's are this ledger's own, not its source's.
_SPENDING_FIELDS = ("attempts", "prompt_tokens", "completion_tokens", "input_cost_usd", "output_cost_usd")


SOURCES_FILE = "sources.json"
# The error kind of a reply the provider's content filter withheld: the one failure no run tries again.
WITHHELD = "content_filter"


class CallLedger:
    """Read and write call records under one ledger folder; read the successes of its source ledgers."""

    def __init__(self, root: Path, sources: Sequence[Path] | None = None) -> None:
        """`sources`: the ledgers whose successes this one reuses; None reads them from its SOURCES_FILE."""
        self.root = Path(root)
        self._store = store_for(self.root)
        if sources is not None:
            self.sources = [Path(source) for source in sources]

    @cached_property
    def sources(self) -> list[Path]:
        """The ledgers whose successful calls are this one's too, searched in order (none by default)."""
        path = self.root / SOURCES_FILE
        if not path.is_file():
            return []
        return [Path(source) for source in json.loads(path.read_text(encoding="utf-8"))["ledgers"]]

    def reuse_calls_of(self, sources: Sequence[Path]) -> None:
        """Reuse the successful calls of the `sources` ledgers from now on (written in SOURCES_FILE)."""
        self.sources = [Path(source).resolve() for source in sources]
        listed = json.dumps({"ledgers": [str(source) for source in self.sources]}, indent=2)
        write_text_atomic(self.root / SOURCES_FILE, listed)

    def lookup(self, key: str) -> CallRecord | None:
        """The successful record of `key`: this ledger's, else the first source ledger's (as `adopt` would
        copy it); None if the call has not succeeded in any."""
        return self._store.lookup(key) or self._reused(key)

    def find(self, request: ChatRequest) -> CallRecord | None:
        """What a run takes from the ledger for `request` without calling (what a dry run counts as made):
        its success, else its `final_failure`; under its key, else under its legacy key
        (ChatRequest.legacy_key), where a run before whole-number floats were read as integers recorded it.
        None when a run would make the call."""
        for key in (request.key(), request.legacy_key()):
            if key is not None and (record := self.lookup(key) or self.final_failure(key)) is not None:
                return record
        return None

    def final_failure(self, key: str) -> CallRecord | None:
        """The latest failure of `key` if no run may try it again: the provider withheld the reply (its
        content filter). The same request gets the same refusal, billed again; only another model or
        endpoint (another key) can answer it."""
        failure = self.last_failure(key)
        return failure if failure is not None and failure.error_kind == WITHHELD else None

    def adopt(self, key: str, fresh: bool = True) -> CallRecord | None:
        """`lookup` just before a call would be made, a source ledger's success written into this ledger: the
        folder then holds every call its outputs rest on, and a re-run reads it here. `fresh`: what other
        processes recorded is read first (not when the caller's key holder has read what they recorded of
        `key`: in_flight.KeyHolder)."""
        record = self._store.lookup(key, fresh=fresh)
        if record is None and (record := self._reused(key)) is not None:
            self.write(record)
        return record

    def _reused(self, key: str) -> CallRecord | None:
        """The first source ledger's success of `key`, as this ledger records it: reused, made and paid
        there; its attempts, tokens and costs are this ledger's own failed attempts of it (none, mostly)."""
        for source in self.sources:
            found = store_for(source).lookup(key)
            if found is not None:
                own = self.last_failure(key)
                spent_here = {name: getattr(own, name) if own else 0 for name in _SPENDING_FIELDS}
                paid_in = found.reused_from or str(source)
                return found.model_copy(update={**spent_here, "reused_from": paid_in})
        return None

    def last_failure(self, key: str) -> CallRecord | None:
        """The latest failed record of `key`, unless it has succeeded (its attempts and costs carry over
        into the next try)."""
        return self._store.last_failure(key)

    def write(self, record: CallRecord) -> None:
        """Record `record`; a success retires the call's failures."""
        self._store.write(record)

    def records(self) -> Iterator[CallRecord]:
        """Every readable outcome: successes, then failures of calls that never succeeded; each by key."""
        yield from self._store.outcome_records()

    def failures(self) -> Iterator[CallRecord]:
        """The latest failure of every call that has not succeeded (reads no success)."""
        yield from self._store.outcome_records("failed")

    def outcomes(self) -> pa.Table:
        """Each call's outcome as columns (tasks/llm/ledger_rows.py CALL_ROWS): what totals read, without
        reading the records themselves."""
        return self._store.outcomes()

    def succeeded_keys(self) -> pa.Array:
        """The key of every success recorded here (not in the source ledgers), as one Arrow array."""
        return self._store.succeeded_keys()

    def recorded_cost_usd(self, key: str) -> float:
        """What the ledger records `key` has cost so far: its success, else its latest failure, else 0."""
        record = self.lookup(key) or self.last_failure(key)
        return 0.0 if record is None else record.cost_usd

    def total_cost_usd(self) -> float:
        """What every call in the ledger has cost, every attempt counted (the spend recorded so far by every
        process writing to it)."""
        outcomes = self.outcomes()
        return float(pc.sum(pc.add(outcomes["input_cost_usd"], outcomes["output_cost_usd"])).as_py() or 0.0)

    def count_succeeded(self) -> int:
        """How many calls have succeeded (reads no record)."""
        return pc.sum(pc.equal(self.outcomes()["status"], "ok")).as_py() or 0

    def follow(self) -> Follower:
        """Every change of a call's outcome from now on, from the outcomes now (what progress reads)."""
        return self._store.follow()

    def refresh(self) -> None:
        """Read what other processes recorded since this process last read the folder."""
        self._store.refresh()

    def compact(self) -> Compaction | None:
        """Merge the segments no process writes any more into one compacted file (end of a run)."""
        return self._store.compact()


def compact_ledger(ledger_dir: Path) -> Compaction | None:
    """At the end of a run: merge its ledger's segments that no process writes any more into one compacted
    file (tasks/llm/compaction.py). A failure to (a full disk) is said, and changes nothing: the records
    stay in their segments, read as before."""
    try:
        return CallLedger(ledger_dir).compact()
    except OSError as error:
        logger.warning("ledger %s was not compacted (its records stay where they are): %s", ledger_dir, error)
        return None
