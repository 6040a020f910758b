"""Import raters' CSVs into a labels folder's ratings.parquet, after checking every row.

A CSV is what the rating page exports (or `labels simulate` writes): the header CSV_COLUMNS exactly, then
one row per rated item, each text cell neutralised against spreadsheet formulas as every CSV of the project
(tasks/core/safe_text.py: a `'` in front of a cell starting with `=`, `+`, `-`, `@`, a tab, a carriage
return or `'`), which the import drops again. Every bad row is an error naming its file, line and fix; one
bad row anywhere means nothing is written, so a folder's ratings are always a whole, checked set. A rater
id starting with a formula character is refused, so no table or file of ratings names one. A rater is one
kind, simulated or clinician, in the files and in the ratings stored before them.
"""

import csv
import io
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.benchmarks.threadmed.contracts import RATINGS
from tasks.benchmarks.threadmed.labels.folder import CSV_COLUMNS, GRADE_TEXTS, RATER_KINDS, RATINGS_FILE
from tasks.core.files import write_parquet_atomic
from tasks.core.safe_text import FORMULA_STARTS, original_cell

HEADER = ",".join(CSV_COLUMNS)
EXPORT_FIX = "export the CSV again from the folder's rate.html"
_PLAIN_DECIMAL = re.compile(r"[0-9]++(?:\.[0-9]++)?+")


class CheckedRows(NamedTuple):
    """The RATINGS rows of the checked CSVs, and one message per bad row (none when all are good)."""

    rows: list[dict[str, Any]]
    errors: list[str]


def parse_grade(text: str) -> float | None:
    """A grade on the rubric's scale (0, 0.5, 1; "1.0" too), else None: written as a plain decimal, since
    float() also reads `0_1`, `1e0` and `+1`, which no rater writes for a grade."""
    if not _PLAIN_DECIMAL.fullmatch(text.strip()):
        return None
    grade = float(text)
    return grade if grade in GRADE_TEXTS else None


def parse_rated_at(text: str) -> datetime | None:
    """An ISO 8601 time with a UTC offset of zero (2026-11-26T04:00:00Z), else None."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    offset = moment.utcoffset()
    return moment.astimezone(UTC) if offset is not None and not offset else None


def rater_problem(rater: str) -> str | None:
    """What is wrong with a rater id (stripped), with its fix; None when it is good."""
    if not rater:
        return "the rater is empty: write the rater's id"
    if rater.startswith(tuple(FORMULA_STARTS)):
        return (
            f"rater {rater!r} starts with {rater[0]!r}, which a spreadsheet runs as a formula: give the "
            "rater an id that starts with a letter or a digit"
        )
    return None


def _row_problems(record: dict[str, str], item_ids: set[str]) -> list[str]:
    """What is wrong with one CSV record, each with its fix."""
    problems = []
    if record["item_id"] not in item_ids:
        problems.append(f"item_id {record['item_id']!r} is not in this sample: {EXPORT_FIX}")
    if parse_grade(record["grade"]) is None:
        problems.append(f"grade {record['grade']!r} is not one of 0, 0.5, 1: correct it")
    if (problem := rater_problem(record["rater"].strip())) is not None:
        problems.append(problem)
    if record["rater_kind"] not in RATER_KINDS:
        problems.append(
            f"rater_kind {record['rater_kind']!r} is not one of {', '.join(RATER_KINDS)}: correct it"
        )
    if parse_rated_at(record["rated_at"]) is None:
        problems.append(
            f"rated_at {record['rated_at']!r} is not an ISO 8601 UTC time like 2026-11-26T04:00:00Z"
        )
    return problems


def read_csv_records(path: Path, text: str) -> tuple[list[tuple[int, dict[str, str]]], list[str]]:
    """(first line, record) of every row of one CSV's `text`, each cell back to its value (original_cell), and
    its header's or rows' shape errors."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header != list(CSV_COLUMNS):
        return [], [f"{path}:1: the header is {','.join(header or [])!r}, not {HEADER!r}: {EXPORT_FIX}"]
    records, errors, line = [], [], reader.line_num + 1
    for fields in reader:
        if len(fields) != len(CSV_COLUMNS):
            errors.append(
                f"{path}:{line}: {len(fields)} fields, not {len(CSV_COLUMNS)} ({HEADER}): {EXPORT_FIX}"
            )
        elif any(fields):
            records.append((line, dict(zip(CSV_COLUMNS, map(original_cell, fields), strict=True))))
        line = reader.line_num + 1
    return records, errors


