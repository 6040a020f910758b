"""The consultation report's tables and notes from metrics.json's content, and the Markdown and HTML around
them.

Pure: everything here works on the metrics dict (or the browser data) and returns Tables or text; the
renderers are the shared ones of tasks/report/. Scores and rates are stored in [0, 1] and shown in %.
"""

import html
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.figures import FIGURES
from tasks.report.html import browser_parts, figures_html, render_page, script_json
from tasks.report.tables import (
    Table,
    format_number,
    format_percent,
    format_share_ci,
    table_html,
    table_markdown,
)

NOTE_EXAMPLES = 10  # episodes a note names before it refers to metrics.json for the rest
HISTORY_COLUMNS = {
    "mni_comp": "MNI-Comp",
    "cprw": "CPRw ↓",
    "ige": "IGE",
    "hit_at_1": "Hit@1",
    "povr": "POVR ↓",
}
DIAGNOSIS_COLUMNS = {"core_dx_recall": "Core-Dx Recall", "core_dx_f1": "Core-Dx F1", "swds": "SWDS"}
PARTIAL = "partial: history and diagnosis only, 2 of the 4 stages (treatment and follow-up come with part 2)"


def history_table(metrics: dict[str, Any]) -> Table:
    """History taking: one row per model, then the real dialogues' reference where it applies."""
    rows = [
        [
            model,
            str(entry["n_episodes"]),
            *(format_share_ci(entry[name]) for name in HISTORY_COLUMNS),
            format_number(entry["secondary"]["questions"]),
            format_percent(entry["secondary"]["deflection_rate"]),
            format_percent(entry["secondary"]["red_flag_coverage"]),
            format_percent(entry["composite"]["history"]),
        ]
        for model, entry in metrics["models"].items()
    ]
    reference = metrics["reference"]
    if reference is not None:
        rows.append(
            [
                f"empirical reference ({reference['dialogues']} real dialogues)",
                "—",
                "—",
                "—",
                "—",
                format_percent(reference["hit_at_k_mean"]),
                format_percent(reference["povr_mean"]),
                "—",
                "—",
                "—",
                "—",
            ]
        )
    columns = ["Model", "n", *HISTORY_COLUMNS.values(), "questions", "deflection %", "red-flag cov. %"]
    columns.append("stage score")
    return Table(
        key="history",
        title="History taking",
        columns=columns,
        rows=rows,
        caption=(
            "Means over completed episodes (%, 95% bootstrap CI resampling cases); ↓: lower is better. POVR "
            "counts only episodes with an applicable partial-order pair. questions: mean per episode; "
            "deflection %: questions the patient deflected; red-flag cov. %: red-flag AIUs revealed. stage "
            "score: the five metrics in [0, 1] higher-better (1 - x for CPRw and POVR), averaged. The "
            "empirical reference is the mined real dialogues scored leave-one-out against the policy "
            "(Hit@3 unweighted, mean over dialogues; POVR over those with an applicable pair)."
        ),
        right_aligned=tuple(columns[1:]),
    )


def diagnosis_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [
            model,
            str(entry["n_episodes"]),
            *(format_share_ci(entry[name]) for name in DIAGNOSIS_COLUMNS),
            format_percent(entry["secondary"]["top1_accuracy"]),
            format_number(entry["secondary"]["differential_length"]),
            format_percent(entry["secondary"]["unmatched_rate"]),
            str(entry["n_unparseable"]),
            format_percent(entry["composite"]["diagnosis"]),
        ]
        for model, entry in metrics["models"].items()
    ]
    columns = ["Model", "n", *DIAGNOSIS_COLUMNS.values(), "top-1 %", "differential length", "unmatched %"]
    columns += ["unparseable", "stage score"]
    return Table(
        key="diagnosis",
        title="Diagnosis",
        columns=columns,
        rows=rows,
        caption=(
            "Means over completed episodes (%, 95% bootstrap CI resampling cases). top-1 %: the first item "
            "is a gold diagnosis; differential length: items per differential; unmatched %: items matching "
            "no KB condition; unparseable: differentials that did not parse, scored as empty. stage score: "
            "the three metrics averaged."
        ),
        right_aligned=tuple(columns[1:]),
    )


def composite_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [
            model,
            format_percent(entry["composite"]["history"]),
            format_percent(entry["composite"]["diagnosis"]),
            format_percent(entry["composite"]["score"]),
        ]
        for model, entry in metrics["models"].items()
    ]
    columns = ["Model", "history", "diagnosis", "composite (partial)"]
    return Table(
        key="composite",
        title="Composite score (partial)",
        columns=columns,
        rows=rows,
        caption=(
            f"The stage scores of the two tables above and their mean (%); {PARTIAL}. Read it beside the "
            "stage tables, never alone."
        ),
        right_aligned=tuple(columns[1:]),
    )


