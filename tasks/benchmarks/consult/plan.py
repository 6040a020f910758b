"""The consultation benchmark's run plan: every sampled case x agent x epoch, run then scored; its dry run."""

from typing import Any

from tasks.benchmarks.consult.cases.case_set import case_set_fingerprint, load_sample
from tasks.benchmarks.consult.config import ConsultConfig
from tasks.benchmarks.consult.scorer import ScoreJob
from tasks.benchmarks.consult.solver import EpisodeJob, EpisodePrompts, SimulatorSettings, run_episode
from tasks.core.tokens import count_tokens
from tasks.evals.config import EvaluationSettings, ModelSpec
from tasks.evals.estimate import EstimateTally
from tasks.evals.plan import Job, RunPlan, run_id_for
from tasks.llm.ledger import CallLedger
from tasks.llm.prompts import load_prompt
from tasks.llm.request import ChatRequest

ConsultJob = Job[EpisodeJob, ScoreJob]
ConsultPlan = RunPlan[EpisodeJob, ScoreJob]


def build_plan(settings: EvaluationSettings[ConsultConfig]) -> ConsultPlan:
    """Draw the sample and pair it with every agent and epoch. Reads the case set; calls nothing."""
    config, case_set_dir = settings.config, settings.dataset_dir
    fingerprint = case_set_fingerprint(case_set_dir)
    run_id = run_id_for(config, fingerprint)
    prompt = load_prompt(config.prompt_file())
    prompts = EpisodePrompts(
        version=prompt.version,
        system=prompt.render("system"),
        diagnosis=prompt.render("diagnosis"),
        reask=prompt.render("reask"),
    )
    simulator = SimulatorSettings(
        kb_version=config.kb_version,
        catalogue_version=config.policy_version,
        match_threshold=config.match_threshold,
        per_turn=config.per_turn,
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
        prompts={prompt.version: prompt.sha256},
        manifest_facts={"sent": _sent_settings(agents), "cases": len(cases)},
    )


def _sent_settings(agents: list[ModelSpec]) -> dict[str, Any]:
    fields = {"model", "api_base", "params"}
    return {"models": {spec.name: spec.model_dump(mode="json", include=fields) for spec in agents}}


class _NotInLedger(Exception):
    def __init__(self, request: ChatRequest) -> None:
        self.request = request


def estimate_job(job: ConsultJob, ledger: CallLedger, tally: EstimateTally) -> None:
    """Count one episode's agent calls still to make, at most: replayed from the ledger up to its first
    unknown call, then assumed to ask every question and need every re-ask; later prompts grow by one
    assumed question and answer per turn."""
    episode = job.solve
    estimate = tally.of(episode.agent, episode.options, "agent")
    made = 0

    def replay(request: ChatRequest) -> Any:
        nonlocal made
        record = ledger.lookup(request.key())
        if record is None:
            raise _NotInLedger(request)
        estimate.cached += 1
        made += 1
        return record

    try:
        run_episode(episode, replay)
        return
    except _NotInLedger as stop:
        prompt = sum(count_tokens(str(m["content"])) for m in stop.request.messages)
    calls = max(0, episode.max_questions + 1 + episode.max_reasks - made)
    growth = 2 * episode.agent.estimated_reply_tokens
    estimate.calls += calls
    estimate.prompt_tokens += calls * prompt + growth * calls * (calls - 1) // 2
    estimate.completion_tokens += calls * episode.agent.estimated_reply_tokens
