"""Replies read fail-closed: a reader that raises leaves the reply unparseable with its error named, and the
solver and the scorer carry on; the episode is scored, never failed or dropped, for what the agent wrote.
The plan reader is made to raise here (as it did on 3,000 `[`), whatever the plan reader does today."""

import pytest

from tasks.benchmarks.consult import reading
from tasks.benchmarks.consult.episode import FollowUpTurn
from tasks.benchmarks.consult.inquiry.policy import load_policy
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.reading import ReadReply, read_reply, reads_as_plan_attempt
from tasks.benchmarks.consult.scorer import episode_from_messages, episode_scores
from tasks.benchmarks.consult.solver import run_episode
from tests.tasks.benchmarks.consult.test_scorer import SCORE_JOB, stub_judge
from tests.tasks.benchmarks.consult.test_solver import ALLERGY, FOLLOWED, PROMPTS, agent, job, scripted

BRACKETS = "[" * 3000
DEEP_PLAN = '[{"drug": "amoxicillin", "dose": ' + BRACKETS  # a plan attempt, as `is_plan_attempt` sees it


def raising(text, *args, **kwargs):
    raise RecursionError("maximum recursion depth exceeded while decoding a JSON array")


def test_a_reader_that_raises_gives_an_unparseable_reply_naming_the_error():
    assert read_reply(raising, BRACKETS) == ReadReply(
        None, "RecursionError: maximum recursion depth exceeded while decoding a JSON array"
    )
    assert read_reply(str.upper, "ok") == ReadReply("OK")


def test_an_error_message_quoting_the_reply_is_cut():
    def quoting(text):
        raise ValueError(f"cannot read {text}")

    assert read_reply(quoting, "x" * 10_000).error == ("ValueError: cannot read " + "x" * 10_000)[:200]


def test_a_plan_attempt_check_that_raises_counts_as_an_attempt(monkeypatch):
    monkeypatch.setattr(reading, "is_plan_attempt", raising)
    assert reads_as_plan_attempt(BRACKETS, load_kb(), None) is True


def brackets_for_plans(last):
    """The solver tests' agent, but every plan it gives (first plan, re-asks, revisions) ends in 3,000 `[`."""
    plans = (PROMPTS.treatment, PROMPTS.treatment_reask, ALLERGY, PROMPTS.revision_reask)
    return DEEP_PLAN if last in plans else agent(last)


@pytest.fixture
def plan_reader_raises(monkeypatch):
    monkeypatch.setattr(reading, "parse_plan", lambda text, kb: raising(text) if "[[[" in text else None)


@pytest.mark.usefixtures("plan_reader_raises")
def test_the_solver_reasks_a_plan_whose_reader_raises_then_goes_on_to_every_follow_up():
    call, _ = scripted(brackets_for_plans)
    rows = run_episode(job(), call)
    agent_rows = [
        (r["stage"], r.get("follow_up"), r["text"] == DEEP_PLAN) for r in rows if r["role"] == "agent"
    ]
    assert agent_rows[-5:] == [
        ("treatment", None, True),
        ("treatment", None, True),  # the re-ask
        ("follow_up", 0, True),
        ("follow_up", 0, True),  # the revision's re-ask
        ("follow_up", 1, False),
    ]
    assert {r["status"] for r in rows} == {"ok", "simulated"}


@pytest.mark.usefixtures("plan_reader_raises")
def test_the_scorer_keeps_a_plan_whose_reader_raised_as_unparseable_and_names_the_error():
    call, _ = scripted(brackets_for_plans)
    rows = run_episode(job(), call)
    episode = episode_from_messages(FOLLOWED, rows, load_kb(), 90.0)
    error = "RecursionError: maximum recursion depth exceeded while decoding a JSON array"
    assert (episode.plan_parse, episode.first_plan, episode.parse_errors) == (
        "unparseable",
        None,
        (f"treatment: {error}", f"follow-up 0: {error}"),
    )
    assert episode.follow_ups[0] == FollowUpTurn(index=0, answer=DEEP_PLAN, revision_parse="unparseable")
    row = episode_scores(SCORE_JOB, rows, load_kb(), load_policy(), stub_judge)
    assert {
        name: row[name] for name in ("status", "plan_parse", "plan", "violations", "psc", "ddiv", "pcr")
    } == {
        "status": "completed",
        "plan_parse": "unparseable",
        "plan": None,
        "violations": None,
        "psc": 0.0,
        "ddiv": 1.0,
        "pcr": 1.0,
    }
    assert (row["revisions_unparseable"], row["parse_errors"], row["dcsr"]) == (
        1,
        [f"treatment: {error}", f"follow-up 0: {error}"],
        0.0,
    )
    assert [(f["plan_drugs"], f["violations_after"]) for f in row["follow_ups"]] == [
        (None, None),
        (None, None),
    ]
