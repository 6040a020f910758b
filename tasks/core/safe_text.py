"""Text made safe for where the project writes it: CSV cells a spreadsheet will not run as formulas, Markdown
cells that hold no markup, and page text whose invisible direction and width controls are shown.

CSV, after OWASP's CSV injection rule (owasp.org/www-community/attacks/CSV_Injection): a cell starting with
`=`, `+`, `-`, `@`, a tab or a carriage return is a formula to Excel, LibreOffice and Google Sheets, so a
text cell starting with one is written with a single quote `'` in front, which they read as text. A text
cell starting with `'` gets one more too, so that dropping the first `'` of every text cell that starts with
one (`original_cell`) gives back each value exactly. Number columns are typed and written as numbers: a
score of -0.5 stays the number -0.5.

Pages: the characters of Unicode's Bidi_Control property (PropList.txt: U+061C, U+200E, U+200F,
U+202A-U+202E, U+2066-U+2069), which reorder the text around them, and the zero-width U+200B-U+200D, U+2060
and U+FEFF, which hide text boundaries, are shown as a visible marker such as `⟨U+202E⟩`.
"""

import csv
import html
import io
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from tasks.core.files import write_atomic, write_text_atomic

# What a spreadsheet reads as the start of a formula (OWASP), and the prefix that makes it text.
FORMULA_STARTS = "=+-@\t\r"
TEXT_PREFIX = "'"
# Cells that get the prefix: the formula starts, and the prefix itself (so that it can be dropped again).
PREFIXED_STARTS = FORMULA_STARTS + TEXT_PREFIX
_PREFIXED_PATTERN = "^[" + "".join(f"\\x{{{ord(char):x}}}" for char in PREFIXED_STARTS) + "]"

BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
ZERO_WIDTH = (0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF)
INVISIBLE_MARKERS = {chr(code): f"⟨U+{code:04X}⟩" for code in sorted((*BIDI_CONTROLS, *ZERO_WIDTH))}
_SHOW_INVISIBLE = str.maketrans(INVISIBLE_MARKERS)


def neutralise_cell(text: str) -> str:
    """A text cell as written to CSV: `'` in front when it starts with a formula character or `'`."""
    return TEXT_PREFIX + text if text.startswith(tuple(PREFIXED_STARTS)) else text


def original_cell(text: str) -> str:
    """The value of a text cell the project wrote to CSV: its first `'` dropped, if it starts with one."""
    return text.removeprefix(TEXT_PREFIX)


def csv_cell(value: Any) -> Any:
    """A value as a CSV cell: text neutralised, numbers (and None, an empty cell) as they are."""
    return neutralise_cell(value) if isinstance(value, str) else value


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """The header and rows as CSV text, every text cell neutralised. Lines end in CR LF (RFC 4180): the csv
    module quotes a cell holding a character of the line end, so with LF ends a lone CR would be left
    unquoted and split its row for a reader."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([csv_cell(name) for name in header])
    writer.writerows([csv_cell(value) for value in row] for row in rows)
    return out.getvalue()


def write_csv_rows(path: Path, columns: Sequence[str], rows: Iterable[dict[str, Any]]) -> Path:
    """Records -> a CSV with exactly `columns` (a missing or None value: an empty cell), atomically."""
    return write_text_atomic(path, csv_text(columns, ([row.get(name) for name in columns] for row in rows)))


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    """The records of a CSV the project wrote, each text cell back to its value (`original_cell`)."""
    with Path(path).open(newline="", encoding="utf-8") as file:
        return [{name: original_cell(cell) for name, cell in row.items()} for row in csv.DictReader(file)]


def neutralise_table(table: pa.Table) -> pa.Table:
    """The table with every cell of its text columns neutralised; other columns (numbers, times) kept."""
    columns = []
    for column in table.columns:
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            prefixed = pc.match_substring_regex(column, _PREFIXED_PATTERN)
            column = pc.if_else(prefixed, pc.utf8_replace_slice(column, 0, 0, TEXT_PREFIX), column)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=table.schema)


def write_csv_table(path: Path, table: pa.Table) -> Path:
    """The table as CSV (pyarrow's writer: a header, then text quoted), text cells neutralised, atomically."""
    safe = neutralise_table(table)
    return write_atomic(Path(path), lambda temporary: pa_csv.write_csv(safe, temporary))


def visible_text(text: str) -> str:
    """The text with each bidirectional control or zero-width character shown as its marker (⟨U+202E⟩)."""
    return text.translate(_SHOW_INVISIBLE)


def page_text(text: str) -> str:
    """Text for a page's markup: HTML escaped, invisible characters shown."""
    return html.escape(visible_text(text))


def markdown_text(text: str) -> str:
    """Text for a Markdown file: HTML markup escaped (`<img ...>` shows as written) and invisible characters
    shown."""
    return html.escape(visible_text(text), quote=False)


def markdown_cell(text: str) -> str:
    """Text for a Markdown table cell: as markdown_text, with `|` escaped and line breaks as spaces."""
    return markdown_text(text).replace("|", "\\|").replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