def terminal_table(metrics: dict[str, Any]) -> Table:
    """The stage scores turned sideways, one column per model, so an 80-column terminal shows them; the
    partial composite sits under the stages it averages."""
    models = metrics["models"]
    measures: dict[str, Any] = {"episodes": lambda e: str(e["n_episodes"])}
    measures |= {label: (lambda e, n=name: format_share_ci(e[n])) for name, label in HISTORY_COLUMNS.items()}
    measures["questions"] = lambda e: format_number(e["secondary"]["questions"])
    measures |= {
        label: (lambda e, n=name: format_share_ci(e[n])) for name, label in DIAGNOSIS_COLUMNS.items()
    }
    measures["top-1 %"] = lambda e: format_percent(e["secondary"]["top1_accuracy"])
    measures |= {
        "history stage": lambda e: format_percent(e["composite"]["history"]),
        "diagnosis stage": lambda e: format_percent(e["composite"]["diagnosis"]),
        "composite (partial)": lambda e: format_percent(e["composite"]["score"]),
    }
    rows = [[label, *(show(entry) for entry in models.values())] for label, show in measures.items()]
    return Table(
        key="results-terminal",
        title="Consultation: history taking and diagnosis, % [95% CI] over completed episodes",
        columns=["", *(name.removeprefix("threadmed/consult-") for name in models)],
        rows=rows,
        caption="↓: lower is better.",
        right_aligned=tuple(name.removeprefix("threadmed/consult-") for name in models),
    )


def department_table(metrics: dict[str, Any]) -> Table:
    names = {**HISTORY_COLUMNS, **DIAGNOSIS_COLUMNS}
    rows = [
        [department, model, str(entry["n"]), *(format_percent(entry[name]) for name in names)]
        for model, model_entry in metrics["models"].items()
        for department, entry in model_entry["departments"].items()
    ]
    rows.sort(key=lambda row: row[0])  # stable: models stay in report order within a department
    columns = ["Department", "Model", "n", *names.values()]
    return Table(
        key="departments",
        title="By department",
        columns=columns,
        rows=rows,
        caption="Means over each department's completed episodes (%), without intervals (few cases each).",
        right_aligned=tuple(columns[2:]),
    )


def usage_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [
            model,
            str(entry["usage"]["calls"]),
            str(entry["usage"]["prompt_tokens"]),
            str(entry["usage"]["completion_tokens"]),
            f"{entry['usage']['cost_usd']:.4f}",
        ]
        for model, entry in metrics["models"].items()
    ]
    columns = ["Model", "calls", "prompt tokens", "completion tokens", "cost USD"]
    return Table(
        key="usage",
        title="Tokens and cost",
        columns=columns,
        rows=rows,
        caption="Every call of the agent, failed ones included; the simulated patient makes no call.",
        right_aligned=tuple(columns[1:]),
    )


def build_tables(metrics: dict[str, Any]) -> list[Table]:
    """The report's tables from metrics.json's content: the stage tables, then the composite beside them."""
    return [
        history_table(metrics),
        diagnosis_table(metrics),
        composite_table(metrics),
        department_table(metrics),
        usage_table(metrics),
    ]


def _places(rows: list[dict[str, Any]]) -> str:
    shown = "; ".join(
        f"{row['model']} / {row['case_id']} / epoch {row['epoch']}" for row in rows[:NOTE_EXAMPLES]
    )
    more = len(rows) - NOTE_EXAMPLES
    return shown + (f"; and {more} more (metrics.json lists all)" if more > 0 else "")


def report_notes(metrics: dict[str, Any]) -> list[str]:
    """What a reader must know before trusting the tables: failures, unparseable answers, mixed settings."""
    notes = []
    failed = metrics["failed"]
    if failed:
        notes.append(
            f"{len(failed)} episode(s) failed (provider errors) and are excluded from every metric: "
            f"{_places(failed)}. Re-running the run finishes them."
        )
    unparseable = {model: e["n_unparseable"] for model, e in metrics["models"].items() if e["n_unparseable"]}
    if unparseable:
        counts = ", ".join(f"{model} {n}" for model, n in unparseable.items())
        notes.append(
            f"{sum(unparseable.values())} differential(s) did not parse after the re-ask and are scored as "
            f"empty ({counts})."
        )
    for field in ("epochs", "max_questions", "gamma", "policy_version"):
        values = {str(run[field]) for run in metrics["runs"]}
        if len(values) > 1:
            notes.append(
                f"The merged runs differ in {field} ({', '.join(sorted(values))}): models from different "
                "runs are not directly comparable."
            )
    if metrics["reference"] is None:
        notes.append("No mined empirical reference was found: the history table has no reference row.")
    notes.append(f"The composite score is {PARTIAL}.")
    return notes


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
