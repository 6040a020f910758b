"""Where a report is written and how the tables its figures are drawn from are stored."""

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def default_report_dir(run_dirs: list[str]) -> str:
    """RUN_DIR/report for one run; FIRST_RUN_DIR/report-merged for several."""
    return str(Path(run_dirs[0]) / ("report" if len(run_dirs) == 1 else "report-merged"))


def write_stats_table(rows: list[dict[str, Any]], path: Path, schema: pa.Schema | None = None) -> Path:
    """Rows -> a Parquet file (a stats_* table a figure is drawn from); returns its path."""
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path
