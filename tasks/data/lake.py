"""The data lake's layout: where each layer's files live (data_lake/<layer>/<table>/)."""

import glob
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tasks.data.contracts import Contract
from tasks.data.sources import REDDIT


def source_key(dump: Path) -> str:
    """The lake's name for one dump file: its name and a short hash of its absolute path.

    Two years' `AskDocs_comments.zst` (or two disks) get two partitions; the same file always gets the
    same one, so a rebuild finds it.
    """
    resolved = str(dump.resolve())
    return f"{dump.name}-{hashlib.sha256(resolved.encode()).hexdigest()[:8]}"


def partition_dir(lake_dir: Path, contract: Contract, source_key: str) -> Path:
    """The raw-layer folder of one dump file, named by its `source_key`."""
    return lake_dir / "raw" / contract.name / f"source={source_key}"


def raw_partitions(lake_dir: str, receipts: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """Parquet globs of exactly this build's dumps, per raw table (other dumps in the lake are ignored)."""
    files: dict[str, list[str]] = {contract.name: [] for contract in REDDIT.raw_contracts}
    for receipt in receipts:
        for contract in (REDDIT.lake_tables[receipt["settings"]["kind"]], REDDIT.rejects):
            folder = partition_dir(Path(lake_dir), contract, receipt["source_key"])
            files[contract.name].append(str(folder / "*.parquet"))
    return files


def warehouse_path(lake_dir: str, out_dir: str) -> str:
    """One DuckDB file per build output, so that two builds never share a writer."""
    path = Path(lake_dir) / "warehouse" / f"{Path(out_dir).resolve().name}.duckdb"
    path.parent.mkdir(parents=True, exist_ok=True)
    return str(path)


DUMP_SUFFIXES = {".zst", ".ndjson", ".json"}


def expand_dump_paths(values: Iterable[str]) -> list[str]:
    """Files, folders (every dump inside) or glob patterns -> existing dump files, in a stable order.

    A file matched twice (a folder and a pattern, say) is listed once: its rows would count twice.
    Raises FileNotFoundError naming the first value that matches nothing.
    """
    found: dict[Path, str] = {}
    for value in values:
        path = Path(value)
        if path.is_dir():
            matches = sorted(str(p) for p in path.iterdir() if p.suffix in DUMP_SUFFIXES)
        elif glob.has_magic(value):
            matches = sorted(glob.glob(value))
        else:
            matches = [value] if path.is_file() else []
        if not matches:
            raise FileNotFoundError(f"{value}: no such dump file (nor a folder or pattern matching one)")
        for match in matches:
            found.setdefault(Path(match).resolve(), match)
    return list(found.values())
