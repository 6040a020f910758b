"""The consultation benchmark's run plan: every sampled case x agent x epoch, run then scored; its dry run."""

from datetime import UTC, datetime
from typing import Any

from tasks.benchmarks.consult.cases.case_set import case_set_fingerprint, load_sample
from tasks.benchmarks.consult.config import OFFLINE_JUDGE, ConsultConfig
from tasks.benchmarks.consult.judge import FollowUpJudge, judge_follow_ups
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.scorer import ScoreJob, episode_from_messages
from tasks.benchmarks.consult.solver import EpisodeJob, EpisodePrompts, SimulatorSettings, run_episode
from tasks.core.tokens import count_tokens
from tasks.evals.config import EvaluationSettings, ModelSpec
from tasks.evals.estimate import CallEstimate, EstimateTally
from tasks.evals.plan import Job, RunPlan, run_id_for
from tasks.llm.ledger import CallLedger, CallRecord
from tasks.llm.prompts import load_prompt
from tasks.llm.request import ChatRequest

ConsultJob = Job[EpisodeJob, ScoreJob]
ConsultPlan = RunPlan[EpisodeJob, ScoreJob]
ASSUMED_VERDICT = '{"correct": true}'
OFFLINE_JUDGE_NOTE = (
    f"FQR is judged by {OFFLINE_JUDGE.model}, an offline heuristic stand-in, not a clinical judgement."
)


def build_plan(settings: EvaluationSettings[ConsultConfig]) -> ConsultPlan:
    """Draw the sample and pair it with every agent and epoch. Reads the case set; calls nothing."""
    config, case_set_dir = settings.config, settings.dataset_dir
    fingerprint = case_set_fingerprint(case_set_dir)
    run_id = run_id_for(config, fingerprint)
    prompt = load_prompt(config.prompt_file())
    prompts = EpisodePrompts.from_template(prompt)
    simulator = SimulatorSettings(
        kb_version=config.kb_version,
        catalogue_version=config.policy_version,
        match_threshold=config.match_threshold,
        per_turn=config.per_turn,
    )
    judge_spec = config.resolved(config.judge)
    judge = FollowUpJudge(
        spec=judge_spec, options=config.call_options(judge_spec), rubric=load_prompt(config.judge_rubric())
    )
    agents = [config.resolved(m) for m in config.models]
    cases = load_sample(case_set_dir, config.sample)
    # Case-major order: the tasks running at any moment are spread over every agent and provider.
    jobs = [
        ConsultJob(
            solve=EpisodeJob(
                run_id=run_id,
                agent=agent,
                options=config.call_options(agent),
                prompts=prompts,
                simulator=simulator,
                max_questions=config.max_questions,
                max_reasks=config.max_reasks,
                diagnosis_match_threshold=config.diagnosis_match_threshold,
                case=case,
                epoch=epoch,
            ),
            score=ScoreJob(
                run_id=run_id,
                model=agent.name,
                case=case,
                epoch=epoch,
                kb_version=config.kb_version,
                policy_version=config.policy_version,
                gamma=config.gamma,
                diagnosis_match_threshold=config.diagnosis_match_threshold,
                judge=judge,
                truncated=config.truncated,
            ),
        )
        for case in cases
        for epoch in range(config.epochs)
        for agent in agents
    ]
    return ConsultPlan(
        run_id=run_id,
        run_dir=settings.run_dir,
        dataset_dir=case_set_dir,
        dataset_fingerprint=fingerprint,
        jobs=jobs,
        prompts={p.version: p.sha256 for p in (prompt, judge.rubric)},
        judge_rubric=judge.rubric.version,
        manifest_facts={"sent": _sent_settings(agents, judge_spec), "cases": len(cases)},
        notes=[OFFLINE_JUDGE_NOTE] if judge_spec.model == OFFLINE_JUDGE.model else [],
    )


def _sent_settings(agents: list[ModelSpec], judge: ModelSpec) -> dict[str, Any]:
    fields = {"model", "api_base", "params"}
    return {
        "models": {spec.name: spec.model_dump(mode="json", include=fields) for spec in agents},
        "judge": {judge.name: judge.model_dump(mode="json", include=fields)},
    }


