"""Turn stored consultation runs into metrics, tables, figures and a page with an episode browser.

Reads only RUN_DIR/{messages,scores}.parquet and RUN_DIR/manifest.json, plus the empirical reference the
inquiry mining stored (inquiry/data/mined_<policy version>/reference.json); it never calls a model, so a
report can be re-made at any time. Several runs over the same case set (same fingerprint) merge into one
report, each model coming from one run; runs whose episodes hold the same messages graded by different FQR
judges (or samples of one: other params or epochs) make a judge panel, whose grade FQR is computed on.
Output folder:

    metrics.json            every number (consult.md "Metrics"), null where undefined
    stats_*.parquet         the tables the figures are drawn from
    report.md, index.html   the tables and notes; the page adds the figures and an episode browser
    fig_*.png               MNI coverage against turns, questions asked, the primary metrics by stage

The tables are tables.py's and the figures figures.py's (beside this module); this module loads runs,
computes metrics.json and the browser's data, and holds the tasks.
"""

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from prefect import task
from prefect.cache_policies import NO_CACHE
from pydantic import Field

from tasks.benchmarks.consult.cases.case_set import CASES_FILE
from tasks.benchmarks.consult.composite import composite, episodes_composite, metric_means
from tasks.benchmarks.consult.contracts import (
    MESSAGES,
    PRIMARY_METRICS,
    SCORES,
    SECONDARY_METRICS,
    STAGE_METRICS,
)
from tasks.benchmarks.consult.figures import STATS_SCHEMAS, draw_figures
from tasks.benchmarks.consult.inquiry.policy import InquiryPolicy
from tasks.benchmarks.consult.judge import n_judge_cut
from tasks.benchmarks.consult.tables import build_tables, render_html, render_markdown, run_summary
from tasks.core.preflight import UserError
from tasks.core.strict import StrictModel
from tasks.llm.offline import is_offline
from tasks.report.artifacts import publish_report, report_prefix
from tasks.report.files import default_report_dir as default_report_dir  # re-exported for the benchmark
from tasks.report.files import write_stats_table
from tasks.report.panel import (
    CONSENSUS_RULE,
    Differing,
    JudgeRun,
    PanelJudge,
    consensus_grades,
    differing,
    drift,
    exact_agreement,
    group_graders,
    judge_grades,
    judge_pairs,
    panel_judges,
    sample_label,
)
from tasks.report.runs import (
    PanelRuns,
    RunManifest,
    check_mergeable,
    check_one_case_set,
    check_same_graded,
    model_runs,
    ordered_models,
    read_manifest,
    read_rows,
)
from tasks.report.runs import check_run_folder as check_run_files
from tasks.report.stats import LEVEL, N_RESAMPLES, BootstrapCI, bootstrap_mean, seeded_rng, value_columns

RUN_FILES = ("manifest.json", "messages.parquet", "scores.parquet")
INQUIRY_DATA = Path(__file__).parent / "inquiry" / "data"


class ReportSettings(StrictModel):
    """How intervals are computed; recorded in metrics.json."""

    n_resamples: int = Field(N_RESAMPLES, ge=10, description="Bootstrap resamples per interval.")
    seed: int = Field(0, description="Seed of the bootstrap; each model and metric derive their own stream.")


class FqrPanel(NamedTuple):
    """Several FQR judges over the same episodes: per episode, its follow-ups' verdicts (1 correct, 0 not,
    NaN ungraded) by grader column, the follow-ups' FQR weights, and every grader's SCORES rows."""

    judges: list[PanelJudge]
    verdicts: dict[tuple[str, str, int], np.ndarray]
    weights: dict[tuple[str, str, int], np.ndarray]
    rows: list[dict[str, Any]]


class RunData(NamedTuple):
    """The merged runs of one report: rows of the two run tables, and the mined empirical reference. With
    an FQR judge panel, the scores' FQR (and composite) is the panel's and `panel` holds every judge's."""

    manifests: list[RunManifest]
    models: list[str]
    messages: list[dict[str, Any]]
    scores: list[dict[str, Any]]
    reference: dict[str, Any] | None
    panel: FqrPanel | None = None


def check_run_folder(run_dir: Path) -> None:
    """Raise UserError unless `run_dir` holds what a finished consultation run writes."""
    check_run_files(run_dir, RUN_FILES, "consult", "consultation")


