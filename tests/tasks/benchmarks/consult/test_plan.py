"""The dry run's count of an episode's calls, at most: every stage's agent calls and re-asks, and each
follow-up's judge call and re-asks."""

from datetime import UTC, datetime

import pytest

from tasks.benchmarks.consult.judge import judge_follow_ups
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.plan import ConsultJob, estimate_job
from tasks.benchmarks.consult.reference_agents import MARKOV
from tasks.benchmarks.consult.scorer import ScoreJob, episode_from_messages
from tasks.benchmarks.consult.solver import run_episode
from tasks.evals.config import ModelSpec
from tasks.evals.estimate import EstimateTally
from tasks.llm import offline
from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger
from tasks.llm.record import CallRecord
from tasks.llm.request import CallOptions
from tests.tasks.benchmarks.consult.test_solver import FOLLOWED, job


def test_an_episode_not_yet_run_counts_every_question_plan_follow_up_and_reask_and_each_judge_call_and_reask(
    tmp_path,
):
    tally = EstimateTally()
    consult_job = ConsultJob(solve=job(), score=ScoreJob(run_id="r1", model="doc", case=FOLLOWED, epoch=0))
    estimate_job(consult_job, CallLedger(tmp_path / "ledger"), tally)
    counts = {(e.model, e.role): (e.calls, e.cached) for e in tally.priced()}
    # 3 questions, then (1 + 1 re-ask) for the differential, the plan and each of the 2 follow-ups; the
    # offline judge's (1 + 1 re-ask) for each follow-up.
    assert counts == {("doc", "agent"): (3 + 2 * 4, 0), ("consult-judge (offline)", "judge"): (2 * 2, 0)}


def test_an_episode_in_the_ledger_counts_only_the_judge_calls_still_to_make(tmp_path):
    ledger = CallLedger(tmp_path / "ledger")
    options = CallOptions(provider=offline.PROVIDER)
    episode_job = job().model_copy(
        update={"agent": ModelSpec(name="markov", model=MARKOV), "options": options}
    )
    score_job = ScoreJob(run_id="r1", model="markov", case=FOLLOWED, epoch=0)
    rows = run_episode(episode_job, lambda request: complete(request, options, ledger))

    def counts():
        tally = EstimateTally()
        estimate_job(ConsultJob(solve=episode_job, score=score_job), ledger, tally)
        return {e.role: (e.calls, e.cached) for e in tally.priced()}

    agent_calls = sum(row["role"] == "agent" for row in rows)
    assert counts() == {"agent": (0, agent_calls), "judge": (2 * 2, 0)}
    episode = episode_from_messages(FOLLOWED, rows, load_kb(), 90.0)
    judge_follow_ups(score_job, FOLLOWED, episode, lambda request: complete(request, options, ledger))
    assert counts() == {"agent": (0, agent_calls), "judge": (0, 2)}


class _Stop(Exception):
    pass


def test_a_judge_reply_with_no_verdict_leaves_its_re_ask_to_make(tmp_path):
    ledger = CallLedger(tmp_path / "ledger")
    options = CallOptions(provider=offline.PROVIDER)
    episode_job = job().model_copy(
        update={"agent": ModelSpec(name="markov", model=MARKOV), "options": options}
    )
    score_job = ScoreJob(run_id="r1", model="markov", case=FOLLOWED, epoch=0)
    rows = run_episode(episode_job, lambda request: complete(request, options, ledger))
    episode = episode_from_messages(FOLLOWED, rows, load_kb(), 90.0)

    asked = []

    def first_reply_ungraded(request):
        if asked:
            raise _Stop  # the re-ask: not made
        asked.append(request)
        now = datetime.now(UTC)
        ungraded = CallRecord(key=request.key(), model=request.model, status="ok", text="Hard to say.",
                              started_at=now, finished_at=now)  # fmt: skip
        ledger.write(ungraded)
        return ungraded

    with pytest.raises(_Stop):
        judge_follow_ups(score_job, FOLLOWED, episode, first_reply_ungraded)
    tally = EstimateTally()
    estimate_job(ConsultJob(solve=episode_job, score=score_job), ledger, tally)
    # The first follow-up's re-ask (its 1 at most), the second follow-up's call and re-ask.
    assert {e.role: (e.calls, e.cached) for e in tally.priced()}["judge"] == (1 + 2, 1)


def test_an_agent_reply_the_provider_withheld_ends_the_episode_with_no_call_to_make_and_none_to_judge(
    tmp_path,
):
    """A content-filtered reply is final: the run takes it from the ledger, stops the episode there and
    judges nothing (estimate_scoring), so the dry run counts it as made and nothing after it."""
    ledger = CallLedger(tmp_path / "ledger")
    options = CallOptions(provider=offline.PROVIDER)
    episode_job = job().model_copy(
        update={"agent": ModelSpec(name="markov", model=MARKOV), "options": options}
    )

    def withheld(request):
        now = datetime.now(UTC)
        record = CallRecord(
            key=request.key(), model=request.model, status="failed", error_kind="content_filter",
            error="reply withheld by the provider", retryable=False, attempts=1,
            started_at=now, finished_at=now,
        )  # fmt: skip
        ledger.write(record)
        return record

    rows = run_episode(episode_job, withheld)
    assert [row["status"] for row in rows if row["role"] == "agent"] == ["failed"]
    tally = EstimateTally()
    score_job = ScoreJob(run_id="r1", model="markov", case=FOLLOWED, epoch=0)
    estimate_job(ConsultJob(solve=episode_job, score=score_job), ledger, tally)
    assert {e.role: (e.calls, e.cached) for e in tally.priced()} == {"agent": (0, 1), "judge": (0, 0)}