class _NotInLedger(Exception):
    def __init__(self, request: ChatRequest) -> None:
        self.request = request


def estimate_job(job: ConsultJob, ledger: CallLedger, tally: EstimateTally) -> None:
    """Count one episode's agent and judge calls still to make, at most: the agent's replayed from the
    ledger up to its first unknown call, then assumed to ask every question and need every re-ask (later
    prompts grow by one assumed question and answer per turn); the judge's calls per follow-up, each re-ask
    too, at most."""
    episode = job.solve
    estimate = tally.of(episode.agent, episode.options, "agent")
    judging = tally.of(job.score.judge.spec, job.score.judge.options, "judge")
    made = 0

    def replay(request: ChatRequest) -> Any:
        nonlocal made
        record = ledger.find(request)
        if record is None:
            raise _NotInLedger(request)
        estimate.cached += 1
        made += 1
        return record

    try:
        rows = run_episode(episode, replay)
    except _NotInLedger as stop:
        prompt = sum(count_tokens(str(m["content"])) for m in stop.request.messages)
    else:
        estimate_scoring(job.score, rows, ledger, tally)
        return
    follow_ups = len(episode.case.follow_ups)
    calls = max(0, episode.max_questions + (1 + episode.max_reasks) * (2 + follow_ups) - made)
    growth = 2 * episode.agent.assumed_reply_tokens
    estimate.calls += calls
    estimate.prompt_tokens += calls * prompt + growth * calls * (calls - 1) // 2
    estimate.completion_tokens += calls * episode.agent.assumed_reply_tokens
    rubric = job.score.judge.rubric
    judged = sum(count_tokens(rubric.sections[name]) for name in ("system", "user")) + growth
    judge = job.score.judge.spec
    asks = 1 + judge.max_reasks  # each re-ask sends the judge's reply and the re-ask besides
    judging.calls += follow_ups * asks
    judging.prompt_tokens += follow_ups * (asks * judged + judge.assumed_reply_tokens * asks * (asks - 1))
    judging.completion_tokens += follow_ups * asks * judge.assumed_reply_tokens


def estimate_scoring(
    job: ScoreJob, solved: list[dict[str, Any]], ledger: CallLedger, tally: EstimateTally
) -> None:
    """Count the FQR judge calls still to make over an episode already run (a re-judged run's message rows):
    none when the episode stopped at a failed agent call, as its scoring makes none."""
    if solved and all(row["status"] != "failed" for row in solved):
        _estimate_judging(job, solved, ledger, tally.of(job.judge.spec, job.judge.options, "judge"))


def _estimate_judging(
    job: ScoreJob, rows: list[dict[str, Any]], ledger: CallLedger, estimate: CallEstimate
) -> None:
    """Count the judge calls of an episode the ledger holds whole, as its scoring would make them: those the
    ledger holds are cached; from a follow-up's first call it lacks, that call and every re-ask the judge
    may still need (`max_reasks`), at most."""
    episode = episode_from_messages(job.case, rows, load_kb(job.kb_version), job.diagnosis_match_threshold)
    judge = job.judge.spec

    def lookup(request: ChatRequest) -> CallRecord:
        record = ledger.find(request)
        if record is not None:
            estimate.cached += 1
            return record
        # A follow-up's judging starts with its 2 messages (rubric, answer); each re-ask adds 2.
        asks_left = 1 + judge.max_reasks - (len(request.messages) - 2) // 2
        prompt = sum(count_tokens(str(m["content"])) for m in request.messages)
        growth = judge.assumed_reply_tokens  # and the re-ask's own few tokens
        estimate.calls += asks_left
        estimate.prompt_tokens += asks_left * prompt + growth * asks_left * (asks_left - 1)
        estimate.completion_tokens += asks_left * judge.assumed_reply_tokens
        now = datetime.now(UTC)  # an assumed verdict, so the walk goes on to the next follow-up
        return CallRecord(key=request.key(), model=request.model, status="ok", text=ASSUMED_VERDICT,
                          started_at=now, finished_at=now)  # fmt: skip

    judge_follow_ups(job, job.case, episode, lookup)
