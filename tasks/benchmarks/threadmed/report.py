"""Turn stored responses and judgments into the paper's metrics, tables, figures and a browsable page.

Reads only RUN_DIR/{responses,judgments}.parquet, RUN_DIR/manifest.json and the dataset the manifest
names; it never calls a model, so a report can be re-made at any time. Several runs that share a
dataset and a judge merge into one report; runs that grade the same answers with different judges (or
samples of one judge: other params or epochs) make a judge panel, whose grade the metrics are computed
on. Output folder:

    metrics.json            every number (evaluation.md "Metrics"), null where undefined
    stats_*.parquet         the tables the figures are drawn from
    report.md, index.html   the paper's tables; the page adds the figures and a conversation browser
    fig_*.png               turn scores, wrong rate after each score, dataset funnel

ThReadMed's statistics are in metrics.py, its tables in tables.py and its figures in figures.py (beside
this module), built on the shared bootstrap, table renderers, page and artifacts of tasks/report/. Beside
this module, run_data.py loads the runs, report_metrics.py and panel_metrics.py compute metrics.json's
entries and browser.py the conversation browser's data; this module assembles metrics.json, writes the
report folder and holds the tasks.
"""

import json
from pathlib import Path
from typing import Any, NamedTuple

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.benchmarks.threadmed import metrics as m
from tasks.benchmarks.threadmed.browser import browser_data
from tasks.benchmarks.threadmed.figures import (
    plot_dataset_funnel,
    plot_judge_panel,
    plot_turn_scores,
    plot_wrong_after,
)
from tasks.benchmarks.threadmed.panel_metrics import (
    PAIR_STATS,
    PANEL_RULE,
    PANEL_STATS,
    disagreements,
    panel_condition,
    panel_judges_json,
)
from tasks.benchmarks.threadmed.report_metrics import (
    ablation,
    condition_metrics,
    condition_sample,
    costs,
    coverage,
    error_propagation,
    judge_summary,
    physician_avg_words,
    transition_rows,
    turn_rows,
)
from tasks.benchmarks.threadmed.run_data import RunData, load_runs
from tasks.benchmarks.threadmed.settings import ReportSettings
from tasks.benchmarks.threadmed.tables import (
    build_tables,
    judge_note,
    render_html,
    render_markdown,
    run_summary,
)
from tasks.core.provenance import artifact_key
from tasks.report.artifacts import publish_markdown, publish_tables, report_prefix
from tasks.report.files import write_stats_table


class StatsTables(NamedTuple):
    turns: list[dict[str, Any]]
    transitions: list[dict[str, Any]]
    panel: list[dict[str, Any]]
    pairs: list[dict[str, Any]]


def compute_metrics(run: RunData, settings: ReportSettings) -> tuple[dict[str, Any], StatsTables]:
    """metrics.json's content and the rows of the stats tables. Pure: numbers depend only on the inputs."""
    turns = run.turns
    models: dict[str, dict[str, Any]] = {}
    panel: dict[str, dict[str, Any]] = {}
    stats = StatsTables([], [], [], [])
    for model in run.models:
        samples = {}
        for condition in run.conditions:
            rows = (turns.model == model) & (turns.condition == condition)
            if not rows.any():
                continue
            sample = samples[condition] = condition_sample(turns, rows, settings, (model, condition))
            propagation = error_propagation(sample)
            entry = condition_metrics(sample, propagation, turns.status[rows & ~turns.scored])
            entry["overall"]["n_truncated"] = int((rows & turns.truncated).sum())
            models.setdefault(model, {})[condition] = {**entry, "cost": costs(turns, rows)}
            stats.turns.extend(turn_rows(model, condition, entry["per_turn"]))
            stats.transitions.extend(transition_rows(model, condition, propagation))
            if run.judges:
                panel_entry, panel_rows, pair_rows = panel_condition(
                    turns, rows, run.judges, entry["overall"], sample
                )
                panel.setdefault(model, {})[condition] = panel_entry
                stats.panel.extend(panel_rows)
                stats.pairs.extend(pair_rows)
        both = m.BASELINE in samples and m.ORACLE in samples
        models[model]["ablation"] = ablation(samples[m.BASELINE], samples[m.ORACLE]) if both else None
    metrics = {
        "models": models,
        "physician_avg_words": physician_avg_words(turns),
        "coverage": coverage(turns, run.models),
        "judge": judge_summary(turns, run.judge_model),
        **(
            {
                "judge_panel": {
                    "rule": PANEL_RULE,
                    "judges": panel_judges_json(turns, run.judges),
                    "models": panel,
                    "disagreements": disagreements(turns, run.judges),
                }
            }
            if run.judges
            else {}
        ),
        "bootstrap": {
            "resamples": settings.n_resamples,
            "seed": settings.seed,
            "level": settings.level,
            "method": "percentile, clustered by conversation" if settings.clustered else "percentile",
        },
        "runs": run.runs,
        "dataset_fingerprint": run.dataset_fingerprint,
    }
    return metrics, stats


