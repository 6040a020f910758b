"""metrics.json's entries per model (each metric's mean and interval, usage, unverified and unparsed
counts, the judge's cut replies, by department) and per report (failed episodes, parse errors, runs), with
the rows of the stats tables the figures are drawn from; and the settings of its intervals.
"""

from collections import Counter, defaultdict
from typing import Any

import numpy as np
from pydantic import Field

from tasks.benchmarks.consult.composite import episodes_composite, metric_means
from tasks.benchmarks.consult.contracts import PRIMARY_METRICS, SECONDARY_METRICS, STAGE_METRICS
from tasks.benchmarks.consult.judge import n_judge_cut
from tasks.benchmarks.consult.run_data import RunData, episode_key
from tasks.core.strict import StrictModel
from tasks.llm.offline import is_offline
from tasks.report.runs import model_runs
from tasks.report.stats import N_RESAMPLES, BootstrapCI, bootstrap_mean, seeded_rng


class ReportSettings(StrictModel):
    """How intervals are computed; recorded in metrics.json."""

    n_resamples: int = Field(N_RESAMPLES, ge=10, description="Bootstrap resamples per interval.")
    seed: int = Field(0, description="Seed of the bootstrap; each model and metric derive their own stream.")


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _defined(rows: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [row for row in rows if row[name] is not None]


def _estimate(ci: BootstrapCI) -> dict[str, Any]:
    return {"n": ci.n, "mean": ci.estimate, "ci": None if ci.low is None else [ci.low, ci.high]}


def metric_interval(
    rows: list[dict[str, Any]], name: str, rng: np.random.Generator, n_resamples: int
) -> dict:
    """Mean of one metric over the episodes where it is defined, with a percentile interval that resamples
    cases (an episode's epochs move together)."""
    defined = _defined(rows, name)
    ci = bootstrap_mean(
        np.array([row[name] for row in defined], dtype=float),
        rng,
        clusters=np.array([row["case_id"] for row in defined]),
        n_resamples=n_resamples,
    )
    return _estimate(ci)


def _usage(messages: list[dict[str, Any]], scores: list[dict[str, Any]]) -> dict[str, Any]:
    """Calls, tokens and cost of the agent (its message rows; the simulated patient makes no call) and of
    the FQR judge on its episodes (SCORES counts them per episode), failed calls included; the agent's
    replies cut at max_tokens (`cut`; SCORES keeps no finish reason of the judge's)."""
    calls = [row for row in messages if row["role"] == "agent" and row["status"] != "simulated"]
    return {
        "agent": {
            "calls": len(calls),
            "prompt_tokens": sum(row["prompt_tokens"] or 0 for row in calls),
            "completion_tokens": sum(row["completion_tokens"] or 0 for row in calls),
            "cost_usd": sum(row["cost_usd"] or 0.0 for row in calls),
            "cut": sum(row["finish_reason"] == "length" for row in calls),
        },
        "judge": {
            name: sum(row[f"judge_{name}"] or 0 for row in scores)
            for name in ("calls", "prompt_tokens", "completion_tokens", "cost_usd")
        },
    }


def unverified_entry(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The first plans' drugs the critic could not check (an unresolved name, an unreadable dose: severity
    'unverified'), over the plans' items, and the plans holding one (PSC counts them as unsafe)."""
    per_plan = [
        len({v["drug"] for v in row["violations"] or () if v["severity"] == "unverified"}) for row in rows
    ]
    items = sum(len(row["plan"] or ()) for row in rows)
    return {
        "items": items,
        "unverified": sum(per_plan),
        "rate": sum(per_plan) / items if items else None,
        "plans": sum(n > 0 for n in per_plan),
    }


def replies_cut(messages: list[dict[str, Any]]) -> dict[str, int]:
    """Per stage, the agent's replies cut at max_tokens (finish_reason 'length'); stages with none left out.
    A cut differential or plan is parsed as given; a cut follow-up answer is judged as given unless the
    config says `truncated: mark`."""
    counts = Counter(
        row["stage"] for row in messages if row["role"] == "agent" and row["finish_reason"] == "length"
    )
    return {stage: counts[stage] for stage in STAGE_METRICS if counts[stage]}


def unparsed_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """The agent's outputs of completed episodes left unparseable after their re-ask, per stage: each
    scored the worst of its stage's metrics (the run summary counts the same SCORES columns)."""
    return {
        "n_diagnosis_unparseable": sum(row["diagnosis_parse"] == "unparseable" for row in rows),
        "n_plan_unparseable": sum(row["plan_parse"] == "unparseable" for row in rows),
        "n_revisions_unparseable": sum(row["revisions_unparseable"] for row in rows),
    }


def parse_errors(run: RunData) -> list[dict[str, Any]]:
    """Each error a parser raised on a reply of a completed episode (a parser bug; the reply was scored as
    unparseable), with its episode."""
    return [
        {"model": row["model"], "case_id": row["case_id"], "epoch": row["epoch"], "error": error}
        for row in sorted(run.scores, key=episode_key)
        if row["status"] == "completed"
        for error in row["parse_errors"] or ()
    ]


def judge_entry(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The FQR judge(s) and rubric(s) of a model's episodes, and whether every judge is an offline one."""
    judges = sorted({row["judge_model"] for row in rows if row["judge_model"]})
    return {
        "models": judges,
        "rubric_versions": sorted({row["rubric_version"] for row in rows if row["rubric_version"]}),
        "offline": bool(judges) and all(map(is_offline, judges)),
    }


def _department_means(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"n": len(rows), **metric_means(rows), "composite": episodes_composite(rows).score}


def model_metrics(
    rows: list[dict[str, Any]], messages: list[dict[str, Any]], model: str, settings: ReportSettings
) -> dict[str, Any]:
    scored = [row for row in rows if row["status"] == "completed"]
    means = metric_means(scored)  # the composite's inputs (composite.py), shown as the tables' means
    primary = {
        name: {
            **metric_interval(
                scored, name, seeded_rng(settings.seed, "consult", model, name), settings.n_resamples
            ),
            "mean": means[name],
        }
        for name in PRIMARY_METRICS
    }
    departments = sorted({row["department"] for row in scored})
    return {
        "n_episodes": len(scored),
        "n_failed": len(rows) - len(scored),
        **unparsed_counts(scored),
        "fqr_judged": sum(row["fqr_judged"] or 0 for row in scored),
        "fqr_unparseable": sum(row["fqr_unparseable"] or 0 for row in scored),
        "unverified": unverified_entry(scored),
        "replies_cut": replies_cut(messages),
        "fqr_truncated": sum(
            turn["judge_status"] == "truncated" for row in scored for turn in row["follow_ups"] or ()
        ),
        "n_judge_cut": sum(n_judge_cut(row["follow_ups"]) for row in scored),
        "judge": judge_entry(scored),
        **primary,
        "secondary": {
            name: _mean([row[name] for row in _defined(scored, name)]) for name in SECONDARY_METRICS
        },
        "composite": episodes_composite(scored)._asdict(),
        "departments": {
            department: _department_means([row for row in scored if row["department"] == department])
            for department in departments
        },
        "usage": _usage(messages, rows),
    }


def failed_episodes(run: RunData) -> list[dict[str, Any]]:
    return [
        {"model": row["model"], "case_id": row["case_id"], "epoch": row["epoch"], "error": row["error"]}
        for row in sorted(run.scores, key=episode_key)
        if row["status"] != "completed"
    ]


def runs_entry(run: RunData) -> list[dict[str, Any]]:
    run_of = model_runs(run.manifests, {row["model"]: row["run_id"] for row in run.scores})
    return [
        {
            "run_id": m.run_id,
            "path": str(m.run_dir),
            "models": [model for model in run.models if run_of.get(model) == m],
            **{key: m.config.get(key) for key in ("epochs", "max_questions", "gamma", "policy_version")},
        }
        for m in run.manifests
    ]


def revealed_by_turn(messages: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[int, list[str]]]:
    """Episode -> turn -> the AIU ids the patient revealed at that turn (history stage; turn 0: opening)."""
    revealed: defaultdict[tuple[str, str, int], dict[int, list[str]]] = defaultdict(dict)
    for row in messages:
        if row["role"] == "patient" and row["stage"] == "history" and row["revealed"]:
            revealed[episode_key(row)].setdefault(row["turn"], []).extend(row["revealed"])
    return revealed


def coverage_rows(run: RunData) -> list[dict[str, Any]]:
    """Per model and turn t = 0..T (T: most questions any episode asked), the mean share of the case's MNI
    target revealed by turn t over completed episodes with an MNI target; a shorter episode stays at its
    last value."""
    revealed = revealed_by_turn(run.messages)
    episodes = [row for row in run.scores if row["status"] == "completed" and row["mni_target"]]
    last_turn = max((row["questions"] or 0 for row in episodes), default=0)
    rows = []
    for model in run.models:
        mine = [row for row in episodes if row["model"] == model]
        if not mine:
            continue
        shares = np.zeros((len(mine), last_turn + 1))
        for index, row in enumerate(mine):
            target, seen = set(row["mni_target"]), set()
            by_turn = revealed.get(episode_key(row), {})
            for turn in range(last_turn + 1):
                seen |= set(by_turn.get(turn, ())) & target
                shares[index, turn] = len(seen) / len(target)
        rows += [
            {
                "model": model,
                "turn": turn,
                "episodes": len(mine),
                "mni_coverage": float(shares[:, turn].mean()),
            }
            for turn in range(last_turn + 1)
        ]
    return rows


def episode_rows(run: RunData) -> list[dict[str, Any]]:
    """One row per completed episode: what the questions figure and a reader of the stats need."""
    return [
        {
            "model": row["model"],
            "case_id": row["case_id"],
            "epoch": row["epoch"],
            "department": row["department"],
            "questions": row["questions"],
            "mni_comp": row["mni_comp"],
            "core_dx_f1": row["core_dx_f1"],
            "psc": row["psc"],
            "fqr": row["fqr"],
            "composite": row["composite"],
        }
        for row in sorted(run.scores, key=lambda r: (run.models.index(r["model"]), r["case_id"], r["epoch"]))
        if row["status"] == "completed"
    ]


def primary_rows(models: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Per model and primary metric: its stage, mean and interval (the stage figure's bars); then per model
    and stage, the stage score (metric `stage`, no interval)."""
    rows = []
    for model, entry in models.items():
        for stage, names in STAGE_METRICS.items():
            rows += [
                {
                    "model": model,
                    "stage": stage,
                    "metric": name,
                    "n": entry[name]["n"],
                    "mean": entry[name]["mean"],
                    "low": None if entry[name]["ci"] is None else entry[name]["ci"][0],
                    "high": None if entry[name]["ci"] is None else entry[name]["ci"][1],
                }
                for name in names
            ]
            rows.append(
                {
                    "model": model,
                    "stage": stage,
                    "metric": "stage",
                    "n": entry["n_episodes"],
                    "mean": entry["composite"][stage],
                    "low": None,
                    "high": None,
                }
            )
    return rows
