"""One Table, four renderings: Markdown, HTML, Prefect table records and the terminal's rich table."""

from rich.console import Console

from tasks.report.tables import Table, table_html, table_markdown, table_records, table_rich

TABLE = Table(
    "scores", "Scores", ["Model", "n"], [["a|b", "3"], ["<c>", "12"]], "Judged turns.", right_aligned=("n",)
)
EMPTY = Table("coverage", "Coverage", ["Model"], [], "Not computed: one model only.")


def test_markdown_escapes_pipes_and_puts_the_note_first():
    assert table_markdown(TABLE, "stand-in judge") == (
        "### Scores\n\n> **Note:** stand-in judge\n\n| Model | n |\n|---|---|\n| a\\|b | 3 |\n| <c> | 12 |\n"
        "\nJudged turns.\n"
    )


def test_an_empty_table_shows_only_its_caption():
    assert table_markdown(EMPTY, None) == "### Coverage\n\nNot computed: one model only.\n"
    assert table_html(EMPTY, None) == (
        '<div class="table-block" id="table-coverage"><h3>Coverage</h3>'
        '<p class="empty">Not computed: one model only.</p></div>'
    )


def test_html_escapes_every_cell():
    rendered = table_html(TABLE, None)
    assert "<td>&lt;c&gt;</td>" in rendered
    assert "<caption>Judged turns.</caption>" in rendered
    assert rendered.startswith('<div class="table-block" id="table-scores"><h3>Scores</h3><table>')


def test_records_are_the_rows_by_column():
    assert table_records(TABLE) == [{"Model": "a|b", "n": "3"}, {"Model": "<c>", "n": "12"}]


def test_rich_table_has_the_same_cells_and_aligns_the_named_columns_right():
    rendered = table_rich(TABLE)
    assert [column.header for column in rendered.columns] == ["Model", "n"]
    assert [column.justify for column in rendered.columns] == ["left", "right"]
    assert list(rendered.columns[0].cells) == ["a|b", "<c>"]
    console = Console(width=40, record=True)
    console.print(rendered)
    text = console.export_text()
    assert "Scores" in text and "Judged turns." in text
    assert "│  3 │" in text


def test_rich_table_without_caption_prints_none():
    console = Console(width=40, record=True)
    console.print(table_rich(EMPTY._replace(caption="")))
    assert console.export_text().splitlines()[0].strip() == "Coverage"
