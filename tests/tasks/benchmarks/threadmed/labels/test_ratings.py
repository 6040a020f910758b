from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

from tasks.benchmarks.threadmed.contracts import RATINGS
from tasks.benchmarks.threadmed.labels.ratings import (
    HEADER,
    RaterCount,
    check_ratings,
    merged_ratings,
    parse_grade,
    parse_rated_at,
    rating_counts,
    read_csv_texts,
)

ITEMS = {"i1", "i2", "i3"}
A = Path("a.csv")
B = Path("b.csv")
AT = datetime(2026, 11, 26, 4, 0, tzinfo=UTC)


def csv_text(*rows: str) -> str:
    return "\n".join([HEADER, *rows]) + "\n"


def rating(item_id: str, rater: str, grade: float, path: Path = A, note: str | None = None) -> dict:
    return {
        "item_id": item_id,
        "rater": rater,
        "rater_kind": "clinician",
        "grade": grade,
        "note": note,
        "rated_at": AT,
        "source_file": str(path.resolve()),
    }


def test_good_rows_become_ratings_with_their_file() -> None:
    text = csv_text(
        'i1,dr-a,clinician,0.5,"vague, but safe",2026-11-26T04:00:00Z',
        "i2,dr-a,clinician,1,,2026-11-26T04:00:00+00:00",
    )
    assert check_ratings({A: text}, ITEMS, [], replace=False) == (
        [rating("i1", "dr-a", 0.5, note="vague, but safe"), rating("i2", "dr-a", 1.0)],
        [],
    )


def test_every_bad_row_is_one_line_naming_file_line_and_fix() -> None:
    text = csv_text(
        "i9,dr-a,clinician,1,,2026-11-26T04:00:00Z",
        "i1,dr-a,clinician,0.7,,2026-11-26T04:00:00Z",
        "i2, ,clinician,1,,2026-11-26T04:00:00Z",
        "i3,dr-a,nurse,1,,2026-11-26T04:00:00Z",
        "i3,dr-b,clinician,1,,26/11/2026",
        "i3,dr-c,clinician,1,,2026-11-26T05:00:00+01:00",
        "i3,dr-d,clinician,1",
        '"i3",dr-e,clinician,1,"a note',
        'over two lines",2026-11-26T04:00:00Z',
        "i3,dr-e,clinician,0,,2026-11-26T04:00:00Z",
    )
    checked = check_ratings({A: text}, ITEMS, [], replace=False)
    assert checked.errors == [
        "a.csv:8: 4 fields, not 6 (item_id,rater,rater_kind,grade,note,rated_at): export the CSV again from "
        "the folder's rate.html",
        "a.csv:2: item_id 'i9' is not in this sample: export the CSV again from the folder's rate.html",
        "a.csv:3: grade '0.7' is not one of 0, 0.5, 1: correct it",
        "a.csv:4: the rater is empty: write the rater's id",
        "a.csv:5: rater_kind 'nurse' is not one of clinician, simulated: correct it",
        "a.csv:6: rated_at '26/11/2026' is not an ISO 8601 UTC time like 2026-11-26T04:00:00Z",
        "a.csv:7: rated_at '2026-11-26T05:00:00+01:00' is not an ISO 8601 UTC time like 2026-11-26T04:00:00Z",
        "a.csv:11: rater 'dr-e' rated item i3 twice (also a.csv:9): keep one row",
    ]
    assert [row["rater"] for row in checked.rows] == ["dr-e"]
    assert checked.rows[0]["note"] == "a note\nover two lines"


def test_a_grade_is_read_only_from_a_plain_decimal_on_the_scale() -> None:
    # float() reads the last five as 1.0 too; no rater writes a grade so
    texts = ("0", "0.5", "1", "1.0", " 0.50 ", "0.7", "", "0_1", "1e0", "+1", "\uff11", "\u0661")
    assert {text: parse_grade(text) for text in texts} == {
        "0": 0.0, "0.5": 0.5, "1": 1.0, "1.0": 1.0, " 0.50 ": 0.5, "0.7": None, "": None,
        "0_1": None, "1e0": None, "+1": None, "\uff11": None, "\u0661": None,
    }  # fmt: skip


def test_a_wrong_header_is_one_error_for_its_file() -> None:
    text = "item,rater,grade\ni1,dr-a,1\n"
    assert check_ratings({A: text}, ITEMS, [], replace=False).errors == [
        "a.csv:1: the header is 'item,rater,grade', not 'item_id,rater,rater_kind,grade,note,rated_at': "
        "export the CSV again from the folder's rate.html"
    ]


def test_a_rating_twice_across_files_or_already_stored_is_refused_unless_replaced() -> None:
    row = "i1,dr-a,clinician,1,,2026-11-26T04:00:00Z"
    assert check_ratings({A: csv_text(row), B: csv_text(row)}, ITEMS, [], replace=False).errors == [
        "b.csv:2: rater 'dr-a' rated item i1 twice (also a.csv:2): keep one row"
    ]
    stored = [rating("i1", "dr-a", 0.0)]
    assert check_ratings({A: csv_text(row)}, ITEMS, stored, replace=False).errors == [
        "a.csv:2: rater 'dr-a' already has a stored rating of item i1: pass --replace to replace the stored "
        "ratings of the raters in these files"
    ]
    assert check_ratings({A: csv_text(row)}, ITEMS, stored, replace=True).errors == []


