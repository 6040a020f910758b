"""Every report figure draws text from data as written: a `$` never reaches matplotlib's mathtext."""

import subprocess
import sys
from pathlib import Path

import pytest

from tasks.benchmarks.consult import figures as consult_figures
from tasks.benchmarks.snomed import figures as snomed_figures
from tasks.benchmarks.threadmed import figures as threadmed_figures
from tasks.benchmarks.threadmed.publish import plot_funnel
from tasks.report.figures import plain_text
from tasks.report.files import write_stats_table

# A pair of dollars around an unknown command: mathtext would raise on `\oops`.
DOLLARS = r"Cost $\oops$ in 2020"
MODEL = "lab/$model$"
STATS = {
    "snomed": {
        "stats_interviews": [
            {"model": MODEL, "case_id": "c1", "epoch": 0, "n_gold": 1, "questions_asked": 2, "f1": 0.5}
        ],
        "stats_condition_recall": [
            {"rank": 1, "model": MODEL, "code": "1", "display": DOLLARS, "n_gold": 2, "found": 1, "missed": 1,
             "recall": 0.5}
        ],
    },
    "consult": {
        "stats_mni_coverage": [{"model": MODEL, "turn": 0, "episodes": 1, "mni_coverage": 0.5}],
        "stats_episodes": [
            {"model": MODEL, "case_id": "c1", "epoch": 0, "department": "ent", "questions": 3,
             "mni_comp": 0.5, "core_dx_f1": 0.5, "psc": 0.5, "fqr": 0.5, "composite": 0.5}
        ],
        "stats_primary": [
            {"model": MODEL, "stage": "history", "metric": DOLLARS, "n": 1, "mean": 0.5, "low": 0.4,
             "high": 0.6}
        ],
    },
}  # fmt: skip


@pytest.mark.parametrize("module", [snomed_figures, consult_figures], ids=["snomed", "consult"])
def test_benchmark_figures_draw_dollars_from_data(tmp_path: Path, module) -> None:
    name = module.__name__.split(".")[2]
    paths = {
        table: write_stats_table(rows, tmp_path / f"{table}.parquet", module.STATS_SCHEMAS[table])
        for table, rows in STATS[name].items()
    }
    drawn = module.draw_figures(paths, tmp_path)
    assert {figure: png[:4] for figure, png in drawn.items()} == {
        figure: b"\x89PNG" for figure in module.PLOTS
    }


def test_threadmed_figures_draw_dollars_from_data(tmp_path: Path) -> None:
    turns = [{"model": MODEL, "condition": DOLLARS, "turn": 0, "mean": 50.0, "ci_low": 40.0, "ci_high": 60.0}]
    after = [
        {"model": MODEL, "condition": DOLLARS, "previous_score": 0, "n": 3, "wrong_next_pct": 50.0,
         "ci_low": 40.0, "ci_high": 60.0}
    ]  # fmt: skip
    funnel = [{"stage": DOLLARS, "stage_order": 0, "reason": None, "count_rows": 10}]
    threadmed_figures.plot_turn_scores(
        write_stats_table(turns, tmp_path / "t.parquet"), tmp_path / "t.png", None
    )
    threadmed_figures.plot_wrong_after(
        write_stats_table(after, tmp_path / "w.parquet"), tmp_path / "w.png", None
    )
    threadmed_figures.plot_dataset_funnel(
        write_stats_table(funnel, tmp_path / "f.parquet"), tmp_path / "f.png"
    )
    plot_funnel(funnel, tmp_path / "p.png")
    assert [(tmp_path / f"{name}.png").read_bytes()[:4] for name in "twfp"] == [b"\x89PNG"] * 4


def test_plain_text_escapes_every_dollar() -> None:
    assert plain_text(DOLLARS) == r"Cost \$\oops\$ in 2020"


def test_the_benchmarks_modules_import_neither_matplotlib_nor_scipy_until_a_figure_or_test_is_made():
    """Every command imports its benchmark; most draw no figure and run no test (a dry run, --no-report, a
    leaderboard), and importing both took most of a second."""
    script = (
        "import importlib, sys\n"
        "for name in ('threadmed', 'snomed', 'consult'):\n"
        "    importlib.import_module(f'tasks.benchmarks.{name}.benchmark')\n"
        "print(sorted(m for m in ('matplotlib', 'scipy') if m in sys.modules))\n"
        "import numpy as np\n"
        "from tasks.report.figures import new_figure\n"
        "from tasks.report.stats import spearman\n"
        "new_figure(figsize=(1, 1)), spearman(np.arange(3.0), np.arange(3.0))\n"
        "print(sorted(m for m in ('matplotlib', 'scipy') if m in sys.modules))\n"
    )
    imported = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert (imported.returncode, imported.stdout) == (0, "[]\n['matplotlib', 'scipy']\n"), imported.stderr
