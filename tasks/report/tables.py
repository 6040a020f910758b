"""Tables of any benchmark, drawn once as a `Table` and rendered alike to Markdown, HTML, a Prefect table
artifact and the terminal (rich), so the CLI and the artifacts show the same cells.

Pure: every renderer takes a Table and returns text or a rich renderable.
"""

import html
from collections.abc import Mapping
from typing import Any, NamedTuple

from rich.table import Table as RichTable
from rich.text import Text

from tasks.core.safe_text import markdown_cell, markdown_text, page_text


class Table(NamedTuple):
    """A titled table of text cells; `right_aligned` names the columns a terminal aligns right. On a page,
    each row's cell of `link_column` links to its entry of `links` (an address within the page)."""

    key: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    caption: str
    right_aligned: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    link_column: str = ""


def table_markdown(table: Table, note: str | None) -> str:
    """A '###' section: the title, the note as a quote, the rows (when any) and the caption; every text with
    its HTML markup escaped and its invisible characters shown (markdown_text), cells with `|` escaped."""
    lines = [f"### {markdown_text(table.title)}", ""]
    if note:
        lines += [f"> **Note:** {markdown_text(note)}", ""]
    if table.rows:
        lines.append("| " + " | ".join(map(markdown_cell, table.columns)) + " |")
        lines.append("|" + "---|" * len(table.columns))
        lines += ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in table.rows]
        lines.append("")
    return "\n".join([*lines, markdown_text(table.caption), ""])


def table_html(table: Table, note: str | None) -> str:
    """A block with the title, the note and the table; an empty table shows only its caption. Every text is
    escaped, its bidirectional and zero-width characters shown as markers (⟨U+202E⟩)."""
    head = "".join(f"<th>{page_text(column)}</th>" for column in table.columns)
    linked = table.columns.index(table.link_column) if table.links else None

    def cell_html(row: int, column: int, cell: str) -> str:
        text = page_text(cell)
        if column == linked:
            text = f'<a href="{html.escape(table.links[row])}">{text}</a>'
        return f"<td>{text}</td>"

    body = "".join(
        "<tr>" + "".join(cell_html(r, c, cell) for c, cell in enumerate(row)) + "</tr>"
        for r, row in enumerate(table.rows)
    )
    note_html = f'<p class="note">{page_text(note)}</p>' if note else ""
    content = (
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
        f"<caption>{page_text(table.caption)}</caption></table>"
        if table.rows
        else f'<p class="empty">{page_text(table.caption)}</p>'
    )
    title = f"<h3>{page_text(table.title)}</h3>"
    return f'<div class="table-block" id="table-{table.key}">{title}{note_html}{content}</div>'


def table_records(table: Table) -> list[dict[str, str]]:
    """The rows as column -> cell records, the shape of a Prefect table artifact."""
    return [dict(zip(table.columns, row, strict=True)) for row in table.rows]


def table_rich(table: Table, *, markup: bool = True, **options: Any) -> RichTable:
    """The table for a terminal; cells may hold rich markup, or are shown as they are with `markup=False`
    (labels holding brackets, such as a judge's prompts); `options` go to rich (box, title_justify...)."""
    cell = (lambda text: text) if markup else Text
    caption = cell(table.caption) if table.caption else None
    rendered = RichTable(title=table.title, caption=caption, **options)
    for column in table.columns:
        rendered.add_column(column, justify="right" if column in table.right_aligned else "left")
    for row in table.rows:
        rendered.add_row(*(cell(text) for text in row))
    return rendered


def short_keys(labels: list[str], prefix: str) -> dict[str, str]:
    """Each distinct label's short key (prefix + 1, 2, ...) in order: long labels (a judge's model, params and
    epoch) keep a terminal table within 80 columns, named once in its caption (`legend`)."""
    return {label: f"{prefix}{index}" for index, label in enumerate(dict.fromkeys(labels), start=1)}


def legend(keys: dict[str, str]) -> str:
    return "; ".join(f"{key} = {label}" for label, key in keys.items())


def format_percent(share: float | None) -> str:
    """A share in [0, 1] as a percentage with one decimal; a dash when undefined."""
    return "—" if share is None else f"{100 * share:.1f}"


def format_number(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def format_share_ci(estimate: dict[str, Any]) -> str:
    """A stored estimate {"mean", "ci"} of a share as "mean [low, high]" in %; the mean alone without a CI."""
    if estimate["mean"] is None:
        return "—"
    if estimate["ci"] is None:
        return format_percent(estimate["mean"])
    low, high = estimate["ci"]
    return f"{100 * estimate['mean']:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def format_statistic(row: Mapping[str, Any], name: str, digits: int = 2, scale: float = 1.0) -> str:
    """The one way a statistic stored by stats.statistic_columns is shown, in every table, page and terminal:
    '0.62 [0.50, 0.73]', '1.00 (no interval: 1 item, fewer than 10)', 'undefined: no item graded by both'
    (`scale` multiplies the stored value and bounds, 100 for a share shown in %). A dash: a statistic the row
    does not compute (alpha is the only one over all raters), with no reason stored."""
    estimate, note = row[name], row.get(f"{name}_undefined")
    if estimate is None:
        return note or "—"
    text = f"{scale * estimate:.{digits}f}"
    low, high = row.get(f"{name}_low"), row.get(f"{name}_high")
    if low is None or high is None:
        return f"{text} ({note})" if note else text
    return f"{text} [{scale * low:.{digits}f}, {scale * high:.{digits}f}]"