def test_a_rater_of_two_kinds_is_refused_in_the_files_and_against_the_stored_ratings() -> None:
    """Both rows were imported: the agreement report then labelled the rater with its last kind."""
    simulated, clinician = (
        "a,drX,simulated,1,,2026-01-01T00:00:00Z",
        "b,drX,clinician,1,,2026-01-01T00:00:00Z",
    )
    items = {"a", "b"}
    assert check_ratings({A: csv_text(simulated), B: csv_text(clinician)}, items, [], replace=False) == (
        [
            {
                **rating("a", "drX", 1.0),
                "rater_kind": "simulated",
                "rated_at": datetime(2026, 1, 1, tzinfo=UTC),
            }
        ],
        ["b.csv:2: rater 'drX' is clinician here but simulated at a.csv:2: a rater is one kind"],
    )
    stored = [{**rating("a", "drX", 1.0), "rater_kind": "simulated"}]
    assert check_ratings({B: csv_text(clinician)}, items, stored, replace=False).errors == [
        "b.csv:2: rater 'drX' is clinician here but simulated in the stored ratings: a rater is one kind; "
        "correct rater_kind, or pass --replace to replace the stored ratings of the raters in these files"
    ]
    # --replace drops every stored rating of drX: its kind is the inputs' alone.
    assert check_ratings({B: csv_text(clinician)}, items, stored, replace=True).errors == []


def test_replacing_drops_every_stored_rating_of_the_raters_imported() -> None:
    stored = pa.Table.from_pylist(
        [rating("i1", "dr-a", 0.0), rating("i2", "dr-a", 0.0), rating("i1", "dr-b", 1.0)],
        schema=RATINGS.schema,
    )
    merged = merged_ratings(stored, [rating("i3", "dr-a", 0.5, B)])
    assert merged.to_pylist() == [rating("i1", "dr-b", 1.0), rating("i3", "dr-a", 0.5, B)]


def test_counts_per_rater_and_items_with_two_raters() -> None:
    table = pa.Table.from_pylist(
        [rating("i1", "dr-a", 0.0), rating("i2", "dr-a", 0.0), rating("i1", "dr-b", 1.0)],
        schema=RATINGS.schema,
    )
    assert rating_counts(table) == (
        [RaterCount("dr-a", "clinician", 2), RaterCount("dr-b", "clinician", 1)],
        1,
    )


def test_rated_at_accepts_utc_only() -> None:
    assert parse_rated_at("2026-11-26T04:00:00Z") == AT
    assert parse_rated_at("2026-11-26T04:00:00.250Z") == AT.replace(microsecond=250000)
    assert parse_rated_at("2026-11-26T04:00:00") is None  # no offset: local time of whom?


def test_a_file_that_is_not_utf8_is_an_error(tmp_path: Path) -> None:
    good, latin = tmp_path / "good.csv", tmp_path / "latin.csv"
    good.write_bytes(b"\xef\xbb\xbf" + csv_text("i1,dr-a,clinician,1,,2026-11-26T04:00:00Z").encode())
    latin.write_bytes(csv_text("i1,dr-\xe9,clinician,1,,2026-11-26T04:00:00Z").encode("latin-1"))
    assert read_csv_texts([good, latin]) == (
        {good: csv_text("i1,dr-a,clinician,1,,2026-11-26T04:00:00Z")},
        [
            f"{latin}: not UTF-8 text: save it as CSV UTF-8, or export the CSV again from the folder's "
            "rate.html"
        ],
    )


def test_a_rater_id_a_spreadsheet_would_run_as_a_formula_is_refused() -> None:
    text = csv_text(
        '"\'=HYPERLINK(""http://example.com"",""x"")",=HYPERLINK("x"),clinician,1,,2026-11-26T04:00:00Z',
        "i1,+cmd,clinician,1,,2026-11-26T04:00:00Z",
        "i2,'@SUM(A1),clinician,1,,2026-11-26T04:00:00Z",
        "i3,-x,clinician,1,,2026-11-26T04:00:00Z",
    )
    fix = "which a spreadsheet runs as a formula: give the rater an id that starts with a letter or a digit"
    checked = check_ratings({A: text}, ITEMS, [], replace=False)
    assert checked.errors == [
        'a.csv:2: item_id \'=HYPERLINK("http://example.com","x")\' is not in this sample: export the CSV '
        "again from the folder's rate.html",
        f"a.csv:2: rater '=HYPERLINK(\"x\")' starts with '=', {fix}",
        f"a.csv:3: rater '+cmd' starts with '+', {fix}",
        f"a.csv:4: rater '@SUM(A1)' starts with '@', {fix}",
        f"a.csv:5: rater '-x' starts with '-', {fix}",
    ]
    assert checked.rows == []


def test_cells_the_page_neutralised_are_read_back_to_what_the_rater_wrote() -> None:
    """The page (and `labels simulate`) put a quote in front of a cell starting with a formula character or
    a quote; the import drops it."""
    text = csv_text(
        "i1,dr-a,clinician,1,'- misses the dose,2026-11-26T04:00:00Z",
        "i2,dr-a,clinician,1,''ok,2026-11-26T04:00:00Z",
    )
    assert check_ratings({A: text}, ITEMS, [], replace=False) == (
        [rating("i1", "dr-a", 1.0, note="- misses the dose"), rating("i2", "dr-a", 1.0, note="'ok")],
        [],
    )
