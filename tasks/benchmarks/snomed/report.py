"""Turn stored SNOMED runs into metrics, tables, figures and a page with a conversation browser.

Reads only RUN_DIR/{conversations,predictions,scores}.parquet, RUN_DIR/manifest.json and the case set the
manifest names; it never calls a model, so a report can be re-made at any time. Several runs over the
same case set (same fingerprint) merge into one report, each model coming from one run. Output folder:

    metrics.json            every number (snomed.md "Scoring"), null where undefined
    stats_*.parquet         the tables the figures are drawn from
    report.md, index.html   the tables and notes; the page adds the figures and a conversation browser
    fig_*.png               F1 per model, F1 against questions asked, recall per condition

The statistics are scoring.py's, the tables tables.py's and the figures figures.py's (beside this module),
and run_data.py loads the runs; this module assembles metrics.json and the browser's data, and holds the
tasks.
"""

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, NamedTuple

from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import Field

from tasks.benchmarks.snomed.figures import STATS_SCHEMAS, draw_figures
from tasks.benchmarks.snomed.leak import unread_letters
from tasks.benchmarks.snomed.run_data import RunData, RunManifest, load_runs
from tasks.benchmarks.snomed.scoring import CaseOutcome, RunMetrics, summarise_run
from tasks.benchmarks.snomed.tables import build_tables, render_html, render_markdown, run_summary
from tasks.core.preflight import UserError
from tasks.core.strict import StrictModel
from tasks.report.artifacts import publish_report, report_prefix
from tasks.report.files import default_report_dir as default_report_dir  # re-exported for the benchmark
from tasks.report.files import write_stats_table
from tasks.report.stats import LEVEL, N_RESAMPLES, BootstrapCI, seeded_rng


class ReportSettings(StrictModel):
    """How intervals are computed and how much the tables show; recorded in metrics.json."""

    n_resamples: int = Field(N_RESAMPLES, ge=10, description="Bootstrap resamples per interval.")
    seed: int = Field(0, description="Seed of the bootstrap; each model derives its own stream from it.")
    top_conditions: int = Field(
        20, ge=1, description="Conditions shown in the per-condition recall table and figure."
    )


