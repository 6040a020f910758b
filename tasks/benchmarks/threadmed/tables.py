"""The paper's tables from metrics.json's content, and the report's Markdown and HTML page around them.

Pure: everything here works on the metrics dict (or the browser data) and returns Tables or text; the
renderers are the shared ones of tasks/report/.
"""

import html
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from tasks.benchmarks.threadmed.figures import FIGURES
from tasks.benchmarks.threadmed.metrics import TURN_GROUPS
from tasks.report.html import browser_parts, data_parts, figures_html, render_page
from tasks.report.stats import significance_stars
from tasks.report.tables import Table, format_statistic, short_keys, table_html, table_markdown

OVERLAP_JUDGE_PREFIX = "threadmed/overlap-judge"
PANEL_PREFIX = "judge panel: "


def panel_name(judges: list[str]) -> str:
    """What a report names as its judge when a panel grades: the panel's judges."""
    return PANEL_PREFIX + ", ".join(judges)


def judge_note(judge_model: str) -> str | None:
    """The warning every table carries when the scores come from the lexical overlap judge (alone, or in a
    panel)."""
    if judge_model.startswith(PANEL_PREFIX) and OVERLAP_JUDGE_PREFIX in judge_model:
        return (
            f"Graded by a {judge_model} that includes {OVERLAP_JUDGE_PREFIX}, a word-overlap stand-in for "
            "smoke tests: these numbers are not comparable to an LLM judge's or to the paper's."
        )
    if not judge_model.startswith(OVERLAP_JUDGE_PREFIX):
        return None
    return (
        f"Scored by {judge_model}, a word-overlap stand-in for smoke tests: these numbers are not "
        "comparable to an LLM judge's or to the paper's."
    )


