"""One Table, four renderings: Markdown, HTML, Prefect table records and the terminal's rich table."""

from rich.console import Console

from tasks.report.stats import BootstrapCI, Undefined, statistic_columns, value_columns
from tasks.report.tables import (
    Table,
    format_statistic,
    legend,
    short_keys,
    table_html,
    table_markdown,
    table_records,
    table_rich,
)

TABLE = Table(
    "scores", "Scores", ["Model", "n"], [["a|b", "3"], ["<c>", "12"]], "Judged turns.", right_aligned=("n",)
)
EMPTY = Table("coverage", "Coverage", ["Model"], [], "Not computed: one model only.")


def test_markdown_escapes_pipes_and_html_and_puts_the_note_first():
    assert table_markdown(TABLE, "stand-in judge") == (
        "### Scores\n\n> **Note:** stand-in judge\n\n| Model | n |\n|---|---|\n| a\\|b | 3 |\n"
        "| &lt;c&gt; | 12 |\n\nJudged turns.\n"
    )


def test_markup_and_invisible_characters_in_any_text_of_a_table_are_shown_as_written():
    """A model named with an image tag, a right-to-left override and a zero-width space: no Markdown viewer
    or page renders the tag, and neither shows the text reordered or joined."""
    hostile = "<img src=x onerror=alert(1)>\u202egpt\u200b|x"
    table = Table("t", f"Judge {hostile}", ["model", "n"], [[hostile, "1"]], f"Caption {hostile}")
    shown = "&lt;img src=x onerror=alert(1)&gt;⟨U+202E⟩gpt⟨U+200B⟩"
    assert table_markdown(table, f"note {hostile}").splitlines() == [
        f"### Judge {shown}|x",
        "",
        f"> **Note:** note {shown}|x",
        "",
        "| model | n |",
        "|---|---|",
        f"| {shown}\\|x | 1 |",
        "",
        f"Caption {shown}|x",
    ]
    assert table_html(table, f"note {hostile}") == (
        f'<div class="table-block" id="table-t"><h3>Judge {shown}|x</h3><p class="note">note {shown}|x</p>'
        f"<table><thead><tr><th>model</th><th>n</th></tr></thead><tbody><tr><td>{shown}|x</td><td>1</td>"
        f"</tr></tbody><caption>Caption {shown}|x</caption></table></div>"
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


def test_html_links_each_cell_of_the_link_column_to_its_row_address():
    linked = TABLE._replace(links=("#compare?a=x&b=y", "#t<2>"), link_column="Model")
    assert table_html(linked, None).split("<tbody>")[1].split("</tbody>")[0] == (
        '<tr><td><a href="#compare?a=x&amp;b=y">a|b</a></td><td>3</td></tr>'
        '<tr><td><a href="#t&lt;2&gt;">&lt;c&gt;</a></td><td>12</td></tr>'
    )


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


def test_rich_table_without_markup_shows_brackets_as_they_are():
    label = "x/judge [rubric_v1 4479b7]"
    judge = Table("j", "Judges", ["Judge"], [[label]], f"J1 = {label}")
    for markup, shown in ((True, "x/judge"), (False, label)):
        console = Console(width=60, record=True)
        console.print(table_rich(judge, markup=markup))
        lines = console.export_text().splitlines()
        caption = " ".join(line.strip() for line in lines[6:])
        assert (lines[4].strip("│ "), caption) == (shown, f"J1 = {shown}")


def test_short_keys_number_each_distinct_label_once_and_the_legend_names_them():
    keys = short_keys(["judge a", "judge b", "judge a"], "J")
    assert keys == {"judge a": "J1", "judge b": "J2"}
    assert legend(keys) == "J1 = judge a; J2 = judge b"


def test_a_statistic_is_shown_one_way_whatever_it_is() -> None:
    """format_statistic of the columns stats.statistic_columns and value_columns store."""
    given = [
        (BootstrapCI(0.625, 0.5, 0.75, 40, 100), "0.62 [0.50, 0.75]"),
        (BootstrapCI(1.0, None, None, 1, 100, "1 item, fewer than 10"),
         "1.00 (no interval: 1 item, fewer than 10)"),
        (BootstrapCI(0.5, None, None, 12, 100, "undefined in every resample"),
         "0.50 (no interval: undefined in every resample)"),
        (Undefined("no item graded by both", 0), "undefined: no item graded by both"),
    ]  # fmt: skip
    assert [format_statistic(statistic_columns("kappa", value), "kappa") for value, _ in given] == [
        shown for _, shown in given
    ]
    assert format_statistic(value_columns("exact", 0.6), "exact", 1, scale=100) == "60.0"
    assert format_statistic(
        value_columns("exact", Undefined("no turn graded by both judges", 0)), "exact"
    ) == ("undefined: no turn graded by both judges")
    assert format_statistic({"alpha": None}, "alpha") == "—"  # not computed for the row, no reason stored
