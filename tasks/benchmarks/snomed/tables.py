"""The SNOMED report's tables and notes from metrics.json's content, and the Markdown and HTML around them.

Pure: everything here works on the metrics dict (or the browser data) and returns Tables or text; the
renderers are the shared ones of tasks/report/. Scores and rates are stored in [0, 1] and shown in %.
"""

import html
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.figures import FIGURES
from tasks.report.html import browser_parts, figures_html, render_page, script_json
from tasks.report.tables import (
    Table,
    format_number,
    format_percent,
    format_share_ci,
    table_html,
    table_markdown,
)

NOTE_EXAMPLES = 10  # locations a note names before it refers to metrics.json for the rest


def _total_cost(usage: dict[str, Any]) -> float:
    return usage["clinician"]["cost_usd"] + usage["patient"]["cost_usd"]


def results_table(metrics: dict[str, Any]) -> Table:
    """The main table: one row per model."""
    rows = [
        [
            model,
            str(entry["n_cases"]),
            *(format_share_ci(entry[name]) for name in ("exact_match", "precision", "recall", "f1")),
            format_percent(entry["micro"]["f1"]),
            format_percent(entry["invalid_code_rate"]),
            format_percent(entry["no_answer_rate"]),
            format_number(entry["mean_questions"]),
            format_percent(entry["leak_rate"]),
            f"{_total_cost(entry['usage']):.4f}",
        ]
        for model, entry in metrics["models"].items()
    ]
    columns = ["Model", "n", "EM", "Precision", "Recall", "F1", "micro F1", "invalid %", "no answer %"]
    columns += ["questions", "leak %", "cost USD"]
    return Table(
        key="results",
        title="Results",
        columns=columns,
        rows=rows,
        caption=(
            "Macro means over scored interviews (%, 95% bootstrap CI resampling cases); micro F1 pools all "
            "codes. invalid %: predicted codes not in the vocabulary; no answer %: interviews without a "
            "final answer; questions: mean per interview; leak %: patient replies that named a gold "
            "condition, of those the leak check read whole or found one in; cost: clinician and patient "
            "calls. Failed interviews are excluded."
        ),
        right_aligned=tuple(columns[1:]),
    )


def terminal_table(metrics: dict[str, Any]) -> Table:
    """The main results turned sideways, one column per model, so a terminal 80 columns wide shows them."""
    models = metrics["models"]
    measures = {
        "cases": lambda e: str(e["n_cases"]),
        **{label: (lambda e, n=name: format_share_ci(e[n])) for label, name in _MACRO.items()},
        "micro F1": lambda e: format_percent(e["micro"]["f1"]),
        "invalid codes %": lambda e: format_percent(e["invalid_code_rate"]),
        "no answer %": lambda e: format_percent(e["no_answer_rate"]),
        "questions": lambda e: format_number(e["mean_questions"]),
        "leaking replies %": lambda e: format_percent(e["leak_rate"]),
        "cost USD": lambda e: f"{_total_cost(e['usage']):.4f}",
    }
    rows = [[label, *(show(entry) for entry in models.values())] for label, show in measures.items()]
    return Table(
        key="results-terminal",
        title="SNOMED diagnosis: macro % [95% CI] over scored interviews",
        columns=["", *models],
        rows=rows,
        caption="",
        right_aligned=tuple(models),
    )


_MACRO = {"exact match": "exact_match", "precision": "precision", "recall": "recall", "F1": "f1"}


def answers_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [
            model,
            str(entry["n_cases"]),
            str(entry["n_failed"]),
            str(entry["n_unparseable"]),
            str(entry["n_empty_gold"]),
            format_percent(entry["micro"]["precision"]),
            format_percent(entry["micro"]["recall"]),
            format_percent(entry["malformed_code_rate"]),
            format_percent(entry["not_code_rate"]),
        ]
        for model, entry in metrics["models"].items()
    ]
    columns = ["Model", "scored", "failed", "unparseable", "empty gold", "micro P", "micro R", "malformed %"]
    columns.append("not a code %")
    return Table(
        key="answers",
        title="Interviews and codes",
        columns=columns,
        rows=rows,
        caption=(
            "scored: interviews in the metrics; failed: provider failures, not scored; unparseable: scored "
            "interviews whose final answer could not be read whole (JSON nested too deep, or too long), "
            "scored as an empty prediction; empty gold: scored "
            "interviews whose case has no gold code (perfect only with an empty final answer, never without "
            "one); malformed %: "
            "predicted codes outside the vocabulary that are no SNOMED id either (a failing check digit, "
            "or not 6-18 digits); not a code %: final-answer items that offered no code (a name alone)."
        ),
        right_aligned=tuple(columns[1:]),
    )


