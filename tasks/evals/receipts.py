"""Job receipts: a finished job's calls, so that a dry run counts a job its ledger holds whole without walking
its calls again.

A benchmark's `estimate_job` walks a job call by call: it renders each request (with the history the replies
so far give), hashes it into its call key and looks the key up, some 0.1 ms a call: minutes at a million
calls. A run (`RunReceipts`) gives a receipt to every job whose walk found each of its calls in the ledger:
the job's digest and what the walk counted (calls found per model and role) with the keys it found. The flow
walks each job as its task ends, while the other tasks run (3.3 s of its CPU at 17,260 calls, which the
end of the run no longer waits for), and writes the receipts at the end. A later walk of the same plan reads
the receipt instead (`ReceiptBook.counts`), once the ledger is checked to hold every key the receipts name
(one vectorised membership test for all of them); a job with no valid receipt is walked as before.

The digest (`JobDigests`) covers everything that decides a job's calls: every field of the job (the case,
models, params, prompts, options), the estimator that walked it, and the project's code (`code_digest`:
every source and data file under `tasks/`), so a changed job, estimator or renderer is walked again, never
trusted. Receipts are derived data: deleting `RUN_DIR/ledger/receipts/` costs one walk, nothing else.

Layout: `RUN_DIR/ledger/receipts/<uuid>.parquet`, one file per run that wrote any (RECEIPTS rows: one per
job), written whole and atomically; several runs' files are read together.
"""

import hashlib
import logging
import uuid
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pydantic_core
from pydantic import BaseModel

from tasks.core.files import write_parquet_atomic
from tasks.evals.plan import Job
from tasks.llm.ledger import CallLedger

logger = logging.getLogger(__name__)

RECEIPTS_DIR = "receipts"
# What a walk counted for one model in one role: its calls found in the ledger.
COUNT = pa.struct(
    [
        pa.field("model", pa.string(), nullable=False),  # the model's name in the run
        pa.field("role", pa.string(), nullable=False),
        pa.field("mode", pa.string(), nullable=False),  # single or batch
        pa.field("cached", pa.int64(), nullable=False),
    ]
)
# Defined once: one row per job.
RECEIPTS = pa.schema(
    [
        pa.field("job", pa.string(), nullable=False),  # JobDigests.of
        pa.field("counts", pa.list_(COUNT), nullable=False),
        pa.field("keys", pa.list_(pa.string()), nullable=False),  # every call key the walk found
    ]
)
# A CachedCount as read back: (model, role, mode, cached), a plain tuple (10^5 of them are read at once).
Counted = tuple[str, str, str, int]
TASKS_DIR = Path(__file__).resolve().parents[1]
# Files under tasks/ that cannot change a call: documentation.
NOT_CODE_SUFFIXES = (".md",)


class CachedCount(NamedTuple):
    """Calls of one model in one role that a job's walk found in the ledger."""

    model: str
    role: str
    mode: str
    cached: int


