from datetime import UTC, datetime
from pathlib import Path

import pytest

from tasks.benchmarks.threadmed.plan import build_plan, estimate_job
from tasks.benchmarks.threadmed.scorer import judge_thread, render_judge_messages
from tasks.benchmarks.threadmed.solver import answer_thread, ask_turns
from tasks.evals.config import EvalConfig, EvaluationSettings, JudgeSpec, ModelSpec
from tasks.evals.estimate import EstimateTally, estimate_plan
from tasks.evals.job_state import rows_of
from tasks.llm.ledger import CallLedger
from tasks.llm.record import CallRecord
from tasks.llm.request import Prices
from tests.eval_fixtures import OFFLINE, write_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("build"))


def test_the_dry_run_counts_calls_and_drops_the_ones_already_made(dataset, tmp_path):
    config = OFFLINE.model_copy(update={"conditions": ["baseline"]})
    plan = build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=tmp_path, config=config))
    before = {(e.model, e.role): e for e in estimate_plan(plan, estimate_job)}
    assert {key: (e.calls, e.cached) for key, e in before.items()} == {
        ("retrieval", "inference"): (13, 0),
        ("threadmed/deferral", "inference"): (13, 0),
        ("threadmed/overlap-judge", "judge"): (26 * 3, 0),  # each answer asked, and re-asked twice at most
    }
    assert before[("retrieval", "inference")].completion_tokens == 13 * 400
    assert before[("retrieval", "inference")].cost_usd == 0.0

    deferral = next(job for job in plan.jobs if job.solve.model.name == "threadmed/deferral")
    rows = answer_thread(deferral.solve, plan.ledger_dir)
    judge_thread(deferral.score, rows[:1], plan.ledger_dir)
    after = {(e.model, e.role): (e.calls, e.cached) for e in estimate_plan(plan, estimate_job)}
    assert after[("threadmed/deferral", "inference")] == (13 - len(rows), len(rows))
    assert after[("threadmed/overlap-judge", "judge")] == (25 * 3, 1)  # its one reply held a valid score


def test_the_dry_run_assumes_no_reply_longer_than_the_max_tokens_sent(dataset, tmp_path):
    # --max-tokens 64: each reply is at most 64 tokens, fewer than the roles' estimates (400, judge 120)
    config = OFFLINE.model_copy(update={"conditions": ["baseline"], "max_tokens": 64})
    plan = build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=tmp_path, config=config))
    estimates = {(e.model, e.role): (e.calls, e.completion_tokens) for e in estimate_plan(plan, estimate_job)}
    assert estimates == {
        ("retrieval", "inference"): (13, 13 * 64),
        ("threadmed/deferral", "inference"): (13, 13 * 64),
        ("threadmed/overlap-judge", "judge"): (26 * 3, 26 * 3 * 64),
    }


def test_the_dry_run_follows_a_judge_s_re_asks_through_the_ledger(dataset, tmp_path):
    """A recorded judge reply with no grade: its re-asks, two at most, are still to make."""
    config = OFFLINE.model_copy(update={"conditions": ["baseline"]})
    plan = build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=tmp_path, config=config))
    deferral = next(job for job in plan.jobs if job.solve.model.name == "threadmed/deferral")
    [first, *_] = answer_thread(deferral.solve, plan.ledger_dir)
    judge = deferral.score
    thread, turn = judge.thread, first["turn"]
    asked = render_judge_messages(
        judge.rubric, thread.questions[turn], thread.answers[turn], first["response"]
    )
    now = datetime.now(UTC)
    ungraded = CallRecord(
        key=judge.request(asked).key(), model=judge.judge.model, status="ok", text="Hard to say.",
        started_at=now, finished_at=now,
    )  # fmt: skip
    CallLedger(plan.ledger_dir).write(ungraded)
    estimates = {(e.model, e.role): (e.calls, e.cached) for e in estimate_plan(plan, estimate_job)}
    assert estimates[("threadmed/overlap-judge", "judge")] == (25 * 3 + 2, 1)


def test_a_reply_the_provider_withheld_is_made_not_to_make_and_ends_a_baseline_thread(dataset, tmp_path):
    """A content-filtered reply is final (a run takes it from the ledger): not a call to make, no answer to
    judge, and in the baseline condition the thread's later turns are not run."""
    config = OFFLINE.model_copy(update={"conditions": ["baseline"]})
    plan = build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=tmp_path, config=config))
    deferral = next(job for job in plan.jobs if job.solve.model.name == "threadmed/deferral")
    asked: list[list[dict[str, str]]] = []
    ask_turns(deferral.solve, lambda messages: asked.append(messages))  # the first turn's request only
    now = datetime.now(UTC)
    withheld = CallRecord(
        key=deferral.solve.model.request(asked[0]).key(), model=deferral.solve.model.model, status="failed",
        error_kind="content_filter", error="reply withheld by the provider", retryable=False, attempts=1,
        started_at=now, finished_at=now,
    )  # fmt: skip
    CallLedger(plan.ledger_dir).write(withheld)
    turns = len(deferral.solve.turns)
    estimates = {(e.model, e.role): (e.calls, e.cached) for e in estimate_plan(plan, estimate_job)}
    assert estimates == {
        ("retrieval", "inference"): (13, 0),
        ("threadmed/deferral", "inference"): (13 - turns, 1),
        ("threadmed/overlap-judge", "judge"): ((26 - turns) * 3, 0),
    }
    # As the run does: the recorded refusal, no call, no later turn.
    result = answer_thread(deferral.solve, plan.ledger_dir)
    assert [row["status"] for row in rows_of(result)] == ["failed"] + ["not_run"] * (turns - 1)
    assert result.message == (
        "1 of 1 calls failed (recorded; their replies withheld by the provider: no re-run asks again)"
    )


def test_the_dry_run_prices_known_models_and_flags_unknown_ones(dataset, tmp_path):
    config = EvalConfig(
        models=[ModelSpec(model="openai/gpt-4o"), ModelSpec(model="openai/local")],
        judge=JudgeSpec(model="openai/judge", prices=Prices(input_per_token=1e-6, output_per_token=1e-6)),
    )
    plan = build_plan(EvaluationSettings(dataset_dir=dataset, run_dir=tmp_path, config=config))
    estimates = {e.model: e for e in estimate_plan(plan, estimate_job)}
    gpt4o = estimates["openai/gpt-4o"]
    assert gpt4o.cost_usd == pytest.approx(gpt4o.prompt_tokens * 2.5e-6 + gpt4o.completion_tokens * 1e-5)
    assert estimates["openai/local"].cost_usd is None
    judge = estimates["openai/judge"]
    assert judge.cost_usd == pytest.approx((judge.prompt_tokens + judge.completion_tokens) * 1e-6)


def test_the_estimates_of_two_runs_in_one_tally_keep_apart_per_model_and_role():
    tally = EstimateTally()
    spec, options = ModelSpec(model="openai/gpt-4o"), OFFLINE.call_options(ModelSpec(model="openai/gpt-4o"))
    tally.of(spec, options, "inference").calls += 2
    tally.of(spec, options, "judge").calls += 1
    tally.of(spec, options, "inference").prompt_tokens += 1000
    inference, judge = tally.priced()
    assert (inference.role, inference.calls, judge.role, judge.calls) == ("inference", 2, "judge", 1)
    assert inference.cost_usd == pytest.approx(1000 * 2.5e-6) and judge.cost_usd == 0.0