def check_ratings(
    texts: dict[Path, str], item_ids: set[str], stored: list[dict[str, Any]], replace: bool
) -> CheckedRows:
    """Check the CSVs (path -> text) against the sample's items and the ratings already stored (RATINGS rows);
    with `replace`, a rater's stored ratings give way to the inputs' and are no conflict.

    A rater is one kind: a row whose rater_kind differs from that rater's earlier rows, or from its stored
    ratings, is an error (a rater both simulated and clinician would be reported as a clinician)."""
    rows, errors = [], []
    stored_pairs = {(row["item_id"], row["rater"]) for row in stored}
    stored_kinds = {} if replace else {row["rater"]: row["rater_kind"] for row in stored}
    seen: dict[tuple[str, str], str] = {}
    kinds: dict[str, tuple[str, str]] = {}  # rater -> (kind, where its first row gave it)
    for path, text in texts.items():
        records, shape_errors = read_csv_records(path, text)
        errors.extend(shape_errors)
        for line, record in records:
            where = f"{path}:{line}"
            problems = _row_problems(record, item_ids)
            key = (record["item_id"], record["rater"].strip())
            if key in seen:
                problems.append(
                    f"rater {key[1]!r} rated item {key[0]} twice (also {seen[key]}): keep one row"
                )
            elif key in stored_pairs and not replace:
                problems.append(
                    f"rater {key[1]!r} already has a stored rating of item {key[0]}: pass --replace to "
                    "replace the stored ratings of the raters in these files"
                )
            seen.setdefault(key, where)
            if (
                problem := _kind_problem(key[1], record["rater_kind"], where, kinds, stored_kinds)
            ) is not None:
                problems.append(problem)
            errors.extend(f"{where}: {problem}" for problem in problems)
            if not problems:
                rows.append(
                    {
                        "item_id": record["item_id"],
                        "rater": key[1],
                        "rater_kind": record["rater_kind"],
                        "grade": parse_grade(record["grade"]),
                        "note": record["note"] or None,
                        "rated_at": parse_rated_at(record["rated_at"]),
                        "source_file": str(path.resolve()),
                    }
                )
    return CheckedRows(rows, errors)


def _kind_problem(
    rater: str, kind: str, where: str, kinds: dict[str, tuple[str, str]], stored_kinds: dict[str, str]
) -> str | None:
    """What is wrong with `rater` being `kind` here: another kind stored, or given by its first row; that
    first row's kind is noted in `kinds`."""
    if kind not in RATER_KINDS:
        return None  # refused as it is (_row_problems)
    if rater in stored_kinds and stored_kinds[rater] != kind:
        return (
            f"rater {rater!r} is {kind} here but {stored_kinds[rater]} in the stored ratings: a rater is one "
            "kind; correct rater_kind, or pass --replace to replace the stored ratings of the raters in "
            "these files"
        )
    first_kind, first_where = kinds.setdefault(rater, (kind, where))
    if first_kind != kind:
        return f"rater {rater!r} is {kind} here but {first_kind} at {first_where}: a rater is one kind"
    return None


def read_csv_texts(paths: list[Path]) -> tuple[dict[Path, str], list[str]]:
    """Each CSV's text (a spreadsheet's byte-order mark dropped), and an error for each that is not UTF-8."""
    texts, errors = {}, []
    for path in paths:
        try:
            texts[path] = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            errors.append(f"{path}: not UTF-8 text: save it as CSV UTF-8, or {EXPORT_FIX}")
    return texts, errors


def read_ratings(labels_dir: Path) -> pa.Table:
    """DIR/ratings.parquet (RATINGS), empty when nothing has been imported yet."""
    path = Path(labels_dir) / RATINGS_FILE
    return pq.read_table(path).select(RATINGS.schema.names) if path.exists() else RATINGS.schema.empty_table()


def merged_ratings(stored: pa.Table, rows: list[dict[str, Any]]) -> pa.Table:
    """The stored ratings without those of the raters in `rows`, then `rows`, sorted by (item_id, rater)."""
    raters = {row["rater"] for row in rows}
    kept = [row for row in stored.to_pylist() if row["rater"] not in raters]
    table = pa.Table.from_pylist(kept + rows, schema=RATINGS.schema)
    return table.sort_by([(name, "ascending") for name in RATINGS.key])


def write_ratings(labels_dir: Path, table: pa.Table) -> Path:
    return write_parquet_atomic(Path(labels_dir) / RATINGS_FILE, table)


class RaterCount(NamedTuple):
    rater: str
    rater_kind: str
    n_rated: int


def rating_counts(ratings: pa.Table) -> tuple[list[RaterCount], int]:
    """Items rated per rater (by rater), and how many items have two raters or more."""
    rows = ratings.to_pylist()
    kinds = {row["rater"]: row["rater_kind"] for row in rows}
    per_rater = Counter(row["rater"] for row in rows)
    per_item = Counter(row["item_id"] for row in rows)
    counts = [RaterCount(rater, kinds[rater], per_rater[rater]) for rater in sorted(per_rater)]
    return counts, sum(1 for raters in per_item.values() if raters >= 2)
