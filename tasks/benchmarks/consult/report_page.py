"""The consultation report's documents around its tables: the run summary line, report.md and the
self-contained index.html with the figures and the episode browser's data.
"""

import html
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.figures import FIGURES
from tasks.benchmarks.consult.notes import report_notes
from tasks.report.html import browser_parts, figures_html, render_page, script_json
from tasks.report.tables import Table, table_html, table_markdown


def run_summary(metrics: dict[str, Any]) -> str:
    runs = ", ".join(run["run_id"] for run in metrics["runs"])
    epochs = ", ".join(sorted({str(run["epochs"]) for run in metrics["runs"]}))
    max_questions = ", ".join(sorted({str(run["max_questions"]) for run in metrics["runs"]}))
    boot = metrics["settings"]
    return (
        f"Runs: {runs}. Case set: {(metrics['case_set']['fingerprint'] or 'unknown')[:12]}. "
        f"Epochs: {epochs}. "
        f"Max questions: {max_questions}. Intervals: {boot['level']:.0%} {boot['method']}, "
        f"{boot['n_resamples']} resamples, seed {boot['seed']}."
    )


def render_markdown(metrics: dict[str, Any], tables: list[Table], figures: list[str]) -> str:
    parts = ["# Consultation benchmark report", "", run_summary(metrics), ""]
    parts += ["## Notes", "", *(f"- {note}" for note in report_notes(metrics)), ""]
    parts += [table_markdown(table, None) for table in tables]
    parts += ["## Figures", ""] + [f"![{FIGURES[name]}]({name}.png)\n" for name in figures]
    return "\n".join(parts)


def render_html(
    metrics: dict[str, Any], tables: list[Table], figures: dict[str, bytes], data: dict[str, Any]
) -> str:
    """The self-contained page: notes, tables, figures as data URIs, and the browser's data as inline JSON."""
    return render_page(
        {
            "title": "Consultation benchmark report",
            "meta": html.escape(run_summary(metrics)),
            "note": "".join(f'<p class="note">{html.escape(note)}</p>' for note in report_notes(metrics)),
            "tables": "".join(table_html(table, None) for table in tables),
            "figures": figures_html(figures, FIGURES),
            "data": script_json(data),
            **browser_parts(Path(__file__).parent),
        }
    )
