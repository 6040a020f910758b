"""The comparison's figure, drawn from the stored compare_differences table only."""

from pathlib import Path

import pyarrow.parquet as pq

from tasks.report.figures import new_figure, plain_text

FIGURE_ID = "fig_compare_differences"
CAPTION = "Mean paired difference A − B per pair of models, score, condition and items, with its interval."


def _label(row: dict) -> str:
    condition = f" · {row['stratum']}" if row["stratum"] else ""
    return plain_text(f"{row['model_a']} − {row['model_b']} · {row['metric']}{condition} · {row['group']}")


def plot_differences(stats_path: Path, out_path: Path) -> None:
    """A forest plot: a row per stored difference (top to bottom in table order), its interval as a bar."""
    rows = [row for row in pq.read_table(stats_path).to_pylist() if row["difference"] is not None]
    fig = new_figure(figsize=(8, 1.2 + 0.28 * max(len(rows), 1)))
    ax = fig.subplots()
    positions = list(range(len(rows)))[::-1]
    for y, row in zip(positions, rows, strict=True):
        if row["ci_low"] is not None:
            ax.plot([row["ci_low"], row["ci_high"]], [y, y], color="#2f5d9e", linewidth=2)
        ax.plot([row["difference"]], [y], marker="o", color="#1d2330")
    ax.axvline(0, color="#5b6475", linewidth=1, linestyle="--")
    ax.set(yticks=positions, yticklabels=[_label(row) for row in rows], xlabel="A − B")
    ax.tick_params(axis="y", labelsize="small")
    ax.grid(axis="x", alpha=0.3)
    fig.savefig(out_path, dpi=110)
