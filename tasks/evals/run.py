"""One evaluation run: its plan (sample x models x conditions), outputs, manifest and dry-run estimate.

RUN_DIR holds `ledger/` (every call, see tasks/llm/ledger.py), `responses.parquet`, `judgments.parquet`
and `manifest.json`. The parquet files are rewritten from the calls on every run, so a re-run of the
same command into the same RUN_DIR completes them without repeating any successful call.
"""

import json
import os
import platform
import subprocess
from collections import Counter, defaultdict
from datetime import UTC, datetime
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
import tiktoken
from prefect import task
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.futures import PrefectFuture, as_completed
from pydantic import BaseModel

from tasks.benchmarks.threadmed import baselines
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, RESPONSES
from tasks.benchmarks.threadmed.scorer import DEFAULT_RUBRIC, REASK_PROMPT, JudgeJob, render_judge_messages
from tasks.benchmarks.threadmed.solver import InferenceJob, turn_messages
from tasks.core.provenance import artifact_key
from tasks.data.contracts import Contract
from tasks.evals.config import (
    EvaluationSettings,
    ModelSpec,
    answered_dir,
    dataset_fingerprint,
    load_sample,
    run_id_for,
)
from tasks.llm.call import token_costs
from tasks.llm.errors import fix_for, is_permanent
from tasks.llm.ledger import CallLedger
from tasks.llm.prompts import PromptTemplate, load_prompt
from tasks.llm.request import CallOptions

PACKAGES = ("litellm", "prefect", "pyarrow", "pydantic", "rapidfuzz", "openai", "httpx")
OVERLAP_JUDGE_NOTE = f"{baselines.OVERLAP_JUDGE} scores are a {baselines.OVERLAP_JUDGE_LABEL}."


class EvaluationPlan(BaseModel):
    """The jobs of a run: `judge_jobs[i]` judges the answers of `inference_jobs[i]`."""

    run_id: str
    run_dir: Path
    dataset_fingerprint: str
    inference_jobs: list[InferenceJob]
    judge_jobs: list[JudgeJob]
    prompts: dict[str, PromptTemplate]

    @property
    def ledger_dir(self) -> Path:
        return self.run_dir / "ledger"


def build_plan(settings: EvaluationSettings) -> EvaluationPlan:
    """Draw the sample and pair it with every model and condition. Reads the dataset; calls nothing."""
    config = settings.config
    fingerprint = dataset_fingerprint(settings.dataset_dir)
    run_id = run_id_for(config, fingerprint)
    rubric, reask = load_prompt(config.judge.rubric or DEFAULT_RUBRIC), load_prompt(REASK_PROMPT)
    judge = config.resolved(config.judge)
    models = [_with_corpus(config.resolved(m), settings.dataset_dir) for m in config.models]
    # Thread-major order: the tasks running at any moment are spread over every model and provider.
    cases = [
        (thread, model, condition)
        for thread in load_sample(settings.dataset_dir, config.sample)
        for model in models
        for condition in config.conditions
    ]
    inference = [
        InferenceJob(run_id=run_id, model=m, options=config.call_options(m), condition=c, thread=t)
        for t, m, c in cases
    ]
    judging = [
        JudgeJob(
            run_id=run_id,
            judge=judge,
            options=config.call_options(judge),
            rubric=rubric,
            reask=reask,
            model_name=m.name,
            condition=c,
            thread=t,
        )
        for t, m, c in cases
    ]
    return EvaluationPlan(
        run_id=run_id,
        run_dir=settings.run_dir,
        dataset_fingerprint=fingerprint,
        inference_jobs=inference,
        judge_jobs=judging,
        prompts={p.version: p for p in (rubric, reask)},
    )


def _with_corpus(spec: ModelSpec, dataset_dir: Path) -> ModelSpec:
    """The retrieval baseline answers from the training split of the dataset under evaluation."""
    if spec.model != baselines.RETRIEVAL or "corpus_dir" in spec.params:
        return spec
    corpus = str(answered_dir(dataset_dir).resolve())
    return spec.model_copy(update={"params": {**spec.params, "corpus_dir": corpus}})


@task(name="plan-evaluation", cache_policy=NO_CACHE)
def plan_evaluation(settings: EvaluationSettings) -> EvaluationPlan:
    """Dataset + config → the run's jobs (reads the dataset parquet files)."""
    return build_plan(settings)


