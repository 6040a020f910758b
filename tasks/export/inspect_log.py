"""An exported run as Inspect eval logs (https://inspect.aisi.org.uk/eval-logs.html): one `.eval` file per
model, built from inspect_ai's own log types and written by its own `.eval` recorder, so `inspect view`, its
`read_eval_log` and its dataframe API (`samples_df`) read our runs as they read their own.

The mapping: the benchmark is the task, each export sample an `EvalSample` (its input messages, the whole
conversation, the model's last reply as the output with its usage and stop reason, the score with the judge's
explanation, the thread or case, turn, condition and epoch as metadata, token usage by model and by role);
the other roles (judge, simulated patient) are the spec's model roles; the results are the run's scores as
the benchmark's report computes them (the mean of the headline score over scored samples, per condition
where the benchmark has conditions; the consultation's composite and stage scores). Inspect numbers epochs
from 1: a sample's `epoch` is the run's epoch + 1, and `metadata["epoch"]` keeps the run's own.
A score that was not given is Inspect's unscored sentinel (`Score.unscored`, NaN, skipped by its metrics)
with the reason; a failed answer is the sample's `error`.

The recorder is driven as `write_eval_log` drives it, but flushed every `SAMPLES_PER_FLUSH` samples, as a
live Inspect run flushes: `write_eval_log` buffers a whole log before its first flush, and that buffer
filters every sample it holds each time one is added, so its time grows with the square of a log's samples
(a ThReadMed model at a million calls, 25,002 samples: 1,487 s; flushed every 500: 107 s).

inspect_ai is an optional dependency (the `inspect` extra): only this module imports it.
"""

import asyncio
import re
from functools import partial
from pathlib import Path

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalRevision,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    condense_sample,
)
from inspect_ai.log._recorders.eval import EvalRecorder  # its writer, without write_eval_log's one buffer
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    ModelConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import Score

from tasks.core.files import write_atomic
from tasks.export.samples import ExportedRun, ExportSample, Message, ModelRole, RoleUsage

# The run's finish reasons (litellm's, OpenAI's words) as Inspect's stop reasons.
STOP_REASONS = {
    "stop": "stop",
    "length": "max_tokens",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
}
MESSAGE_TYPES: dict[str, type[ChatMessage]] = {
    "system": ChatMessageSystem,
    "user": ChatMessageUser,
    "assistant": ChatMessageAssistant,
}
MODEL_ROLE = "model"  # the usage key of the model under test in ExportSample.usage
# Samples buffered between two flushes of a log: each flush copies the log so far and filters what it holds,
# so more flushes cost copies and fewer cost filtering; 500 was the fastest of 500, 1,000 and 2,500 (57 s for
# 25,000 synthetic samples, against 62 s and 88 s).
SAMPLES_PER_FLUSH = 500


def chat_messages(messages: list[Message]) -> list[ChatMessage]:
    return [MESSAGE_TYPES[m.role](content=m.content) for m in messages]


def model_usage(usage: RoleUsage) -> ModelUsage:
    return ModelUsage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        total_cost=usage.cost_usd,
    )


def sample_score(sample: ExportSample) -> Score:
    """The sample's scores as one Inspect score: the value alone, or every value by name when there are
    several (the headline first); unscored when the headline score was not given."""
    metadata: dict[str, object] = {"status": sample.status}
    if sample.score is None:
        # The other scores a sample may still have (a consultation's stages) are kept beside the reason.
        return Score.unscored(
            reason=sample.unscored,
            answer=sample.output,
            explanation=sample.explanation,
            metadata={**metadata, "scores": sample.scores},
        )
    value = sample.score if len(sample.scores) == 1 else sample.scores
    return Score(value=value, answer=sample.output, explanation=sample.explanation, metadata=metadata)


def eval_sample(sample: ExportSample, model: str, scorer: str) -> EvalSample:
    """One export sample of `model` (its litellm model string) as an Inspect sample."""
    answer = sample.usage.get(MODEL_ROLE)
    output = ModelOutput.from_content(
        model=model,
        content=sample.output or "",
        stop_reason=STOP_REASONS.get(sample.finish_reason or "", "unknown"),  # type: ignore[arg-type]
        error=sample.error,
    )
    output.usage = model_usage(answer) if answer else None
    by_model: dict[str, ModelUsage] = {}
    for role, usage in sample.usage.items():
        called = model if role == MODEL_ROLE else usage.model
        by_model[called] = by_model.get(called, ModelUsage()) + model_usage(usage)
    return EvalSample(
        id=sample.sample_id,
        epoch=sample.epoch + 1,
        input=chat_messages(sample.input),
        target=sample.target,
        messages=chat_messages(sample.messages),
        output=output,
        scores={scorer: sample_score(sample)},
        metadata={**sample.metadata, "status": sample.status},
        model_usage=by_model,
        role_usage={role: model_usage(u) for role, u in sample.usage.items() if role != MODEL_ROLE},
        started_at=sample.started_at.isoformat() if sample.started_at else None,
        completed_at=sample.completed_at.isoformat() if sample.completed_at else None,
        error=EvalError(message=sample.error, traceback="", traceback_ansi="") if sample.error else None,
    )


