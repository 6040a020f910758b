"""The SNOMED report's figures. Each function draws one figure from one stored stats_* table, nothing else."""

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.report.figures import new_figure, plain_text, tab10

# The stats tables the figures read, so an empty one still has its columns.
STATS_SCHEMAS = {
    "stats_interviews": pa.schema(
        [
            ("model", pa.string()),
            ("case_id", pa.string()),
            ("epoch", pa.int32()),
            ("n_gold", pa.int32()),
            ("questions_asked", pa.int32()),
            ("f1", pa.float64()),
        ]
    ),
    "stats_condition_recall": pa.schema(
        [
            ("rank", pa.int64()),
            ("model", pa.string()),
            ("code", pa.string()),
            ("display", pa.string()),
            ("n_gold", pa.int64()),
            ("found", pa.int64()),
            ("missed", pa.int64()),
            ("recall", pa.float64()),
        ]
    ),
}

# Figure id (its file name without .png) -> caption.
FIGURES = {
    "fig_f1_distribution": "F1 per interview, by model (box: quartiles; dots: interviews).",
    "fig_f1_questions": "F1 against the number of questions asked, one dot per interview.",
    "fig_condition_recall": "Recall per gold condition for the most frequent conditions, by model.",
}


def _models(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(row["model"] for row in rows))


def plot_f1_distribution(stats_path: Path, out_path: Path) -> None:
    """A box per model over its interviews' F1, with the interviews as dots spread across the box."""
    rows = pq.read_table(stats_path).to_pylist()
    models = _models(rows)
    fig = new_figure(figsize=(1.4 * len(models) + 3, 4))
    ax = fig.subplots()
    palette = tab10()
    for index, model in enumerate(models):
        values = [row["f1"] for row in rows if row["model"] == model]
        ax.boxplot([values], positions=[index], widths=0.5, showfliers=False)
        # Spread the dots evenly over the box's width (deterministic, unlike random jitter).
        spread = [index - 0.2 + 0.4 * k / max(len(values) - 1, 1) for k in range(len(values))]
        ax.scatter(spread, values, s=14, alpha=0.6, color=palette(index % 10), zorder=3)
    ax.set_xticks(range(len(models)), [plain_text(model) for model in models], rotation=20, ha="right")
    ax.set(ylabel="F1", ylim=(-0.05, 1.05), title="F1 per interview")
    ax.grid(axis="y", alpha=0.3)
    fig.savefig(out_path, dpi=110)


def plot_f1_questions(stats_path: Path, out_path: Path) -> None:
    """F1 against questions asked: a dot per interview, a colour per model."""
    rows = pq.read_table(stats_path).to_pylist()
    fig = new_figure(figsize=(7, 4.2))
    ax = fig.subplots()
    palette = tab10()
    for index, model in enumerate(_models(rows)):
        points = [row for row in rows if row["model"] == model and row["questions_asked"] is not None]
        ax.scatter(
            [row["questions_asked"] for row in points],
            [row["f1"] for row in points],
            s=18,
            alpha=0.7,
            color=palette(index % 10),
            label=plain_text(model),
        )
    ax.set(xlabel="Questions asked", ylabel="F1", ylim=(-0.05, 1.05), title="F1 against questions asked")
    ax.grid(alpha=0.3)
    if rows:
        ax.legend(loc="best", fontsize="small")
    fig.savefig(out_path, dpi=110)


def plot_condition_recall(stats_path: Path, out_path: Path) -> None:
    """Horizontal bars: recall per condition (most frequent at the top), a bar per model."""
    rows = pq.read_table(stats_path).to_pylist()
    models = _models(rows)
    conditions = sorted({(row["rank"], row["code"], row["display"]) for row in rows})
    fig = new_figure(figsize=(8, 0.35 * len(conditions) * max(len(models), 1) + 1.5))
    ax = fig.subplots()
    height = 0.8 / max(len(models), 1)
    palette = tab10()
    for index, model in enumerate(models):
        bars = [row for row in rows if row["model"] == model]
        y = [row["rank"] + (index - (len(models) - 1) / 2) * height for row in bars]
        ax.barh(
            y, [row["recall"] for row in bars], height, color=palette(index % 10), label=plain_text(model)
        )
    ax.set_yticks(
        [rank for rank, _, _ in conditions],
        [plain_text(f"{display or code} ({code})") for _, code, display in conditions],
    )
    ax.invert_yaxis()
    ax.set(xlabel="Recall", xlim=(0, 1.05), title="Recall per condition")
    ax.grid(axis="x", alpha=0.3)
    if rows:
        ax.legend(loc="lower right", fontsize="small")
    fig.savefig(out_path, dpi=110)


PLOTS = {
    "fig_f1_distribution": ("stats_interviews", plot_f1_distribution),
    "fig_f1_questions": ("stats_interviews", plot_f1_questions),
    "fig_condition_recall": ("stats_condition_recall", plot_condition_recall),
}


def draw_figures(stats_paths: dict[str, Path], out_dir: Path) -> dict[str, bytes]:
    """Draw every figure from its stored stats table into out_dir; returns the PNGs by figure id."""
    for name, (table, plot) in PLOTS.items():
        plot(stats_paths[table], out_dir / f"{name}.png")
    return {name: (out_dir / f"{name}.png").read_bytes() for name in PLOTS}
