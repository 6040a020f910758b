"""The report's figures. Each function draws one figure from one stored stats_* table, nothing else."""

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from tasks.benchmarks.threadmed.metrics import SCORE_LABELS, SINGLE_TURNS
from tasks.report.figures import new_figure, plain_text, tab10

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Figure id (its file name without .png) -> caption.
FIGURES = {
    "fig_turn_scores": "Mean judge score per turn (turns 0-5) with bootstrap confidence bands.",
    "fig_wrong_after": "Wrong rate at turn t+1 given the score at turn t, with bootstrap intervals.",
    "fig_dataset_funnel": "Rows kept at each stage of the dataset build.",
    "fig_judge_panel": "Mean score by each judge of the panel and by the panel, with bootstrap intervals.",
}


def _series(rows: list[dict[str, Any]], **match: Any) -> list[dict[str, Any]]:
    return [row for row in rows if all(row[k] == v for k, v in match.items())]


def _condition_panels(
    rows: list[dict[str, Any]], width: float
) -> tuple["Figure", list, list[str], list[str]]:
    """A figure with one panel per condition (shared y), and the conditions and models in stored order."""
    conditions = list(dict.fromkeys(row["condition"] for row in rows))
    models = list(dict.fromkeys(row["model"] for row in rows))
    fig = new_figure(figsize=(width * len(conditions) + 2.5, 4.2))
    axes = fig.subplots(1, len(conditions), sharey=True, squeeze=False)[0]
    for ax, condition in zip(axes, conditions, strict=True):
        # A little headroom so that markers at 0 and 100 are not clipped.
        ax.set(title=plain_text(condition), ylim=(-3, 103), yticks=range(0, 101, 20))
        ax.grid(alpha=0.3)
    return fig, list(axes), conditions, models


def _finish(fig: "Figure", axes: list, title: str, note: str | None, out_path: Path) -> None:
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize="small")
    fig.suptitle(title if note is None else f"{title}\n(overlap judge: not comparable to an LLM judge)")
    fig.savefig(out_path, dpi=110)


def plot_turn_scores(stats_path: Path, out_path: Path, note: str | None) -> None:
    """Mean score per turn with its CI band: a line per model, a panel per condition."""
    rows = pq.read_table(stats_path).to_pylist()
    fig, axes, conditions, models = _condition_panels(rows, width=4.5)
    palette = tab10()
    for ax, condition in zip(axes, conditions, strict=True):
        for index, model in enumerate(models):
            points = [
                row for row in _series(rows, model=model, condition=condition) if row["mean"] is not None
            ]
            turn = [row["turn"] for row in points]
            color = palette(index % 10)
            ax.plot(turn, [row["mean"] for row in points], marker="o", color=color, label=plain_text(model))
            low, high = [row["ci_low"] for row in points], [row["ci_high"] for row in points]
            ax.fill_between(turn, low, high, color=color, alpha=0.15, linewidth=0)
        ax.set(xlabel="Turn (0-based)", xticks=list(SINGLE_TURNS))
    axes[0].set_ylabel("Mean judge score (0-100)")
    _finish(fig, axes, "Mean score per turn", note, out_path)


def plot_wrong_after(stats_path: Path, out_path: Path, note: str | None) -> None:
    """Wrong rate at t+1 after a wrong, partial or correct turn: bars per model, a panel per condition."""
    rows = pq.read_table(stats_path).to_pylist()
    fig, axes, conditions, models = _condition_panels(rows, width=4.5)
    width = 0.8 / len(models)
    palette = tab10()
    for ax, condition in zip(axes, conditions, strict=True):
        for index, model in enumerate(models):
            bars = [row for row in _series(rows, model=model, condition=condition) if row["n"]]
            offset = (index - (len(models) - 1) / 2) * width
            x = [list(SCORE_LABELS).index(row["previous_score"]) + offset for row in bars]
            y = [row["wrong_next_pct"] for row in bars]
            below = [row["wrong_next_pct"] - row["ci_low"] for row in bars]
            above = [row["ci_high"] - row["wrong_next_pct"] for row in bars]
            ax.bar(
                x,
                y,
                width,
                yerr=[below, above],
                capsize=2,
                color=palette(index % 10),
                label=plain_text(model),
            )
        ax.set_xticks(range(len(SCORE_LABELS)), [f"after {label}" for label in SCORE_LABELS.values()])
        ax.set_xlabel("Score at turn t")
    axes[0].set_ylabel("Wrong at turn t+1 (%)")
    _finish(fig, axes, "Wrong rate at t+1 given the score at t", note, out_path)


def plot_dataset_funnel(stats_path: Path, out_path: Path) -> None:
    """Rows kept after each dataset-build stage, top to bottom, on a log axis."""
    rows = pq.read_table(stats_path).to_pylist()
    fig = new_figure(figsize=(8, 0.45 * len(rows) + 1.2))
    ax = fig.subplots()
    bars = ax.barh(
        [plain_text(row["stage"]) for row in rows],
        [row["count_rows"] for row in rows],
        color=tab10()(0),
    )
    ax.bar_label(bars, labels=[f"{row['count_rows']:,}" for row in rows], padding=3, fontsize="small")
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.margins(x=0.15)
    ax.set(xlabel="Rows kept (log scale)")
    fig.suptitle("Dataset funnel")
    fig.savefig(out_path, dpi=110)


def plot_judge_panel(stats_path: Path, out_path: Path, note: str | None) -> None:
    """Each judge's mean score and the panel's with their CIs, side by side for every model and condition."""
    rows = pq.read_table(stats_path).to_pylist()
    units = list(dict.fromkeys((row["model"], row["condition"]) for row in rows))
    judges = list(dict.fromkeys(row["judge"] for row in rows))
    fig = new_figure(figsize=(1.2 * len(units) * len(judges) / 2 + 4, 4.2))
    ax = fig.subplots()
    width = 0.8 / len(judges)
    palette = tab10()
    for index, judge in enumerate(judges):
        points = [row for row in _series(rows, judge=judge) if row["mean"] is not None]
        x = [
            units.index((row["model"], row["condition"])) + (index - (len(judges) - 1) / 2) * width
            for row in points
        ]
        y = [row["mean"] for row in points]
        errors = [
            [row["mean"] - row["ci_low"] for row in points],
            [row["ci_high"] - row["mean"] for row in points],
        ]
        panel = judge == "panel"
        ax.errorbar(
            x, y, yerr=errors, fmt="D" if panel else "o", capsize=3, label=plain_text(judge),
            color="black" if panel else palette(index % 10),
        )  # fmt: skip
    ax.set_xticks(range(len(units)), [plain_text(f"{model}\n{condition}") for model, condition in units])
    ax.set(ylim=(-3, 103), yticks=range(0, 101, 20), ylabel="Mean judge score (0-100)")
    ax.grid(alpha=0.3, axis="y")
    _finish(fig, [ax], "Judge panel: each judge and the panel", note, out_path)