def read_reference(policy_version: str, data_dir: Path = INQUIRY_DATA) -> dict[str, Any] | None:
    """The mining's empirical reference (Hit@k and POVR of the real dialogues) and the policy rows it never
    mined (Hit@1 after those templates rests on the tie rule alone); None when not mined."""
    folder = data_dir / f"mined_{policy_version}"
    if not (folder / "reference.json").is_file():
        return None
    return {
        **json.loads((folder / "reference.json").read_text()),
        "policy_version": policy_version,
        "rows_never_mined": list(InquiryPolicy.from_directory(folder).unmined_rows),
    }


def _judge_run(manifest: RunManifest) -> JudgeRun:
    """A run's FQR judge as a panel sees it (a run config without one: the default): the judge is its model
    and rubric (one vote each); its params and epoch make a sample of that judge."""
    judge = manifest.config.get("judge") or {}
    params, epoch = judge.get("params") or {}, int(judge.get("epoch") or 0)
    return JudgeRun(
        judge=json.dumps({key: judge.get(key) for key in ("model", "rubric")}, sort_keys=True),
        sample=json.dumps([params, epoch], sort_keys=True),
        model=judge.get("model") or "",
        name=_judge_name(manifest),
        sample_label=sample_label(params, epoch),
        run_id=manifest.run_id,
    )


def _judge_name(manifest: RunManifest) -> str:
    judge = manifest.config.get("judge") or {}
    rubric = f" rubric {judge['rubric']}" if judge.get("rubric") else ""
    return f"{judge.get('model')}{rubric}"


def _judge_of(manifest: RunManifest) -> str:
    """Everything that makes a run's verdicts what they are: judge, params and epoch."""
    judge = manifest.config.get("judge") or {}
    epoch = f" epoch {judge['epoch']}" if judge.get("epoch") else ""
    return f"{_judge_name(manifest)} {json.dumps(judge.get('params') or {})}{epoch}"


def _agent_calls(messages: list[dict[str, Any]]) -> dict[tuple[str, str, int], tuple[str | None, ...]]:
    """Episode -> the call keys of its agent's messages in order: what makes two runs' episodes the same."""
    calls: defaultdict[tuple[str, str, int], list[tuple[Any, ...]]] = defaultdict(list)
    for row in messages:
        if row["role"] == "agent":
            calls[_episode_key(row)].append((*message_order(row), row["call_key"]))
    return {episode: tuple(key for *_, key in sorted(rows)) for episode, rows in calls.items()}


def _follow_up_verdicts(row: dict[str, Any]) -> dict[int, float]:
    """A SCORES row's graded follow-ups: script index -> 1.0 correct, 0.0 not."""
    return {
        turn["index"]: float(turn["correct"])
        for turn in row["follow_ups"] or ()
        if turn["judge_status"] == "ok" and turn["correct"] is not None
    }


def fqr_of(weights: np.ndarray, verdicts: np.ndarray) -> float | None:
    """FQR over graded follow-ups (verdict not NaN): their weight graded correct over their weight."""
    graded = ~np.isnan(verdicts)
    total = weights[graded].sum()
    return float((weights[graded] * verdicts[graded]).sum() / total) if total else None


def _panel_scores(
    scores_by_run: list[list[dict[str, Any]]],
    judge_runs: list[JudgeRun],
    graders: dict[tuple[str, str], list[int]],
) -> tuple[list[dict[str, Any]], FqrPanel]:
    """The first judge's SCORES rows with FQR, its counts, the follow-ups' verdicts and the composite made
    the panel's (the consensus of the judges' verdicts on each follow-up), and the panel's grades."""
    judges = panel_judges(graders, judge_runs)
    by_grader = [
        {_episode_key(row): row for i in runs for row in scores_by_run[i]} for runs in graders.values()
    ]
    rows, verdicts, weights = [], {}, {}
    for episode, row in by_grader[0].items():
        if row["status"] != "completed":
            rows.append(row)
            continue
        follow_ups = list(row["follow_ups"] or ())
        graded = [_follow_up_verdicts(grader[episode]) for grader in by_grader]
        matrix = np.array([[g.get(turn["index"], np.nan) for g in graded] for turn in follow_ups]).reshape(
            len(follow_ups), len(graded)
        )
        panel = consensus_grades(judge_grades(matrix, judges)) if len(follow_ups) else np.array([])
        verdicts[episode] = matrix
        weights[episode] = np.array([2.0 if turn["core"] else 1.0 for turn in follow_ups])
        turns = [
            {
                **turn,
                "correct": None if np.isnan(v) else bool(v),
                "judge_status": "ok" if not np.isnan(v) else turn["judge_status"],
            }
            for turn, v in zip(follow_ups, panel, strict=True)
        ]
        fqr = fqr_of(weights[episode], panel)
        primary = {**{name: row[name] for name in PRIMARY_METRICS}, "fqr": fqr}
        usage = {
            f"judge_{name}": sum(grader[episode][f"judge_{name}"] or 0 for grader in by_grader)
            for name in ("calls", "prompt_tokens", "completion_tokens", "cost_usd")
        }
        rows.append(
            {
                **row,
                **usage,
                "follow_ups": turns,
                "fqr": fqr,
                "fqr_judged": sum(turn["judge_status"] == "ok" for turn in turns),
                "fqr_unparseable": sum(turn["judge_status"] == "unparseable" for turn in turns),
                "composite": composite(primary).score,
            }
        )
    every_row = [row for grader in by_grader for row in grader.values()]
    return rows, FqrPanel(judges, verdicts, weights, every_row)


