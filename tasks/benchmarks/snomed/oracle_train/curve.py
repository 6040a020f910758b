"""The loss curve: the trainer's log as rows, a CSV and a figure."""

from pathlib import Path
from typing import Any

from tasks.core.safe_text import write_csv_rows

CURVE_COLUMNS = ("step", "epoch", "split", "loss")


def loss_rows(log_history: list[dict[str, Any]], loss_before: float) -> list[dict[str, Any]]:
    """The training and held-out losses of a trainer's `state.log_history`, one per step and split in step
    order, after the held-out loss before training (step 0, which the trainer's log does not keep). A
    step's last value wins."""
    rows = {(0, "validation"): {"step": 0, "epoch": 0.0, "split": "validation", "loss": loss_before}}
    for entry in log_history:
        for key, split in (("loss", "train"), ("eval_loss", "validation")):
            if key in entry:
                rows[entry["step"], split] = {
                    "step": entry["step"],
                    "epoch": entry.get("epoch"),
                    "split": split,
                    "loss": entry[key],
                }
    return [rows[key] for key in sorted(rows)]


def held_out_loss_at(log_history: list[dict[str, Any]], step: int) -> float | None:
    """The held-out loss the trainer logged at `step`, or None if it did not evaluate there. At a final
    `eval_steps` the trainer evaluates the weights training ended with: evaluating them again gives the same
    number for the cost of a pass over the validation split."""
    logged = [entry["eval_loss"] for entry in log_history if "eval_loss" in entry and entry["step"] == step]
    return logged[-1] if logged else None


def write_loss_csv(rows: list[dict[str, Any]], path: Path) -> Path:
    return write_csv_rows(path, CURVE_COLUMNS, rows)


def plot_loss_curve(rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    """Training and held-out loss against the optimizer step, one line each, as a PNG."""
    from matplotlib.figure import Figure

    from tasks.report.figures import plain_text

    figure = Figure(figsize=(6, 3.5), layout="constrained")
    axes = figure.subplots()
    for split, style in (("train", "-"), ("validation", "o-")):
        points = [(row["step"], row["loss"]) for row in rows if row["split"] == split]
        if points:
            steps, losses = zip(*points, strict=True)
            axes.plot(steps, losses, style, label=split)
    axes.set(xlabel="optimizer step", ylabel="loss (mean token cross-entropy)", title=plain_text(title))
    axes.legend()
    figure.savefig(path, dpi=120)
    return path