def _conditions_by_frequency(metrics: dict[str, Any], n: int) -> list[tuple[str, str | None]]:
    totals: dict[str, int] = {}
    displays: dict[str, str | None] = {}
    for entry in metrics["models"].values():
        for row in entry["condition_recall"]:
            totals[row["code"]] = totals.get(row["code"], 0) + row["n_gold"]
            displays[row["code"]] = row["display"]
    ranked = sorted(totals, key=lambda code: (-totals[code], code))[:n]
    return [(code, displays[code]) for code in ranked]


def condition_table(metrics: dict[str, Any], n: int) -> Table:
    """Recall per gold condition, the n most frequent conditions, a column per model."""
    models = list(metrics["models"])
    recall = {
        (model, row["code"]): row
        for model, entry in metrics["models"].items()
        for row in entry["condition_recall"]
    }

    def cell(model: str, code: str) -> str:
        row = recall.get((model, code))
        return "—" if row is None else f"{format_percent(row['recall'])} ({row['found']}/{row['n_gold']})"

    rows = [
        [code, display or "", *(cell(model, code) for model in models)]
        for code, display in _conditions_by_frequency(metrics, n)
    ]
    return Table(
        key="condition-recall",
        title="Recall per condition",
        columns=["Code", "Condition", *models],
        rows=rows,
        caption=(
            f"The {n} gold conditions seen most often: recall % (interviews that found the code / interviews "
            "whose gold has it). The full lists are in metrics.json."
        ),
        right_aligned=tuple(models),
    )


def gold_count_table(metrics: dict[str, Any]) -> Table:
    models = list(metrics["models"])
    by_count = {
        (model, row["n_gold"]): row
        for model, entry in metrics["models"].items()
        for row in entry["f1_by_gold_count"]
    }
    counts = sorted({n_gold for _, n_gold in by_count})

    def cell(model: str, n_gold: int) -> str:
        row = by_count.get((model, n_gold))
        return "—" if row is None else f"{format_percent(row['mean_f1'])} (n={row['n_cases']})"

    return Table(
        key="f1-by-gold-count",
        title="F1 by number of gold codes",
        columns=["Gold codes", *models],
        rows=[[str(n_gold), *(cell(model, n_gold) for model in models)] for n_gold in counts],
        caption="Mean F1 (%) of the scored interviews whose case has that many gold codes.",
        right_aligned=("Gold codes", *models),
    )


def usage_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [
            model,
            role,
            usage["model"] or "—",
            str(usage["calls"]),
            str(usage["prompt_tokens"]),
            str(usage["completion_tokens"]),
            f"{usage['cost_usd']:.4f}",
            str(usage["cut"]),
        ]
        for model, entry in metrics["models"].items()
        for role, usage in entry["usage"].items()
    ]
    columns = ["Model", "Role", "Called model", "calls", "prompt tokens", "completion tokens", "cost USD"]
    columns.append("cut")
    return Table(
        key="usage",
        title="Tokens and cost",
        columns=columns,
        rows=rows,
        caption=(
            "Every call of each model's interviews, failed ones included; the patient is the simulator. cut: "
            "replies cut at max_tokens."
        ),
        right_aligned=tuple(columns[3:]),
    )


def build_tables(metrics: dict[str, Any], top_conditions: int) -> list[Table]:
    """The report's tables from metrics.json's content, main table first."""
    return [
        results_table(metrics),
        answers_table(metrics),
        condition_table(metrics, top_conditions),
        gold_count_table(metrics),
        usage_table(metrics),
    ]


def _places(rows: list[dict[str, Any]], describe: Any) -> str:
    shown = "; ".join(describe(row) for row in rows[:NOTE_EXAMPLES])
    more = len(rows) - NOTE_EXAMPLES
    return shown + (f"; and {more} more (metrics.json lists all)" if more > 0 else "")


def _where(row: dict[str, Any]) -> str:
    return f"{row['model']} / {row['case_id']} / epoch {row['epoch']}"


def cut_notes(metrics: dict[str, Any]) -> list[str]:
    """The replies cut at max_tokens, by model and role: a cut final answer is not read."""
    cut = {
        model: ", ".join(f"{role} {usage['cut']}" for role, usage in entry["usage"].items() if usage["cut"])
        for model, entry in metrics["models"].items()
    }
    cut = {model: roles for model, roles in cut.items() if roles}
    if not cut:
        return []
    total = sum(usage["cut"] for entry in metrics["models"].values() for usage in entry["usage"].values())
    return [
        f"{total} repl(ies) were cut at max_tokens ({'; '.join(f'{m}: {r}' for m, r in cut.items())}): a "
        "cut final answer is not read (the clinician is asked again; its last one cut makes the interview "
        "unparseable), a cut patient reply is what the clinician heard. A larger max_tokens avoids this."
    ]