def load_runs(run_dirs: list[Path]) -> RunData:
    """Read and merge run folders; UserError when a folder is not a run or the runs do not merge."""
    for run_dir in run_dirs:
        check_run_folder(run_dir)
    manifests = [read_manifest(run_dir, CASES_FILE) for run_dir in run_dirs]
    scores_by_run = [read_rows(d / "scores.parquet", SCORES) for d in run_dirs]
    messages_by_run = [read_rows(d / "messages.parquet", MESSAGES) for d in run_dirs]
    judge_runs = [_judge_run(manifest) for manifest in manifests]
    graders = group_graders(judge_runs)
    panel = None
    if len(graders) == 1:
        check_mergeable(manifests, [{row["model"] for row in rows} for rows in scores_by_run])
        scores = [row for rows in scores_by_run for row in rows]
        messages = [row for rows in messages_by_run for row in rows]
    else:
        check_one_case_set(manifests)
        check_same_graded(
            manifests,
            graders,
            PanelRuns(
                [{row["model"] for row in rows} for rows in scores_by_run],
                [_agent_calls(messages) for messages in messages_by_run],
                [_judge_of(manifest) for manifest in manifests],
            ),
            "by different FQR judges",
            "episodes",
        )
        scores, panel = _panel_scores(scores_by_run, judge_runs, graders)
        messages = [row for i in next(iter(graders.values())) for row in messages_by_run[i]]
    if not scores:
        raise UserError(f"no episodes in {', '.join(map(str, run_dirs))}: nothing to report", "RUN_DIRS...")
    return RunData(
        manifests=manifests,
        models=ordered_models({row["model"] for row in scores}, [n for m in manifests for n in m.models]),
        messages=messages,
        scores=scores,
        reference=read_reference(manifests[0].config.get("policy_version", "v1")),
        panel=panel,
    )


# --- metrics -------------------------------------------------------------------------------------------


def _episode_key(row: dict[str, Any]) -> tuple[str, str, int]:
    return row["model"], row["case_id"], row["epoch"]


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
        for row in sorted(run.scores, key=_episode_key)
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


def _model_metrics(
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
        for row in sorted(run.scores, key=_episode_key)
        if row["status"] != "completed"
    ]


def _runs(run: RunData) -> list[dict[str, Any]]:
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
            revealed[_episode_key(row)].setdefault(row["turn"], []).extend(row["revealed"])
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
            by_turn = revealed.get(_episode_key(row), {})
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
        _episode_key(row)
        for row in run.scores
        if row["model"] == model and _episode_key(row) in panel.verdicts
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


class StatsTables(NamedTuple):
    """The rows the figures are drawn from."""

    mni_coverage: list[dict[str, Any]]
    episodes: list[dict[str, Any]]
    primary: list[dict[str, Any]]


def compute_metrics(run: RunData, settings: ReportSettings) -> tuple[dict[str, Any], StatsTables]:
    """metrics.json's content and the rows of the stats tables. Pure: numbers depend only on the inputs."""
    models = {
        model: _model_metrics(
            [row for row in run.scores if row["model"] == model],
            [row for row in run.messages if row["model"] == model],
            model,
            settings,
        )
        for model in run.models
    }
    if run.panel is not None:
        for model, entry in models.items():
            graded = [row for row in run.panel.rows if row["model"] == model and row["status"] == "completed"]
            entry["judge"] = judge_entry(graded)
    metrics = {
        "models": models,
        **({"judge_panel": fqr_panel(run, models, settings)} if run.panel is not None else {}),
        "runs": _runs(run),
        "case_set": {"dir": str(run.manifests[0].case_set_dir), "fingerprint": run.manifests[0].fingerprint},
        "reference": run.reference,
        "failed": failed_episodes(run),
        "parse_errors": parse_errors(run),
        "settings": {**settings.model_dump(), "level": LEVEL, "method": "percentile, resampling cases"},
    }
    return metrics, StatsTables(coverage_rows(run), episode_rows(run), primary_rows(models))