def funnel_rows(funnel: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stage totals of funnel.json (rows whose reason is null), in stage order."""
    totals = [row for row in funnel if row.get("reason") is None and row.get("count_rows") is not None]
    totals.sort(key=lambda row: (row.get("stage_order") is None, row.get("stage_order")))
    return [
        {
            "stage_order": row.get("stage_order"),
            "stage": str(row.get("stage")),
            "count_rows": int(row["count_rows"]),
        }
        for row in totals
    ]


def _write_stats_and_figures(
    run: RunData, stats: StatsTables, out_dir: Path, note: str | None
) -> dict[str, bytes]:
    """Store the stats tables, draw each figure from its table, and return the PNGs by figure id."""
    turns = write_stats_table(stats.turns, out_dir / "stats_turns.parquet")
    plot_turn_scores(turns, out_dir / "fig_turn_scores.png", note)
    transitions = write_stats_table(stats.transitions, out_dir / "stats_transitions.parquet")
    plot_wrong_after(transitions, out_dir / "fig_wrong_after.png", note)
    drawn = ["fig_turn_scores", "fig_wrong_after"]
    if stats.panel:
        panel = write_stats_table(stats.panel, out_dir / "stats_judge_panel.parquet", PANEL_STATS)
        plot_judge_panel(panel, out_dir / "fig_judge_panel.png", note)
        drawn.append("fig_judge_panel")
        write_stats_table(stats.pairs, out_dir / "stats_judge_pairs.parquet", PAIR_STATS)
    funnel = funnel_rows(run.funnel or [])
    if funnel:
        plot_dataset_funnel(
            write_stats_table(funnel, out_dir / "stats_funnel.parquet"), out_dir / "fig_dataset_funnel.png"
        )
        drawn.append("fig_dataset_funnel")
    return {name: (out_dir / f"{name}.png").read_bytes() for name in drawn}


@task(name="build-report", cache_policy=NO_CACHE)
def build_report(run_dirs: list[str], out_dir: str, settings: ReportSettings) -> str:
    """Run directories → out_dir with metrics.json, stats_*.parquet, report.md, fig_*.png, index.html."""
    run = load_runs([Path(run_dir) for run_dir in run_dirs])
    metrics, stats = compute_metrics(run, settings)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: an undefined value must be null, and a NaN reaching here is a bug to surface.
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, allow_nan=False))
    figures = _write_stats_and_figures(run, stats, out, judge_note(run.judge_model))
    tables = build_tables(metrics)
    (out / "report.md").write_text(render_markdown(metrics, tables, list(figures)))
    data = browser_data(run.turns, run.models, run.conditions, run.judges)
    (out / "index.html").write_text(render_html(metrics, tables, figures, data.index, data.chunks))
    return str(out)


@task(name="publish-report-artifacts", cache_policy=NO_CACHE)
def publish_report_artifacts(report_dir: str) -> list[str]:
    """A stored report → one Prefect table artifact per table and a Markdown summary; returns their keys."""
    out = Path(report_dir)
    metrics = json.loads((out / "metrics.json").read_text())
    prefix = report_prefix("report", [run["run_id"] for run in metrics["runs"]], out)
    keys = publish_tables(build_tables(metrics), prefix)
    summary_key = publish_markdown(
        (out / "report.md").read_text(), artifact_key(prefix, "summary"), run_summary(metrics)
    )
    return [*keys, summary_key]