@cache
def code_digest() -> bytes:
    """A digest of every source and data file of the project's `tasks` package (prompts, templates and
    knowledge base included): code that renders requests differently walks every job again."""
    digest = hashlib.sha256()
    for path in sorted(TASKS_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in NOT_CODE_SUFFIXES:
            digest.update(path.relative_to(TASKS_DIR).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.digest()


def estimator_name(estimate_job: Callable[..., Any]) -> str | None:
    """The estimator's importable name, or None when it has none (a `functools.partial` carries arguments
    a name does not say: its walks get no receipt)."""
    qualname = getattr(estimate_job, "__qualname__", None)
    if qualname is None or "<" in qualname:
        return None
    return f"{estimate_job.__module__}.{qualname}"


class JobDigests:
    """Each job's digest in one plan under one estimator. A value shared by many jobs (a thread, a model's
    spec, a prompt, the run id) is serialised once: the digest of a job costs a few microseconds."""

    def __init__(self, estimator: str) -> None:
        self._prefix = hashlib.sha256(code_digest() + estimator.encode()).digest()
        self._parts: dict[int, tuple[Any, bytes]] = {}  # by id; the object kept so its id stays its
        self._layouts: dict[type, tuple[bytes, tuple[str, ...]]] = {}

    def of(self, job: Job[Any, Any]) -> str:
        parts = [self._prefix]
        for side in (job.solve, job.score):
            layout = self._layouts.get(type(side))
            if layout is None:  # the type's name and its fields' names, in the order their values follow
                names = tuple(type(side).model_fields)
                layout = self._layouts[type(side)] = (
                    "\0".join((type(side).__qualname__, *names)).encode(),
                    names,
                )
            parts.append(layout[0])
            values = side.__dict__  # the fields' values: where pydantic keeps them
            parts += [self._value(values[name]) for name in layout[1]]
        return hashlib.sha256(b"\0".join(parts)).hexdigest()

    def _value(self, value: Any) -> bytes:
        known = self._parts.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        if isinstance(value, BaseModel):
            serialised = b"m" + hashlib.sha256(value.model_dump_json().encode()).digest()
        elif type(value) is str:
            serialised = b"s" + value.encode()
        else:
            serialised = b"j" + pydantic_core.to_json(value)
        if isinstance(value, BaseModel | str | int | float | tuple):  # never changes: kept for the next job
            self._parts[id(value)] = (value, serialised)
        return serialised


class ReceiptBook:
    """The valid receipts of a ledger folder: those whose every key the ledger (or one of its sources)
    holds a success of."""

    def __init__(self, ledger: CallLedger) -> None:
        self.root = ledger.root / RECEIPTS_DIR
        self._counts: dict[str, list[Counted]] = _valid_counts(
            _read_receipts(self.root), _succeeded_keys(ledger)
        )

    def counts(self, digest: str) -> list[Counted] | None:
        """What the receipt of the job `digest` counted, or None when it has no valid receipt."""
        return self._counts.get(digest)

    def __len__(self) -> int:
        return len(self._counts)

    def write(self, receipts: list[tuple[str, list[CachedCount], list[str]]]) -> Path | None:
        """Write the receipts of new jobs, (digest, counts, keys found) each, as one file; None if none."""
        rows = [
            {"job": digest, "counts": [count._asdict() for count in counts], "keys": keys}
            for digest, counts, keys in receipts
        ]
        if not rows:
            return None
        return write_parquet_atomic(
            self.root / f"{uuid.uuid4().hex}.parquet", pa.Table.from_pylist(rows, RECEIPTS)
        )


def _read_receipts(root: Path) -> pa.Table:
    """Every receipts file of `root` (none: an empty table); a file that does not read is left out, named."""
    tables = []
    for path in sorted(root.glob("*.parquet")):
        try:
            tables.append(pq.read_table(path, schema=RECEIPTS))
        except (OSError, pa.ArrowInvalid) as error:
            logger.warning("receipts %s left out (its jobs are walked again): %s", path, error)
    return pa.concat_tables(tables) if tables else RECEIPTS.empty_table()


def _succeeded_keys(ledger: CallLedger) -> pa.Array:
    """The keys of every success of the ledger and of its sources (what `CallLedger.lookup` finds)."""
    return pa.concat_arrays([CallLedger(root).succeeded_keys() for root in [ledger.root, *ledger.sources]])


def _valid_counts(receipts: pa.Table, succeeded: pa.Array) -> dict[str, list[Counted]]:
    """The counts of each job whose receipt names only keys in `succeeded`."""
    keys = pa.chunked_array(receipts["keys"].chunks, RECEIPTS.field("keys").type).combine_chunks()
    missing = pc.invert(pc.is_in(pc.list_flatten(keys), value_set=succeeded))
    broken = np.zeros(receipts.num_rows, bool)
    broken[pc.list_parent_indices(keys).filter(missing).to_numpy()] = True
    valid = receipts.filter(pa.array(~broken))
    counts = pa.chunked_array(valid["counts"].chunks, RECEIPTS.field("counts").type).combine_chunks()
    flat = pc.list_flatten(counts)
    rows = zip(*(flat.field(name).to_pylist() for name in CachedCount._fields), strict=True)
    jobs = valid["job"].to_pylist()
    first_row = {}  # the same job in two files has the same counts: its first row is read
    for row, job in enumerate(jobs):
        first_row.setdefault(job, row)
    by_job: dict[str, list[Counted]] = {}
    for owner, count in zip(pc.list_parent_indices(counts).to_numpy().tolist(), rows, strict=True):
        if first_row[jobs[owner]] == owner:
            by_job.setdefault(jobs[owner], []).append(count)
    return by_job
