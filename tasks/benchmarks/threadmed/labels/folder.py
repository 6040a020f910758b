"""The labels folder's file names, the grades and rater kinds its CSV and tables hold, and its readers.

Light on imports: `threadmed labels import` needs only this module and ratings.py.
"""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.benchmarks.threadmed.contracts import LABEL_ITEMS
from tasks.core.preflight import UserError

SAMPLE_FILE = "sample.json"
ITEMS_FILE = "items.parquet"
PAGE_FILE = "rate.html"
RATINGS_FILE = "ratings.parquet"
# What the rating page exports, `labels simulate` writes and `labels import` reads, in this order.
CSV_COLUMNS = ("item_id", "rater", "rater_kind", "grade", "note", "rated_at")
CLINICIAN, SIMULATED = "clinician", "simulated"
RATER_KINDS = (CLINICIAN, SIMULATED)
# The rubric's scale, as written in the CSV (the page's buttons write the same text).
GRADE_TEXTS = {0.0: "0", 0.5: "0.5", 1.0: "1"}


def grade_text(grade: float) -> str:
    """A grade of the rubric's scale as the CSV and the strata name it: 0, 0.5 or 1."""
    return GRADE_TEXTS[grade]


def utc_text(moment: datetime) -> str:
    """ISO 8601 UTC to the second, as the CSV's rated_at: 2026-11-26T04:00:00Z."""
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


LABELS_FIX = "pass the --out folder of `threadmed labels sample`"


def read_sample_info(labels_dir: Path) -> dict[str, Any]:
    """DIR/sample.json; UserError when DIR is not a labels folder."""
    path = Path(labels_dir) / SAMPLE_FILE
    if not path.is_file():
        raise UserError(f"{labels_dir} is not a labels folder (no {SAMPLE_FILE}): {LABELS_FIX}")
    return json.loads(path.read_text())


def read_items(labels_dir: Path) -> pa.Table:
    """DIR/items.parquet (LABEL_ITEMS), in page order; UserError when it is missing."""
    path = Path(labels_dir) / ITEMS_FILE
    if not path.is_file():
        raise UserError(f"{labels_dir} is not a labels folder (no {ITEMS_FILE}): {LABELS_FIX}")
    return pq.read_table(path).select(LABEL_ITEMS.schema.names).sort_by("position")
