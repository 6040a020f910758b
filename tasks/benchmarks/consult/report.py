"""Turn stored consultation runs into metrics, tables, figures and a page with an episode browser.

Reads only RUN_DIR/{messages,scores}.parquet and RUN_DIR/manifest.json, plus the empirical reference the
inquiry mining stored (inquiry/data/mined_<policy version>/reference.json); it never calls a model, so a
report can be re-made at any time. Several runs over the same case set (same fingerprint) merge into one
report, each model coming from one run; runs whose episodes hold the same messages graded by different FQR
judges (or samples of one: other params or epochs) make a judge panel, whose grade FQR is computed on.
Output folder:

    metrics.json            every number (consult.md "Metrics"), null where undefined
    stats_*.parquet         the tables the figures are drawn from
    report.md, index.html   the tables and notes; the page adds the figures and an episode browser
    fig_*.png               MNI coverage against turns, questions asked, the primary metrics by stage

The tables are tables.py's and the figures figures.py's (beside this module). Beside this module,
run_data.py loads the runs, report_metrics.py and panel_metrics.py compute metrics.json's entries and
browser.py the episode browser's data; this module assembles metrics.json, writes the report folder and
holds the tasks.
"""

import json
from pathlib import Path
from typing import Any, NamedTuple

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.benchmarks.consult.browser import browser_data
from tasks.benchmarks.consult.figures import STATS_SCHEMAS, draw_figures
from tasks.benchmarks.consult.panel_metrics import fqr_panel
from tasks.benchmarks.consult.report_metrics import (
    ReportSettings,
    coverage_rows,
    episode_rows,
    failed_episodes,
    judge_entry,
    model_metrics,
    parse_errors,
    primary_rows,
    runs_entry,
)
from tasks.benchmarks.consult.report_page import render_html, render_markdown, run_summary
from tasks.benchmarks.consult.run_data import RunData, load_runs
from tasks.benchmarks.consult.tables import build_tables
from tasks.report.artifacts import publish_report, report_prefix
from tasks.report.files import default_report_dir as default_report_dir  # re-exported for the benchmark
from tasks.report.files import write_stats_table
from tasks.report.stats import LEVEL


class StatsTables(NamedTuple):
    """The rows the figures are drawn from."""

    mni_coverage: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    primary: list[dict[str, Any]]


def compute_metrics(run: RunData, settings: ReportSettings) -> tuple[dict[str, Any], StatsTables]:
    """metrics.json's content and the rows of the stats tables. Pure: numbers depend only on the inputs."""
    models = {
        model: model_metrics(
            [row for row in run.scores if row["model"] == model],
            [row for row in run.messages if row["model"] == model],
            model,
            settings,
        )
        for model in run.models
    }
    if run.panel is not None:
        for model, entry in models.items():
            graded = [row for row in run.panel.rows if row["model"] == model and row["status"] == "completed"]
            entry["judge"] = judge_entry(graded)
    metrics = {
        "models": models,
        **({"judge_panel": fqr_panel(run, models, settings)} if run.panel is not None else {}),
        "runs": runs_entry(run),
        "case_set": {"dir": str(run.manifests[0].case_set_dir), "fingerprint": run.manifests[0].fingerprint},
        "reference": run.reference,
        "failed": failed_episodes(run),
        "parse_errors": parse_errors(run),
        "settings": {**settings.model_dump(), "level": LEVEL, "method": "percentile, resampling cases"},
    }
    return metrics, StatsTables(coverage_rows(run), episode_rows(run), primary_rows(models))


@task(name="build-consult-report", cache_policy=NO_CACHE)
def build_report(run_dirs: list[str], out_dir: str, settings: ReportSettings) -> str:
    """Run folders -> out_dir with metrics.json, stats_*.parquet, report.md, fig_*.png, index.html."""
    run = load_runs([Path(run_dir) for run_dir in run_dirs])
    metrics, stats = compute_metrics(run, settings)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: an undefined value must be null, and a NaN reaching here is a bug to surface.
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, allow_nan=False))
    stats_paths = {
        name: write_stats_table(rows, out / f"{name}.parquet", STATS_SCHEMAS[name])
        for name, rows in (
            ("stats_mni_coverage", stats.mni_coverage),
            ("stats_episodes", stats.episodes),
            ("stats_primary", stats.primary),
        )
    }
    figures = draw_figures(stats_paths, out)
    tables = build_tables(metrics)
    (out / "report.md").write_text(render_markdown(metrics, tables, list(figures)))
    (out / "index.html").write_text(render_html(metrics, tables, figures, browser_data(run)))
    return str(out)


@task(name="publish-consult-report-artifacts", cache_policy=NO_CACHE)
def publish_report_artifacts(report_dir: str) -> list[str]:
    """A stored report -> one Prefect table artifact per table and a Markdown summary; returns their keys."""
    out = Path(report_dir)
    metrics = json.loads((out / "metrics.json").read_text())
    prefix = report_prefix("consult-report", [run["run_id"] for run in metrics["runs"]], out)
    return publish_report(
        build_tables(metrics), (out / "report.md").read_text(), prefix, run_summary(metrics)
    )
