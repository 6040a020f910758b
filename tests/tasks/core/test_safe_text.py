"""CSV cells no spreadsheet runs, Markdown cells that hold no markup, invisible characters shown: worked
examples, then the invariants as properties (every value read back exactly, no output starting a formula)."""

import csv
import io
import re

import pyarrow as pa
import pyarrow.csv as pa_csv
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tasks.core.safe_text import (
    FORMULA_STARTS,
    INVISIBLE_MARKERS,
    csv_text,
    markdown_cell,
    neutralise_cell,
    neutralise_table,
    original_cell,
    read_csv_rows,
    visible_text,
    write_csv_rows,
    write_csv_table,
)

# Characters that matter here, mixed into arbitrary text so that the properties meet them often.
SPECIAL = st.sampled_from([*FORMULA_STARTS, "'", '"', ",", "\n", "|", "<", "&", *INVISIBLE_MARKERS])
TEXTS = st.lists(st.one_of(SPECIAL, st.text(max_size=3)), max_size=8).map("".join)


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ('=HYPERLINK("http://x","y")', '\'=HYPERLINK("http://x","y")'),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("'quoted", "''quoted"),
        ("gpt-4o", "gpt-4o"),
        (" =1", " =1"),
        ("", ""),
    ],
)
def test_a_text_cell_starting_a_formula_or_a_quote_gets_one_quote_in_front(value, written):
    assert (neutralise_cell(value), original_cell(neutralise_cell(value))) == (written, value)


def test_text_columns_are_neutralised_and_number_columns_stay_numbers():
    assert csv_text(["model", "score", "note"], [["=1+2", -0.5, None], ["-x", 3, "@a"]]) == (
        "model,score,note\r\n'=1+2,-0.5,\r\n'-x,3,'@a\r\n"
    )
    table = pa.table({"model": ["=1+2", None, "ok"], "score": [-0.5, None, 1.0], "turn": [-1, 0, 2]})
    assert neutralise_table(table).to_pylist() == [
        {"model": "'=1+2", "score": -0.5, "turn": -1},
        {"model": None, "score": None, "turn": 0},
        {"model": "ok", "score": 1.0, "turn": 2},
    ]
    assert neutralise_table(table).schema == table.schema


def test_the_written_files_read_back_to_the_values(tmp_path):
    rows = [{"judge": "=cmd", "kappa": -0.25}, {"judge": "'a", "kappa": None}]
    path = write_csv_rows(tmp_path / "a.csv", ["judge", "kappa"], rows)
    assert path.read_bytes() == b"judge,kappa\r\n'=cmd,-0.25\r\n''a,\r\n"
    assert read_csv_rows(path) == [{"judge": "=cmd", "kappa": "-0.25"}, {"judge": "'a", "kappa": ""}]
    table = write_csv_table(tmp_path / "t.csv", pa.table({"model": ["+x"], "mean": [-0.5]}))
    assert table.read_text() == '"model","mean"\n"\'+x",-0.5\n'


def test_markdown_cells_escape_markup_and_pipes_and_show_invisible_characters():
    assert markdown_cell("<img src=x onerror=alert(1)> a|b\nc & \u202ed") == (
        "&lt;img src=x onerror=alert(1)&gt; a\\|b c &amp; ⟨U+202E⟩d"
    )


def test_every_bidi_control_and_zero_width_character_has_a_marker_and_nothing_else_does():
    assert visible_text("a\u202eb\u2066c\u200bd\ufeffe\u061cf") == (
        "a⟨U+202E⟩b⟨U+2066⟩c⟨U+200B⟩d⟨U+FEFF⟩e⟨U+061C⟩f"
    )
    assert sorted(f"{ord(char):04X}" for char in INVISIBLE_MARKERS) == [
        "061C", "200B", "200C", "200D", "200E", "200F", "202A", "202B", "202C", "202D", "202E", "2060",
        "2066", "2067", "2068", "2069", "FEFF",
    ]  # fmt: skip
    assert visible_text("שלום – עברית, emoji 🩺, e\u0301") == "שלום – עברית, emoji 🩺, e\u0301"


@given(TEXTS)
def test_no_neutralised_cell_starts_a_formula_and_each_reads_back_exactly(value):
    written = neutralise_cell(value)
    assert not written.startswith(tuple(FORMULA_STARTS))
    assert original_cell(written) == value
    assert len(written) - len(value) in (0, 1)


@given(st.lists(st.lists(st.one_of(TEXTS, st.none(), st.floats(allow_nan=False)), min_size=2, max_size=2)))
def test_a_csv_we_write_reads_back_to_its_values_through_any_csv_reader(rows):
    text = csv_text(["a", "b"], rows)
    read = list(csv.reader(io.StringIO(text, newline="")))
    assert read[0] == ["a", "b"]
    expected = [["" if v is None else v if isinstance(v, str) else repr(v) for v in row] for row in rows]
    assert [[original_cell(cell) for cell in row] for row in read[1:]] == expected
    pairs = [zip(row, values, strict=True) for row, values in zip(read[1:], rows, strict=True)]
    texts = [cell for row in pairs for cell, value in row if isinstance(value, str)]
    assert not any(cell.startswith(tuple(FORMULA_STARTS)) for cell in texts)  # numbers may: they are typed


@given(st.lists(st.one_of(TEXTS, st.none()), max_size=20))
def test_the_table_writer_neutralises_each_cell_as_the_cell_rule_does(values):
    table = pa.table({"text": pa.array(values, pa.string()), "large": pa.array(values, pa.large_string())})
    expected = [None if value is None else neutralise_cell(value) for value in values]
    assert neutralise_table(table).column("text").to_pylist() == expected
    assert neutralise_table(table).column("large").to_pylist() == expected
    out = io.BytesIO()
    pa_csv.write_csv(neutralise_table(table), out)
    for row in csv.reader(io.StringIO(out.getvalue().decode(), newline="")):
        assert not row[0].startswith(tuple(FORMULA_STARTS))


@given(TEXTS)
def test_visible_text_shows_each_invisible_character_and_changes_nothing_else(text):
    assume("⟨" not in text)  # a marker written in the text itself would read back as its character
    shown = visible_text(text)
    assert not set(shown) & set(INVISIBLE_MARKERS)
    assert re.sub(r"⟨U\+([0-9A-F]{4})⟩", lambda marker: chr(int(marker[1], 16)), shown) == text
    # Linear: each character becomes at most one marker.
    assert len(shown) <= len(text) * max(map(len, INVISIBLE_MARKERS.values()))
