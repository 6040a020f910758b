"""The consultation report's figures. Each function draws one figure from one stored stats_* table only."""

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.report.figures import new_figure, plain_text, tab10

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
            ("psc", pa.float64()),
            ("fqr", pa.float64()),
            ("composite", pa.float64()),
        ]
    ),
    "stats_primary": pa.schema(
        [
            ("model", pa.string()),
            ("stage", pa.string()),
            ("metric", pa.string()),  # a primary metric, or `stage` for the stage score
            ("n", pa.int64()),
            ("mean", pa.float64()),
            ("low", pa.float64()),
            ("high", pa.float64()),
        ]
    ),
}
STAGE_TITLES = {
    "history": "History taking",
    "diagnosis": "Diagnosis",
    "treatment": "Treatment",
    "follow_up": "Follow-up",
}
METRIC_LABELS = {
    "mni_comp": "MNI-Comp",
    "cprw": "CPRw ↓",
    "ige": "IGE",
    "hit_at_1": "Hit@1",
    "povr": "POVR ↓",
    "core_dx_recall": "Core-Dx\nRecall",
    "core_dx_f1": "Core-Dx F1",
    "swds": "SWDS",
    "psc": "PSC",
    "ddiv": "DDIV ↓",
    "pcr": "PCR ↓",
    "fqr": "FQR",
    "dcsr": "DCSR",
    "stage": "stage\nscore",
}

# Figure id (its file name without .png) -> caption.
FIGURES = {
    "fig_mni_coverage": (
        "MNI coverage against turns: the mean share of the case's MNI target revealed by each question turn "
        "(turn 0: the opening), by model."
    ),
    "fig_questions": "Questions asked per episode, by model (box: quartiles; dots: episodes).",
    "fig_stages": (
        "The primary metrics of each stage and the stage score (the metrics in [0, 1] higher-better, "
        "averaged), by model: means with 95% bootstrap intervals (%); ↓: lower is better. A metric "
        "undefined for every episode has no bar."
    ),
}


def _models(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(row["model"] for row in rows))


def plot_mni_coverage(stats_path: Path, out_path: Path) -> None:
    """A line per model: mean MNI coverage by turn."""
    from matplotlib.ticker import MaxNLocator  # with the figure: see tasks/report/figures.py

    rows = pq.read_table(stats_path).to_pylist()
    fig = new_figure(figsize=(7, 4.2))
    ax = fig.subplots()
    palette = tab10()
    for index, model in enumerate(_models(rows)):
        points = [row for row in rows if row["model"] == model]
        ax.plot(
            [row["turn"] for row in points],
            [row["mni_coverage"] for row in points],
            marker="o",
            markersize=3,
            color=palette(index % 10),
            label=plain_text(model),
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
    fig = new_figure(figsize=(1.4 * len(models) + 3, 4))
    ax = fig.subplots()
    palette = tab10()
    for index, model in enumerate(models):
        values = [row["questions"] for row in rows if row["model"] == model]
        ax.boxplot([values], positions=[index], widths=0.5, showfliers=False)
        # Spread the dots evenly over the box's width (deterministic, unlike random jitter).
        spread = [index - 0.2 + 0.4 * k / max(len(values) - 1, 1) for k in range(len(values))]
        ax.scatter(spread, values, s=14, alpha=0.6, color=palette(index % 10), zorder=3)
    ax.set_xticks(range(len(models)), [plain_text(model) for model in models], rotation=20, ha="right")
    ax.set(ylabel="Questions", title="Questions asked per episode")
    ax.grid(axis="y", alpha=0.3)
    fig.savefig(out_path, dpi=110)


def plot_stages(stats_path: Path, out_path: Path) -> None:
    """A panel per stage: a group of bars per metric (then the stage score), a bar per model, with whiskers
    for the intervals."""
    from matplotlib.patches import Patch  # with the figure: see tasks/report/figures.py

    rows = pq.read_table(stats_path).to_pylist()
    models = _models(rows)
    fig = new_figure(figsize=(11, 7.5))
    axes = fig.subplots(2, 2, sharey=True).flatten()
    palette = tab10()
    width = 0.8 / max(len(models), 1)
    for ax, (stage, title) in zip(axes, STAGE_TITLES.items(), strict=True):
        metrics = list(dict.fromkeys(row["metric"] for row in rows if row["stage"] == stage))
        for index, model in enumerate(models):
            mine = {r["metric"]: r for r in rows if r["stage"] == stage and r["model"] == model}
            positions, heights, errors = [], [], [[], []]
            for position, metric in enumerate(metrics):
                row = mine.get(metric)
                if row is None or row["mean"] is None:
                    continue
                positions.append(position - 0.4 + width * (index + 0.5))
                heights.append(100 * row["mean"])
                low, high = row["low"], row["high"]
                # max(0, ...): a percentile bound can sit a rounding error past the mean.
                errors[0].append(0.0 if low is None else max(0.0, 100 * (row["mean"] - low)))
                errors[1].append(0.0 if high is None else max(0.0, 100 * (high - row["mean"])))
            ax.bar(positions, heights, width, yerr=errors, capsize=2, color=palette(index % 10))
        ax.set_xticks(
            range(len(metrics)), [plain_text(METRIC_LABELS.get(m, m)) for m in metrics], fontsize="small"
        )
        ax.set(title=title, ylim=(0, 105))
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("%")
    axes[2].set_ylabel("%")
    if models:
        handles = [
            Patch(color=palette(index % 10), label=plain_text(model)) for index, model in enumerate(models)
        ]
        fig.legend(handles=handles, loc="outside lower center", ncols=min(len(models), 4))
    fig.savefig(out_path, dpi=110)


PLOTS = {
    "fig_mni_coverage": ("stats_mni_coverage", plot_mni_coverage),
    "fig_questions": ("stats_episodes", plot_questions),
    "fig_stages": ("stats_primary", plot_stages),
}


def draw_figures(stats_paths: dict[str, Path], out_dir: Path) -> dict[str, bytes]:
    """Draw every figure from its stored stats table into out_dir; returns the PNGs by figure id."""
    for name, (table, plot) in PLOTS.items():
        plot(stats_paths[table], out_dir / f"{name}.png")
    return {name: (out_dir / f"{name}.png").read_bytes() for name in PLOTS}
