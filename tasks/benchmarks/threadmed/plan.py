"""ThReadMed-QA's run plan: every sampled thread x model x condition, answered then judged; its dry run."""

from pathlib import Path
from typing import Any

from tasks.benchmarks.threadmed import baselines
from tasks.benchmarks.threadmed.cases import (
    answered_dir,
    dataset_fingerprint,
    folder_fingerprint,
    load_sample,
)
from tasks.benchmarks.threadmed.scorer import (
    DEFAULT_RUBRIC,
    REASK_PROMPT,
    JudgeJob,
    is_judged,
    judge_replies,
    render_judge_messages,
)
from tasks.benchmarks.threadmed.solver import InferenceJob, ask_turns
from tasks.core.gc_pause import garbage_collection_paused
from tasks.core.preflight import UserError
from tasks.core.tokens import count_tokens
from tasks.evals.config import EvaluationSettings, ModelSpec
from tasks.evals.estimate import CallEstimate, EstimateTally
from tasks.evals.plan import Job, RunPlan, run_id_for
from tasks.llm.ledger import CallLedger
from tasks.llm.prompts import load_prompt

ThreadmedJob = Job[InferenceJob, JudgeJob]
ThreadmedPlan = RunPlan[InferenceJob, JudgeJob]
OVERLAP_JUDGE_NOTE = f"{baselines.OVERLAP_JUDGE} scores are a {baselines.OVERLAP_JUDGE_LABEL}."


def build_plan(settings: EvaluationSettings) -> ThreadmedPlan:
    """Draw the sample and pair it with every model and condition. Reads the dataset; calls nothing."""
    config = settings.config
    fingerprint = dataset_fingerprint(settings.dataset_dir)
    run_id = run_id_for(config, fingerprint)
    rubric, reask = load_prompt(config.judge.rubric or DEFAULT_RUBRIC), load_prompt(REASK_PROMPT)
    judge = config.resolved(config.judge)
    models = [_with_corpus(config.resolved(m), settings.dataset_dir) for m in config.models]
    threads = load_sample(settings.dataset_dir, config.sample)
    # One options object per model, shared by its jobs (built once, serialised once for their digests).
    model_options = [(model, config.call_options(model)) for model in models]
    judge_options = config.call_options(judge)
    # Thread-major order: the tasks running at any moment are spread over every model and provider.
    with garbage_collection_paused():  # 10^5 jobs, no cycle among them: the collector would rescan them all
        jobs = [
            ThreadmedJob(
                solve=InferenceJob(
                    run_id=run_id,
                    model=model,
                    options=options,
                    condition=condition,
                    thread=thread,
                ),
                score=JudgeJob(
                    run_id=run_id,
                    judge=judge,
                    options=judge_options,
                    rubric=rubric,
                    reask=reask,
                    model_name=model.name,
                    condition=condition,
                    thread=thread,
                    truncated=config.truncated,
                ),
            )
            for thread in threads
            for model, options in model_options
            for condition in config.conditions
        ]
    return ThreadmedPlan(
        run_id=run_id,
        run_dir=settings.run_dir,
        dataset_dir=settings.dataset_dir,
        dataset_fingerprint=fingerprint,
        jobs=jobs,
        prompts={p.version: p.sha256 for p in (rubric, reask)},
        judge_rubric=rubric.version,
        manifest_facts={"sent": _sent_settings(models, judge), "threads": len(threads)},
        notes=[OVERLAP_JUDGE_NOTE] if config.judge.model == baselines.OVERLAP_JUDGE else [],
    )


def _with_corpus(spec: ModelSpec, dataset_dir: Path) -> ModelSpec:
    """The retrieval baseline answers from the training split of the dataset under evaluation (or of the
    `corpus_dir` its params name), and its answers are keyed by that corpus's content (`corpus_sha256`):
    a dataset rebuilt in place is another corpus, whose answers are never taken from the ledger."""
    if spec.model != baselines.RETRIEVAL:
        return spec
    corpus = str(spec.params.get("corpus_dir") or answered_dir(dataset_dir).resolve())
    try:
        sha256 = folder_fingerprint(Path(corpus))
    except OSError as error:
        raise UserError(
            f"{baselines.RETRIEVAL}'s corpus_dir {corpus} is no dataset folder ({error.strerror}: it needs "
            "threads.parquet and qa_pairs.parquet)",
            "--config",
        ) from None
    return spec.model_copy(update={"params": {**spec.params, "corpus_dir": corpus, "corpus_sha256": sha256}})


