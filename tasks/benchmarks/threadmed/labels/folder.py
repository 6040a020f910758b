"""The labels folder's file names, and the grades and rater kinds its CSV and tables hold."""

from datetime import UTC, datetime

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
