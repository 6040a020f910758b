"""The ledger's first layout, one JSON file per call: migrated once into a compacted file, or read as it is.

Run folders written before the segment store hold `ledger/ok/<k[:2]>/<key>.json` (a call that succeeded)
and `ledger/failed/<k[:2]>/<key>.json` (the latest failure of a call that had not succeeded). The first
process to open such a ledger moves every record into one compacted file (tasks/llm/compaction.py), written
durably before any old file is removed, and says so in one line; a kill at any point leaves the old files,
the new file, or both (the same records twice, which read as once), and the next open finishes the job.
A file that is not a whole record (a stray `*.tmp`, a file torn by an OS crash) read as a call not made
before, and still does: it is counted and named in that line, and removed with the rest. A folder that
cannot be written is read as it is, as slowly as before, and the line says that too.
"""

import contextlib
import logging
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
from pydantic import ValidationError

from tasks.llm.compaction import held_lock, write_compacted
from tasks.llm.ledger_rows import CALL_ROWS, RECORD_COLUMN, outcome_indices, rows_of_records
from tasks.llm.record import CallRecord

logger = logging.getLogger(__name__)

STATUS_DIRS = ("ok", "failed")


class LegacyRecords(NamedTuple):
    """The records of a one-file-per-call ledger: each key's outcome, as a compacted file holds them."""

    table: pa.Table  # COMPACTED
    unreadable: list[Path]
    files: list[Path]  # every file read (the records' and the unreadable ones)


def has_legacy_files(root: Path) -> bool:
    return any((root / status).is_dir() for status in STATUS_DIRS)


def read_legacy(root: Path) -> LegacyRecords:
    """Every record file of the old layout under `root`, each key's outcome kept."""
    files = sorted(path for status in STATUS_DIRS for path in (root / status).glob("*/*") if path.is_file())
    records: list[CallRecord] = []
    lines: list[str] = []
    unreadable: list[Path] = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            record = CallRecord.model_validate_json(text) if path.suffix == ".json" else None
        except ValidationError:
            record = None
        if record is None or record.status != path.parent.parent.name:
            unreadable.append(path)
            continue
        records.append(record)
        lines.append(text.strip())
    rows = rows_of_records(records).append_column(RECORD_COLUMN, pa.array(lines, pa.string()))
    return LegacyRecords(rows.take(outcome_indices(rows.select(CALL_ROWS.names))), unreadable, files)


def migrate(root: Path) -> LegacyRecords | None:
    """Move the old layout's records into one compacted file, then remove the old files; say so in one line.
    None when another process migrated them first. Raises OSError when the folder cannot be written."""
    with held_lock(root, wait=True):
        if not has_legacy_files(root):
            return None
        legacy = read_legacy(root)
        written = write_compacted(root, iter([legacy.table]))
        for path in legacy.files:
            path.unlink(missing_ok=True)
        for status in STATUS_DIRS:
            _remove_empty_folders(root / status)
    logger.warning("%s", migration_line(root, legacy, f"into {written.relative_to(root)}"))
    return legacy


def _remove_empty_folders(folder: Path) -> None:
    """Remove `folder` and its subfolders where empty: a file another process wrote there since the old
    files were read keeps its folder, and the next open migrates it."""
    for sub in sorted(folder.glob("*")):
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()


def migration_line(root: Path, legacy: LegacyRecords, where: str) -> str:
    """The line that says what became of an old-layout ledger."""
    succeeded = sum(1 for status in legacy.table["status"].to_pylist() if status == "ok")
    line = (
        f"ledger {root}: {legacy.table.num_rows} calls ({succeeded} succeeded) read from the old layout "
        f"(one JSON file per call) {where}"
    )
    if legacy.unreadable:
        named = ", ".join(str(path.relative_to(root)) for path in legacy.unreadable[:5])
        more = f" and {len(legacy.unreadable) - 5} more" if len(legacy.unreadable) > 5 else ""
        count = len(legacy.unreadable)
        line += f"; {count} files were not whole records and read as calls not made: {named}{more}"
    return line
