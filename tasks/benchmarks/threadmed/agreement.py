"""How far ThReadMed judges agree with clinicians, and clinicians with each other, on a labels sample.

Reads LABELS/{sample.json, items.parquet, ratings.parquet} (contracts LABEL_ITEMS, RATINGS) and, of each run
folder given (the sampled run and runs re-judged from it), manifest.json, responses.parquet and
judgments.parquet. Items are matched by (model, condition, thread_id, turn), and a run whose answer (response
call_key) to a sampled item differs from the sampled run's is refused: it graded other answers. Each run is
compared with the raters apart, named by model, rubric version, params and epoch; runs of one judge (model
and rubric) at other params or epochs are its samples, whose differences are its drift. The statistics are
tasks/evals/agreement.py's (a statistic the data do not define is null with its reason in a `_undefined`
column, shown by tasks/report/tables.py format_statistic); the paper's metrics are metrics.py's. Output
folder (default LABELS/agreement):

    agreement.json      every table's rows, the judges, raters, notes and settings; null where undefined
    agreement.md        the tables, with their notes
    <table>.csv         one per table; fig_agreement.png is drawn from two of them

Beside this module, agreement_inputs.py reads the labels and the judges' runs, agreement_stats.py computes
agreement.json's content and agreement_tables.py renders its tables; this module draws the figure, writes
the folder and holds the task.
"""

import json
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from tasks.benchmarks.threadmed.agreement_inputs import load_judges, load_labels
from tasks.benchmarks.threadmed.agreement_settings import AgreementSettings
from tasks.benchmarks.threadmed.agreement_stats import TABLE_COLUMNS, compute_agreement
from tasks.benchmarks.threadmed.agreement_tables import render_markdown
from tasks.benchmarks.threadmed.run_data import check_run_folder
from tasks.core.safe_text import read_csv_rows, write_csv_rows
from tasks.report.figures import new_figure, plain_text
from tasks.report.runs import check_each_run_once, read_run_id


def plot_agreement(judge_csv: Path, rater_csv: Path, out_path: Path) -> None:
    """Quadratic kappa and ordinal alpha with their intervals: each judge against each rater and the
    consensus, then each rater pair (the ceiling), one row each; an undefined value is written 'undefined'
    on its row, never drawn as a point. Drawn from the stored CSVs only."""
    judge_rows, rater_rows = read_csv_rows(judge_csv), read_csv_rows(rater_csv)
    rows = [(f"{r['judge']}\nvs {r['versus']}", r, "tab:blue") for r in judge_rows]
    rows += [(f"{r['first']}\nvs {r['second'] or 'each other'}", r, "tab:gray") for r in rater_rows]
    fig = new_figure(figsize=(10, 1.2 + 0.55 * len(rows)))
    axes = fig.subplots(1, 2, sharey=True)
    panels = (("kappa_quadratic", "Quadratic kappa"), ("alpha_ordinal", "Ordinal alpha"))
    for ax, (name, title) in zip(axes, panels, strict=True):
        for y, (_, row, color) in enumerate(rows):
            if not row[name]:
                ax.text(0, y, "undefined", ha="center", va="center", color=color, fontsize="small")
                continue
            value = float(row[name])
            if row[f"{name}_low"]:
                low, high = float(row[f"{name}_low"]), float(row[f"{name}_high"])
                ax.errorbar(value, y, xerr=[[value - low], [high - value]], fmt="o", color=color, capsize=3)
            else:
                ax.plot(value, y, "o", color=color)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set(title=title, xlim=(-1, 1.05))
        ax.grid(alpha=0.3)
    axes[0].set_yticks(range(len(rows)), [plain_text(label) for label, _, _ in rows], fontsize="small")
    axes[0].invert_yaxis()
    fig.suptitle("Judge agreement (blue) and rater agreement, the ceiling (gray)")
    fig.savefig(out_path, dpi=110)


def write_agreement(agreement: dict[str, Any], out: Path) -> Path:
    """agreement.json, a CSV per table (text cells neutralised against formulas: tasks/core/safe_text.py),
    fig_agreement.png (from two CSVs) and agreement.md under `out`."""
    out.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: an undefined value must be null, and a NaN reaching here is a bug to surface.
    (out / "agreement.json").write_text(json.dumps(agreement, indent=2, allow_nan=False))
    paths = {
        name: write_csv_rows(out / f"{name}.csv", columns, agreement["tables"][name])
        for name, columns in TABLE_COLUMNS.items()
    }
    plot_agreement(paths["judge_vs_raters"], paths["rater_vs_rater"], out / "fig_agreement.png")
    (out / "agreement.md").write_text(render_markdown(agreement))
    return out


def default_out_dir(labels_dir: Path) -> Path:
    return labels_dir / "agreement"


def check_agreement_inputs(run_dirs: list[Path], labels_dir: Path) -> None:
    """Raise UserError unless LABELS is a rated labels folder and every run folder graded its sampled answers
    (each run given once): what the command checks before it starts the flow."""
    labels = load_labels(labels_dir)
    for run_dir in run_dirs:
        check_run_folder(run_dir)
    check_each_run_once([(read_run_id(run_dir), run_dir) for run_dir in run_dirs])
    load_judges(labels, run_dirs)


@task(name="measure-judge-agreement", cache_policy=NO_CACHE)
def measure_agreement(
    run_dirs: list[str], labels_dir: str, out_dir: str | None, settings: AgreementSettings
) -> str:
    """Labels folder + run folders -> out_dir (default LABELS/agreement) with agreement.json, agreement.md,
    a CSV per table and fig_agreement.png; returns the folder."""
    labels = load_labels(Path(labels_dir))
    judges = load_judges(labels, [Path(run_dir) for run_dir in run_dirs])
    out = Path(out_dir) if out_dir else default_out_dir(Path(labels_dir))
    return str(write_agreement(compute_agreement(labels, judges, settings), out))