def _sent_settings(models: list[ModelSpec], judge: ModelSpec) -> dict[str, Any]:
    """Model string, endpoint and params exactly as sent, per model name and for the judge."""
    fields = {"model", "api_base", "params"}
    return {
        "models": {spec.name: spec.model_dump(mode="json", include=fields) for spec in models},
        "judge": {judge.name: judge.model_dump(mode="json", include=fields)},
    }


def estimate_job(job: ThreadmedJob, ledger: CallLedger, tally: EstimateTally) -> None:
    """Count one job's answer and judge calls still to make, the judge's re-asks at most (see
    `_estimate_judging`).

    Unknown answers (not in the ledger yet) count `estimated_reply_tokens`.
    """
    answers = tally.of(job.solve.model, job.solve.options, "inference")
    judgments = tally.of(job.score.judge, job.score.options, "judge")
    for turn, answer in _walk_answers(job.solve, ledger, answers):
        _estimate_judging(job.score, turn, answer, ledger, judgments)


def estimate_scoring(
    job: JudgeJob, solved: list[dict[str, Any]], ledger: CallLedger, tally: EstimateTally
) -> None:
    """Count the judge calls still to make over answers already given (a re-judged run's response rows), the
    judge's re-asks at most."""
    judgments = tally.of(job.judge, job.options, "judge")
    for row in solved:
        if is_judged(job, row):
            _estimate_judging(job, row["turn"], row["response"], ledger, judgments)


def _walk_answers(
    job: InferenceJob, ledger: CallLedger, estimate: CallEstimate
) -> list[tuple[int, str | None]]:
    """Each turn to judge with its answer from the ledger, or None once an answer is unknown; counts the
    calls. A turn whose reply the provider withheld (final: CallLedger.find) has no answer to judge, and in
    the baseline condition the turns after it are not run (answer_thread)."""
    recorded = {
        turn: record
        for turn, record in ask_turns(job, lambda messages: ledger.find(job.model.request(messages)))
        if record is not None
    }
    withheld = [turn for turn, record in recorded.items() if record.status != "ok"]
    answers: list[str] = []
    turns: list[tuple[int, str | None]] = []
    for turn in job.turns:
        if turn in recorded:
            estimate.cached += 1
            if recorded[turn].status == "ok":
                answers.append(recorded[turn].text or "")
                turns.append((turn, recorded[turn].text))
            continue
        if withheld and job.condition == "baseline":
            continue
        estimate.calls += 1
        estimate.prompt_tokens += _prompt_tokens(job, turn, answers)
        estimate.completion_tokens += job.model.assumed_reply_tokens
        turns.append((turn, None))
    return turns


def _prompt_tokens(job: InferenceJob, turn: int, known_answers: list[str]) -> int:
    """Questions so far plus the history: physician answers (oracle) or own answers, known or assumed."""
    questions = sum(count_tokens(q) for q in job.thread.questions[: turn + 1])
    if job.condition == "oracle":
        return questions + sum(count_tokens(a) for a in job.thread.answers[:turn])
    assumed = (turn - len(known_answers)) * job.model.assumed_reply_tokens
    return questions + sum(count_tokens(a) for a in known_answers) + assumed


def _estimate_judging(
    job: JudgeJob, turn: int, answer: str | None, ledger: CallLedger, estimate: CallEstimate
) -> None:
    """Count one turn's judge calls as `judge_turn` would make them: those the ledger holds are cached; from
    the first it lacks (all of them for an answer not given yet), every call the judge may still need, the
    first ask and each re-ask (`max_reasks`): an upper bound, as the other benchmarks' dry runs give."""
    attempts = job.judge.max_reasks + 1
    found = 0
    if answer is not None:
        replies = list(judge_replies(job, turn, answer, ledger.find))
        found = sum(record is not None for record, _ in replies)
        estimate.cached += found
        if replies[-1][0] is not None:  # a valid score, or the last re-ask: nothing left to ask
            return
    placeholder = render_judge_messages(job.rubric, job.thread.questions[turn], job.thread.answers[turn], "")
    first_prompt = sum(count_tokens(m["content"]) for m in placeholder) + (
        count_tokens(answer) if answer is not None else job.judge.assumed_reply_tokens
    )
    # Each re-ask sends the conversation so far, the judge's reply and the re-ask prompt added to it.
    reask_growth = job.judge.assumed_reply_tokens + count_tokens(job.reask.render("user"))
    for attempt in range(found, attempts):
        estimate.calls += 1
        estimate.prompt_tokens += first_prompt + attempt * reask_growth
        estimate.completion_tokens += job.judge.assumed_reply_tokens
