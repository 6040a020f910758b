from pathlib import Path

from tasks.benchmarks.consult.figures import STATS_SCHEMAS, plot_stages
from tasks.report.files import write_stats_table


def test_the_stage_figure_draws_a_bound_a_rounding_error_past_the_mean(tmp_path: Path) -> None:
    rows = [
        {
            "model": "m",
            "stage": "follow_up",
            "metric": "dcsr",
            "n": 3,
            "mean": 1.0,
            "low": 1.0,
            "high": 0.9999999,
        },
        {
            "model": "m",
            "stage": "follow_up",
            "metric": "fqr",
            "n": 3,
            "mean": None,
            "low": None,
            "high": None,
        },
        {
            "model": "m",
            "stage": "follow_up",
            "metric": "stage",
            "n": 3,
            "mean": 1.0,
            "low": None,
            "high": None,
        },
    ]
    stats = write_stats_table(rows, tmp_path / "stats_primary.parquet", STATS_SCHEMAS["stats_primary"])
    plot_stages(stats, tmp_path / "fig_stages.png")
    assert (tmp_path / "fig_stages.png").read_bytes()[:4] == b"\x89PNG"