# --- HTML page -----------------------------------------------------------------------------------------


def differential_entry(score: dict[str, Any]) -> dict[str, Any]:
    """The differential against gold: each item marked `hit` (a gold core diagnosis listed as core),
    `listed` (a gold diagnosis otherwise), `wrong` (a KB condition not in gold) or `unmatched`; and the
    gold diagnoses, each with whether the differential lists it."""
    gold = {item["condition_id"]: item for item in score["gold"] or []}
    items = []
    for item in score["differential"] or []:
        condition = item["condition_id"]
        if condition is None:
            kind = "unmatched"
        elif condition not in gold:
            kind = "wrong"
        elif gold[condition]["core"] and item["core"]:
            kind = "hit"
        else:
            kind = "listed"
        items.append({**item, "kind": kind})
    listed = {item["condition_id"] for item in items}
    return {
        "differential": items,
        "gold": [{**item, "listed": item["condition_id"] in listed} for item in score["gold"] or []],
    }


STAGE_ORDER = {"history": 0, "diagnosis": 1, "treatment": 2, "follow_up": 3}


def message_order(row: dict[str, Any]) -> tuple[int, int, int]:
    """Where a message sits in its episode: stage, turn, then the speaker of the turn first (the agent
    asks in the history stage; the patient raises each follow-up)."""
    first = "patient" if row["stage"] == "follow_up" else "agent"
    return STAGE_ORDER.get(row["stage"], len(STAGE_ORDER)), row["turn"], int(row["role"] != first)


def browser_data(run: RunData) -> dict[str, Any]:
    """The browser's data: one entry per episode with its messages in order.

    A message is [turn, role, stage, status, text, template, revealed AIU ids, deflected]; models and
    cases are indexes into the lists of the same names. Each episode also carries its first plan with the
    critic's violations, and its follow-ups (answer, revision, violations after, verdict).
    """
    messages: defaultdict[tuple[str, str, int], list[list[Any]]] = defaultdict(list)
    for row in sorted(run.messages, key=lambda r: (*_episode_key(r), *message_order(r))):
        messages[_episode_key(row)].append(
            [
                row["turn"],
                row["role"],
                row["stage"],
                row["status"],
                row["text"],
                row["template"],
                list(row["revealed"] or []),
                bool(row["deflected"]),
            ]
        )
    cases = sorted({row["case_id"] for row in run.scores})
    episodes = [
        {
            "model": run.models.index(row["model"]),
            "case": cases.index(row["case_id"]),
            "epoch": row["epoch"],
            "status": row["status"],
            "department": row["department"],
            "difficulty": row["difficulty"],
            "questions": row["questions"],
            "diagnosis_parse": row["diagnosis_parse"],
            "mni_target": list(row["mni_target"] or []),
            "plan_parse": row["plan_parse"],
            "revisions_unparseable": row["revisions_unparseable"],
            "parse_errors": list(row["parse_errors"] or []),
            "metrics": {name: row[name] for name in (*PRIMARY_METRICS, "composite")},
            "error": row["error"],
            **differential_entry(row),
            "plan": list(row["plan"] or []),
            "plan_advice": row["plan_advice"],
            "violations": list(row["violations"] or []),
            "follow_ups": list(row["follow_ups"] or []),
            "messages": messages[_episode_key(row)],
        }
        for row in sorted(run.scores, key=lambda r: (run.models.index(r["model"]), r["case_id"], r["epoch"]))
    ]
    return {"models": run.models, "cases": cases, "episodes": episodes}


# --- tasks ---------------------------------------------------------------------------------------------


@task(name="build-consult-report", cache_policy=NO_CACHE)
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
            ("stats_mni_coverage", stats.mni_coverage),
            ("stats_episodes", stats.episodes),
            ("stats_primary", stats.primary),
        )
    }
    figures = draw_figures(stats_paths, out)
    tables = build_tables(metrics)
    (out / "report.md").write_text(render_markdown(metrics, tables, list(figures)))
    (out / "index.html").write_text(render_html(metrics, tables, figures, browser_data(run)))
    return str(out)


@task(name="publish-consult-report-artifacts", cache_policy=NO_CACHE)
def publish_report_artifacts(report_dir: str) -> list[str]:
    """A stored report -> one Prefect table artifact per table and a Markdown summary; returns their keys."""
    out = Path(report_dir)
    metrics = json.loads((out / "metrics.json").read_text())
    prefix = report_prefix("consult-report", [run["run_id"] for run in metrics["runs"]], out)
    return publish_report(
        build_tables(metrics), (out / "report.md").read_text(), prefix, run_summary(metrics)
    )
