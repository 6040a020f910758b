"""metrics.json's FQR judge panel: each judge's FQR and drift per model, how often the judges differ and
their pairwise exact agreement.
"""

from typing import Any

import numpy as np

from tasks.benchmarks.consult.report_metrics import ReportSettings, metric_interval
from tasks.benchmarks.consult.run_data import RunData, episode_key, fqr_of
from tasks.report.panel import (
    CONSENSUS_RULE,
    Differing,
    differing,
    drift,
    exact_agreement,
    judge_grades,
    judge_pairs,
)
from tasks.report.stats import seeded_rng, value_columns


def _differing_json(result: Differing | None) -> dict[str, Any] | None:
    if result is None:
        return None
    return {"n": result.n, "count": result.count, **value_columns("share", result.share)}


def _fqr_panel_model(run: RunData, model: str, settings: ReportSettings) -> dict[str, Any] | None:
    """One model's FQR by each judge (its samples' consensus) with its drift, how often the judges differ on
    a follow-up, and pairwise exact agreement; None without a completed episode."""
    panel = run.panel
    assert panel is not None
    episodes = [
        episode_key(row) for row in run.scores if row["model"] == model and episode_key(row) in panel.verdicts
    ]
    if not episodes:
        return None
    graders = np.vstack([panel.verdicts[episode] for episode in episodes])
    judged = judge_grades(graders, panel.judges)
    per_episode = {episode: judge_grades(panel.verdicts[episode], panel.judges) for episode in episodes}
    judges = {}
    for index, judge in enumerate(panel.judges):
        rows = [
            {"case_id": episode[1], "fqr": fqr_of(panel.weights[episode], per_episode[episode][:, index])}
            for episode in episodes
        ]
        rng = seeded_rng(settings.seed, "consult", model, "fqr", "judge", judge.label)
        interval = metric_interval(rows, "fqr", rng, settings.n_resamples)
        judges[judge.label] = {**interval, "drift": _differing_json(drift(graders, judge, "follow-up"))}
    return {
        "judges": judges,
        "disagreement": _differing_json(differing(judged, "follow-up", "judges")),
        "pairs": [
            {"judges": [first, second], "n": pair.n, **value_columns("exact", exact_agreement(pair))}
            for first, second, pair in judge_pairs(judged, panel.judges, "follow-up")
        ],
    }


def fqr_panel(run: RunData, models: dict[str, dict[str, Any]], settings: ReportSettings) -> dict[str, Any]:
    """metrics.json's `judge_panel`: the rule, each judge (samples, runs, drift over every follow-up), and per
    model each judge's FQR beside the panel's (the headline FQR)."""
    panel = run.panel
    assert panel is not None
    every = np.vstack([*panel.verdicts.values(), np.empty((0, sum(len(j.columns) for j in panel.judges)))])
    per_model = {}
    for model in run.models:
        entry = _fqr_panel_model(run, model, settings)
        if entry is not None:
            per_model[model] = {**entry, "panel": models[model]["fqr"]}
    return {
        "rule": CONSENSUS_RULE,
        "judges": [
            {
                "label": judge.label,
                "model": judge.model,
                "samples": judge.samples,
                "n_samples": len(judge.samples),
                "runs": judge.runs,
                "drift": _differing_json(drift(every, judge, "follow-up")),
            }
            for judge in panel.judges
        ],
        "models": per_model,
    }