class GroupSummary(BaseModel):
    """Counts and costs of one model in one condition."""

    model: str
    condition: str
    responses: dict[str, int]
    judgments: dict[str, int]
    mean_score: float | None
    inference_cost_usd: float
    judge_cost_usd: float


class RunSummary(BaseModel):
    run_id: str
    run_dir: Path
    groups: list[GroupSummary]
    failed_calls: dict[str, int]
    failure_examples: dict[str, str] = {}  # per failure kind, one error as recorded (the provider's words)

    def markdown(self) -> str:
        """The run's outcome for people: whether calls failed (an example of each kind), one row per group."""
        outcome = self.failure_message() if self.failed_calls else "Every call succeeded."
        lines = [f"# Evaluation run {self.run_id}", "", f"**{outcome}**", ""]
        if self.failure_examples:
            lines += [f"- {line}" for line in self.failure_lines()] + [""]
        lines += [
            "| model | condition | answered | answer failed | not run | judged | unparseable | judge failed"
            " | mean (0-100) | USD |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for g in self.groups:
            mean = "-" if g.mean_score is None else f"{g.mean_score:.1f}"
            counts = [g.responses.get(s, 0) for s in ("ok", "failed", "not_run")]
            counts += [g.judgments.get(s, 0) for s in ("ok", "unparseable", "failed")]
            cost = g.inference_cost_usd + g.judge_cost_usd
            lines.append(
                f"| {g.model} | {g.condition} | {' | '.join(map(str, counts))} | {mean} | {cost:.4f} |"
            )
        return "\n".join(lines)

    def failure_message(self) -> str:
        """What failed and what will finish the run: a re-run for transient failures, a fix for the others."""
        kinds = ", ".join(f"{_label(kind)} {n}" for kind, n in sorted(self.failed_calls.items()))
        total = sum(self.failed_calls.values())
        failed = f"{total} {'call' if total == 1 else 'calls'} failed: {kinds}"
        kept = "(completed calls are kept)"
        fixes = "; ".join(f"[{_label(k)}] {fix_for(k)}" for k in sorted(self.failed_calls) if is_permanent(k))
        transient = [_label(k) for k in sorted(self.failed_calls) if not is_permanent(k)]
        if not fixes:
            return f"{failed}; re-run the same command to finish {kept}"
        if not transient:
            advice = f"A re-run alone will not help; fix first: {fixes}. Then re-run the same command {kept}"
            return f"{failed}. {advice}"
        return (
            f"{failed}. Re-run the same command to retry the {' and '.join(transient)} failures {kept};"
            f" the others need a fix first: {fixes}"
        )

    def failure_lines(self) -> list[str]:
        """One line per failure kind: its count and one of its errors."""
        return [
            f"{_label(kind)} ({self.failed_calls.get(kind, 0)}), e.g. {error}"
            for kind, error in sorted(self.failure_examples.items())
        ]


def _label(kind: str) -> str:
    return kind.replace("_", " ")


def summarize(
    run_id: str, run_dir: Path, responses: list[dict[str, Any]], judgments: list[dict[str, Any]]
) -> RunSummary:
    """Per model and condition: rows by status, mean judged score (0-100, unparseable excluded), costs."""
    by_group: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in responses:
        by_group[(row["model"], row["condition"])]["responses"].append(row)
    for row in judgments:
        by_group[(row["model"], row["condition"])]["judgments"].append(row)
    groups = []
    for (model, condition), rows in sorted(by_group.items()):
        scores = [j["score"] for j in rows["judgments"] if j["parse_status"] == "ok"]
        groups.append(
            GroupSummary(
                model=model,
                condition=condition,
                responses=dict(Counter(r["status"] for r in rows["responses"])),
                judgments=dict(Counter(j["parse_status"] for j in rows["judgments"])),
                mean_score=100 * sum(scores) / len(scores) if scores else None,
                inference_cost_usd=sum(r.get("cost_usd") or 0.0 for r in rows["responses"]),
                judge_cost_usd=sum(j.get("cost_usd") or 0.0 for j in rows["judgments"]),
            )
        )
    # JUDGMENTS has no error_class column: a failed judgment's error is "<kind>: <error>".
    failures = [(r["error_class"], r["error"]) for r in responses if r["status"] == "failed"]
    failures += [j["error"].split(": ", 1) for j in judgments if j["parse_status"] == "failed"]
    examples: dict[str, str] = {}
    for kind, error in failures:
        examples.setdefault(kind, error)
    return RunSummary(
        run_id=run_id,
        run_dir=run_dir,
        groups=groups,
        failed_calls=dict(Counter(kind for kind, _ in failures)),
        failure_examples=examples,
    )


def follow_progress(futures: list[PrefectFuture], run_id: str) -> None:
    """Wait for the thread tasks, keeping a progress artifact of the share done (about 50 updates)."""
    artifact = create_progress_artifact(
        progress=0.0,
        key=artifact_key("evaluation-progress", run_id),
        description=f"Run {run_id}: thread tasks done",
    )
    step = max(1, len(futures) // 50)
    for done, _ in enumerate(as_completed(futures), start=1):
        if done % step == 0 or done == len(futures):
            update_progress_artifact(artifact_id=artifact, progress=100 * done / len(futures))


@task(name="publish-run-summary", cache_policy=NO_CACHE)
def publish_run_summary(summary: RunSummary) -> None:
    """The run's counts, costs and failures -> a Markdown artifact (its key names the run)."""
    create_markdown_artifact(
        key=artifact_key("evaluation-summary", summary.run_id),
        markdown=summary.markdown(),
        description="Calls answered, failed and judged per model and condition",
    )


@task(name="write-run-outputs", cache_policy=NO_CACHE)
def write_run_outputs(
    plan: EvaluationPlan, responses: list[list[dict[str, Any]]], judgments: list[list[dict[str, Any]]]
) -> RunSummary:
    """Per-thread rows → RUN_DIR/responses.parquet and judgments.parquet (atomic); returns the summary."""
    response_rows = [row for rows in responses for row in rows]
    judgment_rows = [row for rows in judgments for row in rows]
    write_table(response_rows, RESPONSES, plan.run_dir / "responses.parquet")
    write_table(judgment_rows, JUDGMENTS, plan.run_dir / "judgments.parquet")
    return summarize(plan.run_id, plan.run_dir, response_rows, judgment_rows)


def write_table(rows: list[dict[str, Any]], contract: Contract, path: Path) -> None:
    table = pa.Table.from_pylist(rows, schema=contract.schema).sort_by(
        [(k, "ascending") for k in contract.key]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


@task(name="write-manifest", cache_policy=NO_CACHE)
def write_manifest(settings: EvaluationSettings, plan: EvaluationPlan, summary: RunSummary) -> Path:
    """Settings, dataset fingerprint, prompt versions and hashes, versions, commit → RUN_DIR/manifest.json."""
    config = settings.config
    notes = [OVERLAP_JUDGE_NOTE] if config.judge.model == baselines.OVERLAP_JUDGE else []
    manifest = {
        "run_id": plan.run_id,
        "written_at": datetime.now(UTC).isoformat(),
        "dataset": {"dir": str(settings.dataset_dir.resolve()), "fingerprint": plan.dataset_fingerprint},
        "config": config.model_dump(mode="json"),
        "sent": _sent_settings(plan),
        "prompts": {version: {"sha256": p.sha256} for version, p in plan.prompts.items()},
        "packages": {name: metadata.version(name) for name in PACKAGES},
        "python": platform.python_version(),
        "git": git_state(),
        "threads": len({job.thread.thread_id for job in plan.inference_jobs}),
        "summary": summary.model_dump(mode="json"),
        "notes": notes,
    }
    path = plan.run_dir / "manifest.json"
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    os.replace(tmp, path)
    return path


def _sent_settings(plan: EvaluationPlan) -> dict[str, Any]:
    """Model string, endpoint and params exactly as sent, per model name and for the judge."""
    fields = {"model", "api_base", "params"}
    specs = {job.model.name: job.model for job in plan.inference_jobs}
    judges = {job.judge.name: job.judge for job in plan.judge_jobs}
    return {
        "models": {name: spec.model_dump(mode="json", include=fields) for name, spec in specs.items()},
        "judge": {name: spec.model_dump(mode="json", include=fields) for name, spec in judges.items()},
    }


def git_state() -> dict[str, Any]:
    """The commit of the code that ran, and whether the tree had uncommitted changes (None outside git)."""
    repo = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain")
    return {"commit": git("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


class CallEstimate(BaseModel):
    """What --dry-run expects one model (or the judge) to cost; calls already in the ledger are free."""

    model: str
    role: Literal["inference", "judge"]
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base")


@lru_cache(maxsize=65536)
def count_tokens(text: str) -> int:
    """cl100k tokens: the paper's measure, and a fair estimate for any model."""
    return len(_encoding().encode(text, disallowed_special=()))


def estimate_plan(plan: EvaluationPlan) -> list[CallEstimate]:
    """Calls still to make, their tokens and dollars, per model and for the judge. Calls nothing.

    Unknown answers (not in the ledger yet) count `estimated_reply_tokens`; judge re-asks are not counted.
    """
    ledger = CallLedger(plan.ledger_dir)
    estimates: dict[tuple[str, str], CallEstimate] = {}
    specs: dict[tuple[str, str], tuple[ModelSpec, CallOptions]] = {}
    for job, judge_job in zip(plan.inference_jobs, plan.judge_jobs, strict=True):
        model_key, judge_key = (job.model.name, "inference"), (judge_job.judge.name, "judge")
        model = estimates.setdefault(model_key, CallEstimate(model=job.model.name, role="inference"))
        judge = estimates.setdefault(judge_key, CallEstimate(model=judge_job.judge.name, role="judge"))
        specs[model_key], specs[judge_key] = (job.model, job.options), (judge_job.judge, judge_job.options)
        for turn, answer in _walk_answers(job, ledger, model):
            _estimate_judging(judge_job, turn, answer, ledger, judge)
    for key, estimate in estimates.items():
        spec, options = specs[key]
        model_for_price = options.price_model or spec.model
        costs = token_costs(
            model_for_price, estimate.prompt_tokens, estimate.completion_tokens, options.prices
        )
        estimate.cost_usd = None if costs is None else sum(costs)
    return list(estimates.values())


def _walk_answers(
    job: InferenceJob, ledger: CallLedger, estimate: CallEstimate
) -> list[tuple[int, str | None]]:
    """Each turn with its answer from the ledger, or None once an answer is unknown; counts the calls."""
    answers: list[str] = []
    turns: list[tuple[int, str | None]] = []
    for turn in job.turns:
        known = job.condition == "oracle" or len(answers) == turn
        messages = turn_messages(job, turn, answers) if known else None
        record = ledger.lookup(job.model.request(messages).key()) if messages else None
        if record is not None:
            estimate.cached += 1
            answers.append(record.text or "")
            turns.append((turn, record.text))
            continue
        estimate.calls += 1
        estimate.prompt_tokens += _prompt_tokens(job, turn, answers)
        estimate.completion_tokens += job.model.estimated_reply_tokens
        turns.append((turn, None))
    return turns


def _prompt_tokens(job: InferenceJob, turn: int, known_answers: list[str]) -> int:
    """Questions so far plus the history: physician answers (oracle) or own answers, known or assumed."""
    questions = sum(count_tokens(q) for q in job.thread.questions[: turn + 1])
    if job.condition == "oracle":
        return questions + sum(count_tokens(a) for a in job.thread.answers[:turn])
    assumed = (turn - len(known_answers)) * job.model.estimated_reply_tokens
    return questions + sum(count_tokens(a) for a in known_answers) + assumed


def _estimate_judging(
    job: JudgeJob, turn: int, answer: str | None, ledger: CallLedger, estimate: CallEstimate
) -> None:
    if answer is not None:
        messages = render_judge_messages(
            job.rubric, job.thread.questions[turn], job.thread.answers[turn], answer
        )
        if ledger.lookup(job.judge.request(messages, job.rubric.version).key()) is not None:
            estimate.cached += 1
            return
    placeholder = render_judge_messages(job.rubric, job.thread.questions[turn], job.thread.answers[turn], "")
    estimate.calls += 1
    estimate.prompt_tokens += sum(count_tokens(m["content"]) for m in placeholder) + (
        count_tokens(answer) if answer is not None else job.judge.estimated_reply_tokens
    )
    estimate.completion_tokens += job.judge.estimated_reply_tokens
