"""Atomic file writes: a reader sees the old file or the whole new one, never a part.

Each write goes to a temporary name in the target's folder (unique per process and thread, so two
writers of one path never share it), then is renamed over the target. A kill at any point leaves at
most a stray `*.tmp` beside the target.
"""

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def write_atomic(path: Path, write: Callable[[Path], object]) -> Path:
    """Call `write(temporary_path)`, then rename the temporary file to `path`; return `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_bytes_atomic(path: Path, data: bytes) -> Path:
    return write_atomic(path, lambda tmp: tmp.write_bytes(data))


def write_text_atomic(path: Path, text: str) -> Path:
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json_atomic(path: Path, value: Any) -> Path:
    """`value` as indented JSON; values JSON does not know (paths, datetimes) are written as text."""
    return write_text_atomic(path, json.dumps(value, indent=2, default=str))


def write_parquet_atomic(path: Path, table: pa.Table) -> Path:
    return write_atomic(path, lambda tmp: pq.write_table(table, tmp))