def _number(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci_name(metrics: dict[str, Any]) -> str:
    return f"{metrics['bootstrap']['level']:.0%} CI"


def _with_ci(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "—"
    return _number(value) if ci is None else f"{value:.1f} [{ci[0]:.1f}, {ci[1]:.1f}]"


def _p_value(p: float | None) -> str:
    if p is None:
        return "—"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _conditions(metrics: dict[str, Any]) -> Iterable[tuple[str, str, dict[str, Any]]]:
    for model, entry in metrics["models"].items():
        for condition, values in entry.items():
            if condition != "ablation":
                yield model, condition, values


def _overall_table(metrics: dict[str, Any]) -> Table:
    rows = [["Physician", "", "", "", "", "", "", _number(metrics["physician_avg_words"], 0), ""]]
    for model, condition, values in _conditions(metrics):
        o = values["overall"]
        rows.append(
            [
                model,
                condition,
                str(o["n"]),
                _with_ci(o["mean"], o["ci"]),
                _number(o["correct_pct"]),
                _number(o["partial_pct"]),
                _number(o["wrong_pct"]),
                _number(o["avg_words"], 0),
                str(o["n_unscored"]),
            ]
        )
    columns = ["Model", "Condition", "n", f"Mean [{_ci_name(metrics)}]", "Correct %", "Partial %", "Wrong %"]
    caption = (
        "Mean judge score on a 0-100 scale (0 wrong, 50 partially correct, 100 correct). Unscored: turns "
        "without a parsed judgment (unparseable, a judge reply cut at max_tokens, a failed judge call, the "
        "model's answer failed or not run), excluded from every metric."
    )
    by_status = [
        f"{model} {condition}: " + ", ".join(f"{status} {count}" for status, count in unscored.items())
        for model, condition, values in _conditions(metrics)
        if (unscored := values["overall"].get("unscored"))
    ]
    if by_status:
        caption += f" Unscored by status: {'; '.join(by_status)}."
    truncated = [
        f"{model} {condition} {values['overall']['n_truncated']}"
        for model, condition, values in _conditions(metrics)
        if values["overall"].get("n_truncated")
    ]
    if truncated:
        caption += (
            " Answers cut at max_tokens (judged as given, unless the run's config marks them unjudged as "
            f"'truncated'): {', '.join(truncated)}."
        )
    return Table("overall", "Overall performance", [*columns, "Avg words", "Unscored"], rows, caption)


# The overall table's columns the terminal summary keeps (model, condition, n, mean [CI], wrong %).
SUMMARY_COLUMNS = {0: "model", 1: "condition", 2: "n", 3: "mean [CI]", 6: "wrong %"}


def summary_table(metrics: dict[str, Any]) -> Table:
    """The overall table cut to what a terminal shows after a report: its model rows, five columns."""
    overall = _overall_table(metrics)
    model_rows = [row for row in overall.rows if row[1]]  # the physician's row has no condition
    return Table(
        "summary",
        "Overall (0-100)",
        list(SUMMARY_COLUMNS.values()),
        [[row[index] for index in SUMMARY_COLUMNS] for row in model_rows],
        "",
        right_aligned=("n", "wrong %"),
    )


def _group_table(metrics: dict[str, Any], key: str, title: str, cell: Callable[[dict], str]) -> Table:
    rows = [
        [model, condition, *(cell(values["turn_groups"][name]) for name, _, _ in TURN_GROUPS)]
        for model, condition, values in _conditions(metrics)
    ]
    caption = (
        f"0-based turns; cells are estimate [{_ci_name(metrics)}] (n). Stars: one-sided Mann-Whitney U "
        "of T0 against the group (T0 greater): * p < 0.05, ** p < 0.01, *** p < 0.001, ns not significant. "
        "T6+ is indicative."
    )
    return Table(key, title, ["Model", "Condition", *(name for name, _, _ in TURN_GROUPS)], rows, caption)


def _mean_cell(group: dict[str, Any]) -> str:
    if group["n"] == 0:
        return "—"
    return f"{_with_ci(group['mean'], group['ci'])}{significance_stars(group['p_vs_t0'])} (n={group['n']})"


def _wrong_cell(group: dict[str, Any]) -> str:
    if group["n"] == 0:
        return "—"
    return f"{_with_ci(group['wrong_pct'], group['wrong_ci'])}{significance_stars(group['p_vs_t0'])}"


def _consistency_table(metrics: dict[str, Any]) -> Table:
    rows = []
    for model, condition, values in _conditions(metrics):
        c = values["ccs"]
        rows.append(
            [
                model,
                condition,
                str(c["n_conversations"]),
                _with_ci(c["ccs"], c["ci"]),
                _number(c["floor"]),
                _number(c["ceiling"]),
                _number(c["volatile_pct"]),
                _number(c["degraded_pct"]),
            ]
        )
    columns = ["Model", "Condition", "Conversations", f"CCS [{_ci_name(metrics)}]", "Floor", "Ceiling"]
    caption = (
        "Conversations with at least 3 judged turns; CCS = 100 - mean(max - min). Floor/Ceiling: mean "
        "per-conversation worst and best score. Volatile: holds both a correct and a wrong answer. "
        "Degraded: mean over turns >= 1 more than 10 points below turn 0 (among those with turn 0 judged)."
    )
    columns += ["Volatile %", "Degraded %"]
    return Table("consistency", "Conversational Consistency Score", columns, rows, caption)


def _propagation_table(metrics: dict[str, Any]) -> Table:
    rows = []
    for model, condition, values in _conditions(metrics):
        e = values["epr"]
        amplification = "—" if e["amplification"] is None else f"{e['amplification']:.1f}×"
        rows.append(
            [
                model,
                condition,
                f"{_with_ci(e['epr'], e['ci'])} (n={e['n_after_wrong']})",
                _number(e["after_partial"]),
                _number(e["after_correct"]),
                amplification,
            ]
        )
    columns = ["Model", "Condition", f"EPR % [{_ci_name(metrics)}]", "After partial %", "After correct %"]
    caption = (
        "Over consecutive judged turns (t, t+1) of a conversation. EPR: wrong rate at t+1 after a wrong turn "
        "(n such pairs); after partial/correct likewise. Amplification: EPR / after-correct."
    )
    return Table("error-propagation", "Error Propagation Rate", [*columns, "Amplification"], rows, caption)


def _ablation_table(metrics: dict[str, Any]) -> Table:
    rows = []
    for model, entry in metrics["models"].items():
        a = entry.get("ablation")
        if a is None:
            continue
        share = "—" if a["q_difficulty_share"] is None else f"{100 * a['q_difficulty_share']:.0f}% of drop"
        effect = "—" if a["context_effect"] is None else f"{a['context_effect']:+.1f} ({_p_value(a['p'])})"
        rows.append(
            [model, _number(a["t0"]), _number(a["baseline_t2"]), _number(a["oracle_t2"]), share, effect]
        )
    caption = (
        "Q-difficulty: (T0 - oracle T2) / (T0 - baseline T2); above 100% the oracle scores below baseline "
        "T2, i.e. the model's own earlier answers helped. Context effect: oracle T2 - baseline T2, with a "
        "two-sided Mann-Whitney U of baseline against oracle scores over turns 1-5."
        if rows
        else "Not computed: no model was evaluated in both the baseline and the oracle condition."
    )
    columns = ["Model", "T0", "Baseline T2", "Oracle T2", "Q-difficulty", "Context effect"]
    return Table("oracle-ablation", "Oracle-physician ablation", columns, rows, caption)


def _coverage_table(metrics: dict[str, Any]) -> Table:
    coverage = metrics["coverage"]
    columns = ["Model", "Only it correct", "% of pairs"]
    if coverage is None:
        caption = "Not computed: needs at least two models evaluated in the baseline condition."
        return Table("coverage", "Coverage across models", columns, [], caption)
    n_pairs = coverage["n_pairs"]
    rows = [
        [model, str(count), _number(100 * count / n_pairs if n_pairs else None)]
        for model, count in coverage["unique"].items()
    ]
    caption = (
        f"{n_pairs} baseline QA pairs judged for every model; no model fully correct on "
        f"{_number(coverage['unsolved_pct'])}% of them."
    )
    return Table("coverage", "Coverage across models", columns, rows, caption)


def _length_table(metrics: dict[str, Any]) -> Table:
    rows = [
        [model, condition, _number(values["length"]["spearman_r"], 3), _p_value(values["length"]["p"])]
        for model, condition, values in _conditions(metrics)
    ]
    caption = "Spearman correlation of the answer's word count with its score (two-sided p)."
    return Table(
        "length", "Answer length and score", ["Model", "Condition", "Spearman r", "p"], rows, caption
    )


def _differing_cell(result: dict[str, Any] | None) -> str:
    """'18.2 (2 of 11)'; 'undefined: ...' with the reason; a dash where it does not apply (one sample)."""
    if result is None:
        return "—"
    if result["pct"] is None:
        return format_statistic(result, "pct")
    return f"{_number(result['pct'])} ({result['count']} of {result['n']})"


def _panel_tables(metrics: dict[str, Any]) -> list[Table]:
    """The judge panel: each judge's mean beside its drift and the panel's, how often the judges differ,
    their pairwise exact agreement and the turns they differ on most. None without a panel."""
    panel = metrics.get("judge_panel")
    if panel is None:
        return []
    labels = [judge["label"] for judge in panel["judges"]]
    samples = {judge["label"]: str(judge["n_samples"]) for judge in panel["judges"]}
    ci = _ci_name(metrics)
    rows, pairs = [], []
    for model, conditions in panel["models"].items():
        for condition, entry in conditions.items():
            judges = [entry["judges"][label] for label in labels]
            rows += [
                [model, condition, label, samples[label], str(judge["n"]),
                 _with_ci(judge["mean"], judge["ci"]), _differing_cell(judge["drift"]), ""]
                for label, judge in zip(labels, judges, strict=True)
            ]  # fmt: skip
            mean = _with_ci(entry["panel"]["mean"], entry["panel"]["ci"])
            disagreement = _differing_cell(entry["disagreement"])
            rows.append([model, condition, "panel", "", str(entry["panel"]["n"]), mean, "", disagreement])
            pairs += [
                [
                    model,
                    condition,
                    " = ".join(pair["judges"]),
                    str(pair["n"]),
                    format_statistic(pair, "exact_pct", digits=1),
                ]
                for pair in entry["pairs"]
            ]
    drifting = [
        f"{judge['label']} {_differing_cell(judge['drift'])}" for judge in panel["judges"] if judge["drift"]
    ]
    caption = (
        f"{panel['rule']} Samples: the judge's runs the panel read (one column each on the page). Mean judge "
        "score on the 0-100 scale. Drift: share of the turns a judge graded in each of its samples whose "
        "grade changed between them (changed of turns; — for a judge sampled once); over the whole report: "
        f"{', '.join(drifting) or 'no judge has several samples'}. Judges differ: share of the turns every "
        "judge graded where any two judges' votes differ."
    )
    disagreements = [
        [row["model"], row["condition"], row["thread_id"], str(row["turn"]),
         *(_number(row["grades"][label], 1) for label in labels), _number(row["panel"], 1)]
        for row in panel["disagreements"]
    ]  # fmt: skip
    return [
        Table(
            "judge-panel",
            "Judge panel",
            ["Model", "Condition", "Judge", "Samples", "n", f"Mean [{ci}]", "Drift %", "Judges differ %"],
            rows,
            caption,
        ),
        Table(
            "judge-agreement",
            "Judge panel: agreement between judges",
            ["Model", "Condition", "Judges", "n", "Exact agreement %"],
            pairs,
            "Share of the n turns both judges graded on which they gave the same grade (0, 0.5 or 1).",
        ),
        Table(
            "judge-disagreements",
            "Judge panel: turns the judges differ on most",
            ["Model", "Condition", "Thread", "Turn", *labels, "Panel"],
            disagreements,
            "Grades on the rubric's 0 / 0.5 / 1 scale, widest spread first; on the page, a thread opens its "
            "conversation in the browser below."
            if disagreements
            else "The judges gave every turn they all graded the same grade.",
        ),
    ]


def _samples(count: int) -> str:
    return f"{count} sample" if count == 1 else f"{count} samples"


def panel_summary_table(metrics: dict[str, Any]) -> Table | None:
    """What the terminal shows of a judge panel: per model and condition each judge's mean (short keys, named
    with their drift in the caption), the panel's and how often the judges differ. None without a panel."""
    panel = metrics.get("judge_panel")
    if panel is None:
        return None
    keys = short_keys([judge["label"] for judge in panel["judges"]], "J")
    rows = [
        [model, condition, *(_number(entry["judges"][label]["mean"]) for label in keys),
         _number(entry["panel"]["mean"]), _differing_cell(entry["disagreement"])]
        for model, conditions in panel["models"].items()
        for condition, entry in conditions.items()
    ]  # fmt: skip
    judges = "; ".join(
        f"{keys[judge['label']]} = {judge['label']} ({_samples(judge['n_samples'])}"
        + (f", drift {_differing_cell(judge['drift'])})" if judge["drift"] else ")")
        for judge in panel["judges"]
    )
    numbers = (*keys.values(), "Panel", "Judges differ %")
    return Table(
        "judge-panel-summary",
        "Judge panel: mean score (0-100) by judge",
        ["Model", "Condition", *numbers],
        rows,
        f"{judges}. Drift: grades changed between a judge's samples (changed of turns).",
        right_aligned=numbers,
    )


def _cost_tables(metrics: dict[str, Any]) -> list[Table]:
    rows = [
        [model, condition, *(_number(values["cost"][k], 2) for k in ("input_usd", "output_usd", "total_usd"))]
        for model, condition, values in _conditions(metrics)
    ]
    judge = metrics["judge"]
    # With a panel: a row per judge (its samples' judgments together), then the panel's turns.
    judges = [*metrics.get("judge_panel", {}).get("judges", []), judge]
    judge_rows = [
        [
            entry.get("label", entry["model"]),
            str(entry["unparseable"]),
            str(entry["n_judge_cut"]),
            str(sum(entry["excluded"].values()) - entry["unparseable"] - entry["n_judge_cut"]),
            _number(entry["cost_usd"], 2),
        ]
        for entry in judges
    ]
    return [
        Table(
            "inference-cost",
            "Inference cost",
            ["Model", "Condition", "Input ($)", "Output ($)", "Total ($)"],
            rows,
            "From the stored responses, failed calls included.",
        ),
        Table(
            "judge-cost",
            "Judge",
            ["Judge model", "Unparseable", "Judge cut", "Other unscored", "Cost ($)"],
            judge_rows,
            "Judge cut: judgments whose judge reply was still cut at the judge's max_tokens after the last "
            "re-ask (unparseable, whatever it read as). Unscored by status: "
            + (", ".join(f"{status} {count}" for status, count in judge["excluded"].items()) or "none"),
        ),
    ]


def build_tables(metrics: dict[str, Any]) -> list[Table]:
    """The paper's tables from metrics.json's content, in the paper's order."""
    return [
        _overall_table(metrics),
        _group_table(metrics, "turn-groups", "Mean score by turn group", _mean_cell),
        _group_table(metrics, "turn-groups-wrong", "Wrong rate (%) by turn group", _wrong_cell),
        _consistency_table(metrics),
        _propagation_table(metrics),
        _ablation_table(metrics),
        _coverage_table(metrics),
        _length_table(metrics),
        *_panel_tables(metrics),
        *_cost_tables(metrics),
    ]


def run_summary(metrics: dict[str, Any]) -> str:
    runs = ", ".join(run["run_id"] for run in metrics["runs"])
    boot = metrics["bootstrap"]
    return (
        f"Runs: {runs}. Judge: {metrics['judge']['model']}. "
        f"Dataset: {(metrics['dataset_fingerprint'] or 'unknown')[:12]}. "
        f"Intervals: {boot['level']:.0%} {boot['method']} bootstrap, {boot['resamples']} resamples, "
        f"seed {boot['seed']}."
    )


def render_markdown(metrics: dict[str, Any], tables: list[Table], figures: list[str]) -> str:
    note = judge_note(metrics["judge"]["model"])
    parts = ["# Evaluation report", "", run_summary(metrics), ""]
    parts += [table_markdown(table, note) for table in tables]
    parts += ["## Figures", ""] + [f"![{FIGURES[name]}]({name}.png)\n" for name in figures]
    return "\n".join(parts)


def render_html(
    metrics: dict[str, Any],
    tables: list[Table],
    figures: dict[str, bytes],
    data: dict[str, Any],
    chunks: Sequence[Any] = (),
) -> str:
    """The self-contained page: tables, figures as data URIs, and the browser's data and chunks packed."""
    note = judge_note(metrics["judge"]["model"])
    return render_page(
        {
            "title": "ThReadMed-QA evaluation report",
            "meta": html.escape(run_summary(metrics)),
            "note": f'<p class="note">{html.escape(note)}</p>' if note else "",
            "tables": "".join(table_html(table, note) for table in tables),
            "figures": figures_html(figures, FIGURES),
            **data_parts(data, chunks),
            **browser_parts(Path(__file__).parent),
        }
    )