def report_notes(metrics: dict[str, Any]) -> list[str]:
    """What a reader must know before trusting the tables: failures, leaks, mixed settings, missing data."""
    notes = []
    failed = metrics["failed"]
    if failed:
        notes.append(
            f"{len(failed)} interview(s) failed (provider errors) and are excluded from every metric: "
            f"{_places(failed, _where)}. Re-running the run finishes them."
        )
    symptoms = [leak for leak in metrics["leaks"] if leak["disclosure"] == "symptoms"]
    if symptoms:
        where = _places(symptoms, lambda x: f"{_where(x)} turn {x['turn']}: {', '.join(x['codes'])}")
        notes.append(
            f"{len(symptoms)} patient repl(ies) named a gold condition under the `symptoms` disclosure, "
            "where the patient must never name a diagnosis: a simulator defect that makes these interviews "
            f"easier ({where})."
        )
    history = [leak for leak in metrics["leaks"] if leak["disclosure"] != "symptoms"]
    if history:
        notes.append(
            f"{len(history)} patient repl(ies) named a gold condition under the `history` disclosure, which "
            "allows it (patients name diagnoses they were told); the leak % column shows how often."
        )
    unverified = metrics["unverified_replies"]
    if unverified:
        where = _places(unverified, lambda x: f"{_where(x)} turn {x['turn']}: {x['letters']}")
        notes.append(
            f"{len(unverified)} patient repl(ies) hold letters the leak check cannot read (a script other "
            f"than Latin) and named nothing it read ({where}): they are left out of leak %, not counted "
            "as replies that named nothing."
        )
    notes += cut_notes(metrics)
    for field in ("disclosure", "patient_prompt_form", "patient", "epochs"):
        values = {str(run[field]) for run in metrics["runs"]}
        if len(values) > 1:
            notes.append(
                f"The merged runs differ in {field} ({', '.join(sorted(values))}): models from different "
                "runs are not directly comparable."
            )
    if not metrics["case_set"]["found"]:
        notes.append(
            f"The case set was not found at {metrics['case_set']['dir']}, or is no longer the one the runs "
            "used: conditions are shown by code."
        )
    return notes


def run_summary(metrics: dict[str, Any]) -> str:
    runs = ", ".join(run["run_id"] for run in metrics["runs"])
    case_set = metrics["case_set"]
    disclosure = ", ".join(sorted({str(run["disclosure"]) for run in metrics["runs"]}))
    # A run made before the prompt forms existed recorded none (its LLM patient saw condition names).
    forms = ", ".join(sorted({run["patient_prompt_form"] or "—" for run in metrics["runs"]}))
    epochs = ", ".join(sorted({str(run["epochs"]) for run in metrics["runs"]}))
    tags = ", ".join(case_set["gold_tags"] or []) or "—"
    boot = metrics["settings"]
    return (
        f"Runs: {runs}. Case set: {(case_set['fingerprint'] or 'unknown')[:12]} (gold scope "
        f"{case_set['gold_scope'] or '—'}, tags {tags}). Disclosure: {disclosure}. "
        f"Patient prompt form: {forms}. Epochs: {epochs}. "
        f"Intervals: {boot['level']:.0%} {boot['method']}, {boot['n_resamples']} resamples, "
        f"seed {boot['seed']}."
    )


def render_markdown(metrics: dict[str, Any], tables: list[Table], figures: list[str]) -> str:
    parts = ["# SNOMED diagnosis report", "", run_summary(metrics), ""]
    notes = report_notes(metrics)
    if notes:
        parts += ["## Notes", "", *(f"- {note}" for note in notes), ""]
    parts += [table_markdown(table, None) for table in tables]
    parts += ["## Figures", ""] + [f"![{FIGURES[name]}]({name}.png)\n" for name in figures]
    return "\n".join(parts)


def render_html(
    metrics: dict[str, Any], tables: list[Table], figures: dict[str, bytes], data: dict[str, Any]
) -> str:
    """The self-contained page: notes, tables, figures as data URIs, and the browser's data as inline JSON."""
    return render_page(
        {
            "title": "SNOMED diagnosis report",
            "meta": html.escape(run_summary(metrics)),
            "note": "".join(f'<p class="note">{html.escape(note)}</p>' for note in report_notes(metrics)),
            "tables": "".join(table_html(table, None) for table in tables),
            "figures": figures_html(figures, FIGURES),
            "data": script_json(data),
            **browser_parts(Path(__file__).parent),
        }
    )
