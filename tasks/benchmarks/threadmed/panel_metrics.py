"""metrics.json's judge panel: each judge's mean and drift per (model, condition), how often the judges
differ, their pairwise exact agreement, the turns where they differ most, and the schemas of the panel's
stats tables.
"""

from typing import Any

import numpy as np
import pyarrow as pa

from tasks.benchmarks.threadmed.report_metrics import Sample, condition_sample, estimate_json, unscored_counts
from tasks.benchmarks.threadmed.run_data import Turns
from tasks.report.panel import (
    CONSENSUS_RULE,
    Differing,
    PanelJudge,
    differing,
    drift,
    exact_agreement,
    judge_pairs,
)
from tasks.report.stats import Undefined, value_columns

# The judge panel's turns where the judges differ most, listed in the report.
MAX_DISAGREEMENTS = 20


def _pct(share: float | Undefined) -> float | Undefined:
    """A share in [0, 1] on the report's 0-100 scale; an undefined share stays undefined."""
    return share if isinstance(share, Undefined) else 100.0 * share


def _differing_json(result: Differing) -> dict[str, Any]:
    return {"n": result.n, "count": result.count, **value_columns("pct", _pct(result.share))}


def panel_condition(
    turns: Turns, rows: np.ndarray, judges: list[PanelJudge], overall: dict[str, Any], sample: Sample
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """One (model, condition)'s panel entry: each judge's mean and drift, the panel's mean (the overall
    one), how often the judges differ, and pairwise exact agreement; with its stats rows."""
    grades = turns.grades
    assert grades is not None
    model, condition = sample.labels
    entry: dict[str, Any] = {"judges": {}}
    panel_rows, pair_rows = [], []
    for index, judge in enumerate(judges):
        mean = condition_sample(turns, rows, sample.settings, sample.labels, grades.judge[:, index])
        estimate = estimate_json(
            mean.mean(np.ones(len(mean.score), dtype=bool), mean.score, "judge", judge.label)
        )
        drifted = drift(grades.score[rows], judge, "turn")
        entry["judges"][judge.label] = {
            **estimate,
            "drift": None if drifted is None else _differing_json(drifted),
        }
        panel_rows.append(_panel_row(model, condition, judge.label, estimate, len(judge.columns), drifted))
    entry["panel"] = {key: overall[key] for key in ("n", "mean", "ci")}
    everyone = differing(grades.judge[rows], "turn", "judges")
    entry["disagreement"] = _differing_json(everyone)
    panel_rows.append(_panel_row(model, condition, "panel", entry["panel"], None, None, everyone))
    entry["pairs"] = []
    for first, second, pair in judge_pairs(grades.judge[rows], judges, "turn"):
        exact = value_columns("exact_pct", _pct(exact_agreement(pair)))
        entry["pairs"].append({"judges": [first, second], "n": pair.n, **exact})
        pair_rows.append(
            {
                "model": model,
                "condition": condition,
                "judge_a": first,
                "judge_b": second,
                "n": pair.n,
                **exact,
            }
        )
    return entry, panel_rows, pair_rows


def _panel_row(
    model: str,
    condition: str,
    judge: str,
    estimate: dict[str, Any],
    samples: int | None,
    drifted: Differing | None,
    judges_differ: Differing | None = None,
) -> dict[str, Any]:
    """A row of stats_judge_panel: a judge's (or the panel's) mean, its drift, or the judges' disagreement."""
    ci = estimate["ci"] or [None, None]
    return {
        "model": model,
        "condition": condition,
        "judge": judge,
        "n": estimate["n"],
        "mean": estimate["mean"],
        "ci_low": ci[0],
        "ci_high": ci[1],
        "n_samples": samples,
        "drift_n": None if drifted is None else drifted.n,
        "drift_changed": None if drifted is None else drifted.count,
        **value_columns("drift_pct", None if drifted is None else _pct(drifted.share)),
        "differ_n": None if judges_differ is None else judges_differ.n,
        "differ_count": None if judges_differ is None else judges_differ.count,
        **value_columns("differ_pct", None if judges_differ is None else _pct(judges_differ.share)),
    }


def disagreements(turns: Turns, judges: list[PanelJudge]) -> list[dict[str, Any]]:
    """The turns every judge graded where they differ most (widest spread of grades), at most
    MAX_DISAGREEMENTS, in report order among equal spreads."""
    grades = turns.grades
    assert grades is not None
    spread = np.ptp(grades.judge, axis=1)  # NaN unless every judge graded the turn
    differ = np.flatnonzero(spread > 0)
    top = differ[np.argsort(-spread[differ], kind="stable")][:MAX_DISAGREEMENTS]
    return [
        {
            "model": str(turns.model[i]),
            "condition": str(turns.condition[i]),
            "thread_id": str(turns.thread_id[i]),
            "turn": int(turns.turn[i]),
            "grades": {judge.label: float(grades.judge[i, j]) for j, judge in enumerate(judges)},
            "panel": float(turns.score[i]),
        }
        for i in top
    ]


def panel_judges_json(turns: Turns, judges: list[PanelJudge]) -> list[dict[str, Any]]:
    """Each judge over the whole report: its samples and runs, cost, unscored turns and drift."""
    grades = turns.grades
    assert grades is not None
    entries = []
    for index, judge in enumerate(judges):
        drifted = drift(grades.score, judge, "turn")
        entries.append(
            {
                "label": judge.label,
                "model": judge.model,
                "samples": judge.samples,
                "n_samples": len(judge.samples),
                "runs": judge.runs,
                "cost_usd": float(grades.usd[:, judge.columns].sum()),
                # judgments of all its samples
                **unscored_counts(grades.status[:, judge.columns][np.isnan(grades.score[:, judge.columns])]),
                "unscored_turns": int(np.isnan(grades.judge[:, index]).sum()),
                "drift": None if drifted is None else _differing_json(drifted),
            }
        )
    return entries


PANEL_RULE = f"{CONSENSUS_RULE} Every other table is computed on this panel grade."


PANEL_STATS = pa.schema(
    [
        *((name, pa.string()) for name in ("model", "condition", "judge")),
        ("n", pa.int64()),
        *((name, pa.float64()) for name in ("mean", "ci_low", "ci_high")),
        *((name, pa.int64()) for name in ("n_samples", "drift_n", "drift_changed")),
        ("drift_pct", pa.float64()),
        ("drift_pct_undefined", pa.string()),
        *((name, pa.int64()) for name in ("differ_n", "differ_count")),
        ("differ_pct", pa.float64()),
        ("differ_pct_undefined", pa.string()),
    ]
)
PAIR_STATS = pa.schema(
    [
        *((name, pa.string()) for name in ("model", "condition", "judge_a", "judge_b")),
        ("n", pa.int64()),
        ("exact_pct", pa.float64()),
        ("exact_pct_undefined", pa.string()),
    ]
)
