"""The consultation report's figures. Each function draws one figure from one stored stats_* table only."""

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

# The stats tables the figures read, so an empty one still has its columns.
STATS_SCHEMAS = {
    "stats_mni_coverage": pa.schema(
        [
            ("model", pa.string()),
            ("turn", pa.int64()),
            ("episodes", pa.int64()),
            ("mni_coverage", pa.float64()),
        ]
    ),
    "stats_episodes": pa.schema(
        [
            ("model", pa.string()),
            ("case_id", pa.string()),
            ("epoch", pa.int32()),
            ("department", pa.string()),
            ("questions", pa.int32()),
            ("mni_comp", pa.float64()),
            ("core_dx_f1", pa.float64()),
        ]
    ),
}

# Figure id (its file name without .png) -> caption.
FIGURES = {
    "fig_mni_coverage": (
        "MNI coverage against turns: the mean share of the case's MNI target revealed by each question turn "
        "(turn 0: the opening), by model."
    ),
    "fig_questions": "Questions asked per episode, by model (box: quartiles; dots: episodes).",
}


def _models(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(row["model"] for row in rows))


def plot_mni_coverage(stats_path: Path, out_path: Path) -> None:
    """A line per model: mean MNI coverage by turn."""
    rows = pq.read_table(stats_path).to_pylist()
    fig = Figure(figsize=(7, 4.2), layout="constrained")
    ax = fig.subplots()
    palette = colormaps["tab10"]
    for index, model in enumerate(_models(rows)):
        points = [row for row in rows if row["model"] == model]
        ax.plot(
            [row["turn"] for row in points],
            [row["mni_coverage"] for row in points],
            marker="o",
            markersize=3,
            color=palette(index % 10),
            label=model,
        )
    ax.set(xlabel="Turn", ylabel="MNI revealed (share)", ylim=(-0.05, 1.05), title="MNI coverage by turn")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    if rows:
        ax.legend(loc="lower right", fontsize="small")
    fig.savefig(out_path, dpi=110)


def plot_questions(stats_path: Path, out_path: Path) -> None:
    """A box per model over its episodes' questions asked, with the episodes as dots across the box."""
    rows = [row for row in pq.read_table(stats_path).to_pylist() if row["questions"] is not None]
    models = _models(rows)
    fig = Figure(figsize=(1.4 * len(models) + 3, 4), layout="constrained")
    ax = fig.subplots()
    palette = colormaps["tab10"]
    for index, model in enumerate(models):
        values = [row["questions"] for row in rows if row["model"] == model]
        ax.boxplot([values], positions=[index], widths=0.5, showfliers=False)
        # Spread the dots evenly over the box's width (deterministic, unlike random jitter).
        spread = [index - 0.2 + 0.4 * k / max(len(values) - 1, 1) for k in range(len(values))]
        ax.scatter(spread, values, s=14, alpha=0.6, color=palette(index % 10), zorder=3)
    ax.set_xticks(range(len(models)), models, rotation=20, ha="right")
    ax.set(ylabel="Questions", title="Questions asked per episode")
    ax.grid(axis="y", alpha=0.3)
    fig.savefig(out_path, dpi=110)


PLOTS = {
    "fig_mni_coverage": ("stats_mni_coverage", plot_mni_coverage),
    "fig_questions": ("stats_episodes", plot_questions),
}


def draw_figures(stats_paths: dict[str, Path], out_dir: Path) -> dict[str, bytes]:
    """Draw every figure from its stored stats table into out_dir; returns the PNGs by figure id."""
    for name, (table, plot) in PLOTS.items():
        plot(stats_paths[table], out_dir / f"{name}.png")
    return {name: (out_dir / f"{name}.png").read_bytes() for name in PLOTS}