def results(run: ExportedRun, model: str, samples: list[ExportSample]) -> EvalResults:
    """The model's run scores as its benchmark's report computes them (`ExportedRun.results`: the mean of a
    headline score, per condition where there are conditions; the consultation's composite and stage
    scores), each one undefined over the run named in the score's metadata; the run summary's groups of this
    model in the results' metadata."""
    metrics, undefined = {}, []
    for score in run.results.by_model.get(model, []):
        key = score.name if score.condition is None else f"{score.name} {score.condition}"
        if score.value is None:
            undefined.append(key)
            continue
        metrics[key] = EvalMetric(
            name=score.name if score.condition is None else score.condition,
            group=None if score.condition is None else f"{score.name} by condition",
            value=score.value,
        )
    scored = sum(1 for sample in samples if sample.score is not None)
    summary = [group for group in run.summary.get("groups", []) if group["model"] == model]
    return EvalResults(
        total_samples=len(samples),
        completed_samples=sum(1 for sample in samples if sample.error is None),
        scores=[
            EvalScore(
                name=run.scorer,
                scorer=run.scorer,
                scored_samples=scored,
                unscored_samples=len(samples) - scored,
                metrics=metrics,
                metadata={
                    "score": run.score_name,
                    "results": run.results.note,
                    **({"undefined": undefined} if undefined else {}),
                },
            )
        ],
        metadata={"run_summary": summary} if summary else None,
    )


def role_config(role: ModelRole) -> ModelConfig:
    return ModelConfig(model=role.model, base_url=role.api_base, config=generate_config(role))


def generate_config(role: ModelRole) -> GenerateConfig:
    """The role's params that Inspect's generate config names (the rest stay in model_args)."""
    known = set(GenerateConfig.model_fields)
    return GenerateConfig(**{k: v for k, v in role.params.items() if k in known})


def eval_log(run: ExportedRun, role: ModelRole) -> EvalLog:
    """The Inspect log of one model of the run."""
    samples = run.samples.get(role.name, [])
    inspect_samples = [eval_sample(s, role.model, run.scorer) for s in samples]
    git = run.manifest.get("git") or {}
    summary = run.summary
    failed = bool(summary.get("failed_calls") or summary.get("failed_jobs"))
    started = [s.started_at for s in samples if s.started_at]
    completed = [s.completed_at for s in samples if s.completed_at]
    totals: dict[str, ModelUsage] = {}
    roles: dict[str, ModelUsage] = {}
    for sample in inspect_samples:
        for name, usage in sample.model_usage.items():
            totals[name] = totals.get(name, ModelUsage()) + usage
        for name, usage in sample.role_usage.items():
            roles[name] = roles.get(name, ModelUsage()) + usage
    return EvalLog(
        status="error" if failed else "success",
        eval=EvalSpec(
            eval_id=f"{run.benchmark}-{run.run_id}-{slug(role.name)}",  # samples_df tells logs apart by it
            run_id=run.run_id,
            created=run.created.isoformat(),
            task=run.benchmark,
            task_display_name=run.title,
            task_id=f"{run.benchmark}-{run.run_id}",
            dataset=EvalDataset(
                name=run.benchmark,
                location=str(run.dataset_dir),
                samples=len({s.item_id for s in samples}),
            ),
            model=role.model,
            model_generate_config=generate_config(role),
            model_base_url=role.api_base,
            model_args={"name": role.name},
            model_roles={name: role_config(other) for name, other in run.roles.items()} or None,
            config=EvalConfig(epochs=max((s.epoch for s in samples), default=0) + 1),
            revision=EvalRevision(type="git", origin="", commit=git["commit"], dirty=git.get("dirty"))
            if git.get("commit")
            else None,
            packages={k: v for k, v in (run.manifest.get("packages") or {}).items() if v},
            metadata={
                "benchmark": run.benchmark,
                "run_id": run.run_id,
                "run_dir": str(run.run_dir),
                "model_name": role.name,
                "dataset_fingerprint": run.dataset_fingerprint,
                "prompts": run.manifest.get("prompts", {}),
                "notes": run.manifest.get("notes", []),
            },
        ),
        results=results(run, role.name, samples) if samples else None,
        stats=EvalStats(
            started_at=min(started).isoformat() if started else "",
            completed_at=max(completed).isoformat() if completed else "",
            model_usage=totals,
            role_usage=roles,
        ),
        samples=inspect_samples,
    )


def slug(name: str) -> str:
    """A model name as a file-name part: letters, digits, dots and dashes (Inspect splits names at `_`)."""
    return re.sub(r"[^A-Za-z0-9.-]+", "-", name).strip("-")


def log_file_name(run: ExportedRun, role: ModelRole) -> str:
    """Inspect's `{timestamp}_{task}_{model}_{id}.eval` pattern, so its listing parses it without reading."""
    stamp = run.created.strftime("%Y-%m-%dT%H-%M-%S")
    return f"{stamp}_{run.benchmark}_{slug(role.name)}_{run.run_id}.eval"


def write_inspect_logs(run: ExportedRun, out_dir: Path) -> list[Path]:
    """One Inspect log per model of the run under `out_dir` -> their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for role in run.models:
        path = out_dir / log_file_name(run, role)
        paths.append(write_atomic(path, partial(_write_log, eval_log(run, role))))
    return paths


def _write_log(log: EvalLog, path: Path, samples_per_flush: int = SAMPLES_PER_FLUSH) -> None:
    asyncio.run(write_eval_file(log, path, samples_per_flush))


async def write_eval_file(log: EvalLog, path: Path, samples_per_flush: int) -> None:
    """`log` as an `.eval` file at `path`, as `write_eval_log` writes it (each sample condensed, then the
    header and results), flushed every `samples_per_flush` samples."""
    recorder = EvalRecorder(str(path.parent))
    await recorder.log_init(log.eval, str(path), clean=True)
    await recorder.log_start(log.eval, log.plan)
    for index, sample in enumerate(log.samples or [], start=1):
        await recorder.log_sample(log.eval, condense_sample(sample))
        if index % samples_per_flush == 0:
            await recorder.flush(log.eval)
    await recorder.log_finish(
        log.eval,
        log.status,
        log.stats,
        log.results,
        log.reductions,
        log.error,
        invalidated=log.invalidated,
        log_updates=log.log_updates,
        config_updates=log.config_updates,
    )