def _interview_key(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["model"], row["case_id"], row["epoch"]


def outcomes_of(run: RunData, model: str) -> list[CaseOutcome]:
    """The model's interviews as scoring's outcomes; gold codes are those the run scored against.

    UserError when an interview's scores row, or its gold codes, is missing: the run's tables disagree, and
    taken as an empty gold set they would score an empty answer as perfect."""
    gold = {_interview_key(row): row["gold_codes"] for row in run.scores}
    unverified = Counter(
        _interview_key(reply) for reply in unverified_replies(run) if reply["model"] == model
    )
    rows = [row for row in run.predictions if row["model"] == model]
    for row in rows:
        if gold.get(_interview_key(row)) is None:
            raise UserError(
                f"run {row['run_id']}: scores.parquet holds no gold codes for the interview of model "
                f"{model!r}, case {row['case_id']!r}, epoch {row['epoch']}, which predictions.parquet holds: "
                "the run's tables disagree; re-run the run to rewrite them"
            )
    return [
        CaseOutcome(
            case_id=row["case_id"],
            epoch=row["epoch"],
            status=row["status"],
            predicted_codes=tuple(row["predicted_codes"] or ()),
            gold_codes=tuple(gold[_interview_key(row)]),
            invalid_codes=tuple(row["invalid_codes"] or ()),
            malformed_codes=tuple(row["malformed_codes"] or ()),
            not_codes=tuple(row["not_codes"] or ()),
            n_questions=row["questions_asked"],
            n_patient_replies=row["patient_replies"],
            n_leaking_replies=row["leaking_replies"],
            n_unverified_replies=unverified[_interview_key(row)],
        )
        for row in rows
    ]


def _estimate(ci: BootstrapCI) -> dict[str, Any]:
    return {"n": ci.n, "mean": ci.estimate, "ci": None if ci.low is None else [ci.low, ci.high]}


def _usage(rows: list[dict[str, Any]], name: str | None) -> dict[str, Any]:
    """Tokens and cost of one role's calls (scripted messages are not calls), and its replies cut at
    max_tokens (finish_reason 'length': a cut final answer is not read, and the interview unparseable)."""
    calls = [row for row in rows if row["status"] != "scripted"]
    return {
        "model": name,
        "calls": len(calls),
        "prompt_tokens": sum(row["prompt_tokens"] or 0 for row in calls),
        "completion_tokens": sum(row["completion_tokens"] or 0 for row in calls),
        "cost_usd": sum(row["cost_usd"] or 0.0 for row in calls),
        "cut": sum(row["finish_reason"] == "length" for row in calls),
    }


def _model_usage(run: RunData, model: str, patient: str | None) -> dict[str, Any]:
    rows = [row for row in run.conversations if row["model"] == model]
    patient_rows = [row for row in rows if row["role"] == "patient"]
    speakers = sorted({row["speaker"] for row in patient_rows if row["status"] != "scripted"} - {None})
    return {
        "clinician": _usage([row for row in rows if row["role"] == "clinician"], model),
        "patient": _usage(patient_rows, patient or (", ".join(speakers) or None)),
    }


def _model_metrics(
    summary: RunMetrics, displays: dict[str, str], usage: dict[str, Any], manifest: RunManifest | None
) -> dict[str, Any]:
    return {
        "run_id": None if manifest is None else manifest.run_id,
        "disclosure": None if manifest is None else manifest.disclosure,
        "epochs": None if manifest is None else manifest.epochs,
        "n_cases": summary.n_cases,
        "n_failed": summary.n_failed,
        "n_unparseable": summary.n_unparseable,
        "n_empty_gold": summary.n_empty_gold,
        **{name: _estimate(getattr(summary, name)) for name in ("exact_match", "precision", "recall", "f1")},
        "micro": {
            "precision": summary.micro_precision,
            "recall": summary.micro_recall,
            "f1": summary.micro_f1,
        },
        "invalid_code_rate": summary.invalid_code_rate,
        "malformed_code_rate": summary.malformed_code_rate,
        "not_code_rate": summary.not_code_rate,
        "no_answer_rate": summary.no_answer_rate,
        "leak_rate": summary.leak_rate,
        "n_unverified_replies": summary.n_unverified_replies,
        "mean_questions": summary.mean_questions,
        "condition_recall": [
            {
                "code": c.code,
                "display": displays.get(c.code),
                "n_gold": c.n_gold,
                "found": c.n_found,
                "missed": c.n_missed,
                "recall": c.recall,
            }
            for c in summary.condition_recall
        ],
        "f1_by_gold_count": [
            {"n_gold": g.n_gold, "n_cases": g.n_cases, "mean_f1": g.mean_f1} for g in summary.f1_by_gold_count
        ],
        "usage": usage,
    }


def _run_of(run: RunData) -> dict[str, RunManifest]:
    """Model -> the manifest of the run it was evaluated in."""
    run_ids = {row["model"]: row["run_id"] for row in run.predictions}
    by_id = {m.run_id: m for m in run.manifests}
    return {model: by_id[run_ids[model]] for model in run.models if run_ids[model] in by_id}


def leaking_replies(run: RunData) -> list[dict[str, Any]]:
    """Every patient reply that gave a gold code away, with where it is and under which disclosure."""
    disclosure = {model: m.disclosure for model, m in _run_of(run).items()}
    return [
        {
            "model": row["model"],
            "case_id": row["case_id"],
            "epoch": row["epoch"],
            "turn": row["turn"],
            "codes": list(row["leaked_codes"]),
            "disclosure": disclosure.get(row["model"]),
        }
        for row in sorted(run.conversations, key=lambda r: (r["model"], r["case_id"], r["epoch"], r["turn"]))
        if row["role"] == "patient" and row["leaked_codes"]
    ]


def unverified_replies(run: RunData) -> list[dict[str, Any]]:
    """Every patient reply the leak check found nothing in but could not read whole, with the letters it
    could not read (leak.unread_letters): the replies the leak rate leaves out. Read from the messages, so a
    run folder written before the rule is read by it too."""
    rows = sorted(run.conversations, key=lambda r: (r["model"], r["case_id"], r["epoch"], r["turn"]))
    replies = (row for row in rows if row["role"] == "patient" and row["status"] == "ok")
    return [
        {**{key: row[key] for key in ("model", "case_id", "epoch", "turn")}, "letters": letters}
        for row in replies
        if not row["leaked_codes"] and (letters := unread_letters(row["text"] or ""))
    ]


def failed_interviews(run: RunData) -> list[dict[str, Any]]:
    return [
        {"model": row["model"], "case_id": row["case_id"], "epoch": row["epoch"], "error": row["error"]}
        for row in sorted(run.predictions, key=_interview_key)
        if row["status"] == "failed"
    ]


def _runs(run: RunData) -> list[dict[str, Any]]:
    return [
        {
            "run_id": m.run_id,
            "path": str(m.run_dir),
            "models": [model for model in run.models if _run_of(run).get(model) == m],
            "patient": m.patient,
            "disclosure": m.disclosure,
            "patient_prompt_form": m.patient_prompt_form,
            "epochs": m.epochs,
            "max_turns": m.max_turns,
        }
        for m in run.manifests
    ]


def _case_set(run: RunData) -> dict[str, Any]:
    first = run.manifests[0]
    settings = first.case_set.get("settings") or {}  # the case set's own settings (run_case_set_facts)
    return {
        "dir": str(first.case_set_dir),
        "fingerprint": first.fingerprint,
        "gold_scope": settings.get("gold_scope"),
        "gold_tags": settings.get("gold_tags"),
        "found": run.case_set_found,
    }


class StatsTables(NamedTuple):
    """The rows the figures are drawn from: one per scored interview, one per (model, top condition)."""

    interviews: list[dict[str, Any]]
    condition_recall: list[dict[str, Any]]


def _interview_rows(run: RunData) -> list[dict[str, Any]]:
    questions = {_interview_key(row): row["questions_asked"] for row in run.predictions}
    return [
        {
            "model": row["model"],
            "case_id": row["case_id"],
            "epoch": row["epoch"],
            "n_gold": row["n_gold"],
            "questions_asked": questions.get(_interview_key(row)),
            "f1": row["f1"],
        }
        for row in sorted(run.scores, key=_interview_key)
        if row["status"] != "failed" and row["f1"] is not None
    ]


def top_conditions(models: dict[str, dict[str, Any]], n: int) -> list[str]:
    """The n gold codes seen most often over all models (ties by code)."""
    totals: defaultdict[str, int] = defaultdict(int)
    for entry in models.values():
        for row in entry["condition_recall"]:
            totals[row["code"]] += row["n_gold"]
    return sorted(totals, key=lambda code: (-totals[code], code))[:n]


def _condition_rows(models: dict[str, dict[str, Any]], n: int) -> list[dict[str, Any]]:
    rows = []
    for rank, code in enumerate(top_conditions(models, n)):
        for model, entry in models.items():
            found = next((row for row in entry["condition_recall"] if row["code"] == code), None)
            if found is not None:
                rows.append({"rank": rank, "model": model, **found})
    return rows


def compute_metrics(run: RunData, settings: ReportSettings) -> tuple[dict[str, Any], StatsTables]:
    """metrics.json's content and the rows of the stats tables. Pure: numbers depend only on the inputs."""
    run_of = _run_of(run)
    models = {}
    for model in run.models:
        manifest = run_of.get(model)
        summary = summarise_run(
            outcomes_of(run, model),
            seeded_rng(settings.seed, "snomed", model),
            n_resamples=settings.n_resamples,
        )
        usage = _model_usage(run, model, None if manifest is None else manifest.patient)
        models[model] = _model_metrics(summary, run.displays, usage, manifest)
    metrics = {
        "models": models,
        "runs": _runs(run),
        "case_set": _case_set(run),
        "leaks": leaking_replies(run),
        "unverified_replies": unverified_replies(run),
        "failed": failed_interviews(run),
        "settings": {**settings.model_dump(), "level": LEVEL, "method": "percentile, resampling cases"},
    }
    stats = StatsTables(_interview_rows(run), _condition_rows(models, settings.top_conditions))
    return metrics, stats


def _codes(row: dict[str, Any] | None, name: str) -> list[str]:
    return [] if row is None else list(row[name] or [])


def _interview_entry(
    prediction: dict[str, Any], score: dict[str, Any] | None, turns: list[list[Any]]
) -> dict[str, Any]:
    """One interview for the browser; its answer's codes split into hits, wrong, invalid and malformed."""
    invalid = set(_codes(prediction, "invalid_codes"))
    malformed = set(_codes(prediction, "malformed_codes"))
    scored = score is not None and score["status"] != "failed"
    wrong = _codes(score, "wrong_codes") if scored else []
    return {
        "status": prediction["status"],
        "f1": score["f1"] if scored else None,
        "final_answer": prediction["final_answer"],
        "hits": _codes(score, "hit_codes") if scored else [],
        "wrong": [code for code in wrong if code not in invalid],
        "invalid": [code for code in wrong if code in invalid and code not in malformed],
        "malformed": [code for code in wrong if code in malformed],
        "missed": _codes(score, "missed_codes") if scored else [],
        "error": prediction["error"],
        "turns": turns,
    }


def browser_data(run: RunData) -> dict[str, Any]:
    """The browser's data: one entry per interview, each with its messages in order.

    A message is [turn, role, speaker, status, text, leaked codes]; models and cases are indexes into
    the lists of the same names.
    """
    messages: defaultdict[tuple[str, str, int], list[list[Any]]] = defaultdict(list)
    # The system prompts are left out: the same prompt files for every interview, the record in the case set.
    shown = (row for row in run.conversations if row["role"] != "system")
    for row in sorted(shown, key=lambda r: (*_interview_key(r), r["message"])):
        messages[_interview_key(row)].append(
            [
                row["turn"],
                row["role"],
                row["speaker"],
                row["status"],
                row["text"],
                list(row["leaked_codes"] or []),
            ]
        )
    scores = {_interview_key(row): row for row in run.scores}
    cases = sorted({row["case_id"] for row in run.predictions})
    interviews = [
        {
            "model": run.models.index(row["model"]),
            "case": cases.index(row["case_id"]),
            "epoch": row["epoch"],
            **_interview_entry(row, scores.get(_interview_key(row)), messages[_interview_key(row)]),
        }
        for row in sorted(
            run.predictions, key=lambda r: (run.models.index(r["model"]), r["case_id"], r["epoch"])
        )
    ]
    return {"models": run.models, "cases": cases, "displays": run.displays, "interviews": interviews}


@task(name="build-snomed-report", cache_policy=NO_CACHE)
def build_report(run_dirs: list[str], out_dir: str, settings: ReportSettings) -> str:
    """Run folders -> out_dir with metrics.json, stats_*.parquet, report.md, fig_*.png, index.html."""
    run = load_runs([Path(run_dir) for run_dir in run_dirs])
    metrics, stats = compute_metrics(run, settings)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # allow_nan=False: an undefined value must be null, and a NaN reaching here is a bug to surface.
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, allow_nan=False))
    stats_paths = {
        name: write_stats_table(rows, out / f"{name}.parquet", STATS_SCHEMAS[name])
        for name, rows in (
            ("stats_interviews", stats.interviews),
            ("stats_condition_recall", stats.condition_recall),
        )
    }
    figures = draw_figures(stats_paths, out)
    tables = build_tables(metrics, settings.top_conditions)
    (out / "report.md").write_text(render_markdown(metrics, tables, list(figures)))
    (out / "index.html").write_text(render_html(metrics, tables, figures, browser_data(run)))
    return str(out)


@task(name="publish-snomed-report-artifacts", cache_policy=NO_CACHE)
def publish_report_artifacts(report_dir: str) -> list[str]:
    """A stored report -> one Prefect table artifact per table and a Markdown summary; returns their keys."""
    out = Path(report_dir)
    metrics = json.loads((out / "metrics.json").read_text())
    prefix = report_prefix("snomed-report", [run["run_id"] for run in metrics["runs"]], out)
    return publish_report(
        build_tables(metrics, metrics["settings"]["top_conditions"]),
        (out / "report.md").read_text(),
        prefix,
        run_summary(metrics),
    )
