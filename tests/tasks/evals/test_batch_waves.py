"""Waves of provider batches over toy dialogues (each turn needs the reply before it), on the local server."""

from pathlib import Path

import pytest
from pydantic import BaseModel

from tasks.evals.batch_waves import BatchProviderError, BatchWaves, WaveCounts
from tasks.evals.config import BatchSettings
from tasks.evals.spending import open_budget
from tasks.llm.budget import SpendingBudget, spending_cap
from tasks.llm.call import complete, estimated_cost_usd
from tasks.llm.ledger import CallLedger
from tasks.llm.request import CallOptions, ChatRequest, Prices, RetryPolicy
from tests.llm_server import LLMServer
from tests.llm_server_state import BatchScript

# Priced by input tokens, at half price in batches: a spending cap has something to count.
BATCH = CallOptions(provider="openai", mode="batch", prices=Prices(input_per_token=1e-3))
RETRY = RetryPolicy(max_attempts=3)
QUICK = BatchSettings(poll_interval_s=0.02)


class Dialogue(BaseModel, frozen=True):
    api_base: str
    questions: tuple[str, ...]


def ask_in_turn(job: Dialogue, ledger_dir: Path) -> None:
    """Each question goes with the replies before it; a failed turn ends the dialogue."""
    ledger, messages = CallLedger(ledger_dir), []
    for question in job.questions:
        messages.append({"role": "user", "content": question})
        request = ChatRequest(model="openai/m", messages=tuple(messages), api_base=job.api_base)
        record = complete(request, BATCH, ledger)
        if record.status != "ok":
            return
        messages.append({"role": "assistant", "content": record.text})


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def dialogues(server: LLMServer) -> list[Dialogue]:
    return [
        Dialogue(api_base=server.url, questions=("Swollen ankle?", "Can I walk on it?")),
        Dialogue(api_base=server.url, questions=("A rash?", "Does it itch?", "Should I worry?")),
    ]


def waves(server: LLMServer, run_dir: Path, settings: BatchSettings = QUICK, shown=None) -> BatchWaves:
    show = shown.append if shown is not None else lambda counts: None
    return BatchWaves(dialogues(server), ask_in_turn, run_dir, settings, RETRY, 2, show)


def test_each_turn_goes_in_the_wave_after_the_reply_it_needs_and_every_call_is_sent_once(server, tmp_path):
    shown: list[WaveCounts] = []
    outcome = waves(server, tmp_path, shown=shown).run()
    assert (outcome.finished, outcome.waves) == (True, 3)
    assert [batch["request_counts"]["total"] for batch in server.batches] == [2, 2, 1]
    assert server.stats()["max_submissions_per_custom_id"] == 1
    assert server.stats()["requests"] == 0  # no single call
    assert CallLedger(tmp_path / "ledger").count_succeeded() == 5
    last_shown = {counts.wave: counts for counts in shown}
    assert list(last_shown.values()) == [
        WaveCounts(1, 2, 0, 2, 0),
        WaveCounts(2, 2, 0, 2, 0),
        WaveCounts(3, 1, 0, 1, 0),
    ]


def test_a_line_that_failed_transiently_is_sent_again_with_the_next_wave(server, tmp_path):
    server.script_batch(BatchScript(failed_lines={0: 500}))
    outcome = waves(server, tmp_path).run()
    assert outcome.finished
    assert [batch["request_counts"]["total"] for batch in server.batches] == [2, 2, 2]
    assert sorted(server.batch_submissions().values()) == [1, 1, 1, 1, 2]
    assert CallLedger(tmp_path / "ledger").count_succeeded() == 5


def test_a_permanent_failure_is_final_and_its_dialogue_stops(server, tmp_path):
    server.script_batch(BatchScript(failed_lines={0: 400}))
    outcome = waves(server, tmp_path).run()
    assert (outcome.finished, outcome.waves) == (True, 3)
    assert sorted(server.batch_submissions().values()) == [1, 1, 1, 1]
    ledger = CallLedger(tmp_path / "ledger")
    assert (ledger.count_succeeded(), [r.error_kind for r in ledger.records() if r.status == "failed"]) == (
        3,
        ["bad_request"],
    )


def test_the_calls_an_expired_batch_left_unanswered_go_out_again(server, tmp_path):
    server.script_batch(BatchScript(expire=True, expire_completed=1))
    outcome = waves(server, tmp_path).run()
    assert outcome.finished
    assert [batch["status"] for batch in server.batches][:2] == ["expired", "completed"]
    assert sorted(server.batch_submissions().values()) == [1, 1, 1, 1, 2]
    assert CallLedger(tmp_path / "ledger").count_succeeded() == 5


def test_a_run_that_stops_waiting_leaves_its_batch_in_flight_and_the_next_run_collects_it(server, tmp_path):
    server.hold_batches()
    waiting = waves(server, tmp_path, BatchSettings(poll_interval_s=0.02, wait_s=0)).run()
    assert (waiting.finished, [len(r.keys) for r in waiting.in_flight]) == (False, [2])
    assert "re-run the same command later" in waiting.message()
    server.release_batches()
    finished = waves(server, tmp_path).run()
    assert (finished.finished, finished.waves) == (True, 3)
    assert server.stats()["max_submissions_per_custom_id"] == 1


def test_a_provider_that_cannot_be_reached_is_tried_at_each_poll_then_stops_the_run_naming_the_batch(
    tmp_path,
):
    unreachable = [Dialogue(api_base="http://127.0.0.1:9/v1", questions=("Swollen ankle?",))]
    waves = BatchWaves(unreachable, ask_in_turn, tmp_path, QUICK, RETRY, 1)
    with pytest.raises(BatchProviderError, match=r"^batch \S+: openai/m: .*Connection error"):
        waves.run()
    (record,) = waves.store.records()
    assert (record.status, record.input_file_id, len(record.keys)) == ("preparing", None, 1)


def test_a_line_failing_transiently_in_every_run_is_submitted_max_attempts_times_then_the_run_ends(
    server, tmp_path
):
    """Each run (a poll) stops waiting at once; its batch finishes before the next one looks."""
    server.script_batch(*[BatchScript(delay_s=3600, failed_lines={0: 500})] * 6)
    one_question = [Dialogue(api_base=server.url, questions=("Swollen ankle?",))]
    retry = RetryPolicy(max_attempts=2)
    outcomes = []
    while outcomes[-1:] != [True] and len(outcomes) < 6:
        settings = BatchSettings(poll_interval_s=0.02, wait_s=0)
        outcomes.append(BatchWaves(one_question, ask_in_turn, tmp_path, settings, retry, 1).run().finished)
        server.finish_batches()
    assert outcomes == [False, False, True]
    assert list(server.batch_submissions().values()) == [2]
    (failure,) = CallLedger(tmp_path / "ledger").records()
    assert (failure.status, failure.error_kind, failure.attempts) == ("failed", "server_error", 2)


def test_the_calls_of_a_batch_the_provider_no_longer_knows_go_out_again_with_a_warning(
    server, tmp_path, caplog
):
    server.script_batch(BatchScript(delay_s=3600))
    waiting = waves(server, tmp_path, BatchSettings(poll_interval_s=0.02, wait_s=0)).run()
    server.forget_batch(waiting.in_flight[0].batch_id)
    outcome = waves(server, tmp_path).run()
    assert (outcome.finished, outcome.waves) == (True, 4)
    assert sorted(server.batch_submissions().values()) == [1, 1, 1, 2, 2]
    assert CallLedger(tmp_path / "ledger").count_succeeded() == 5
    assert (
        "batch batch_1 (wave 1) is no longer known to the provider (404): the 2 unanswered are submitted "
        "again" in caplog.text
    )


def first_turns(server: LLMServer) -> dict[str, ChatRequest]:
    """The calls of the first wave, by call key."""
    requests = [
        ChatRequest(
            model="openai/m", messages=({"role": "user", "content": job.questions[0]},), api_base=server.url
        )
        for job in dialogues(server)
    ]
    return {request.key(): request for request in requests}


def test_under_a_cap_the_calls_past_it_are_not_submitted_and_the_waves_end(server, tmp_path):
    first_wave = sum(estimated_cost_usd(request, BATCH) for request in first_turns(server).values())
    budget = SpendingBudget(cap_usd=first_wave + 1e-4)  # the first turns fit, the second ones do not
    with spending_cap(tmp_path / "ledger", budget):
        outcome = waves(server, tmp_path).run()
    assert (outcome.finished, outcome.waves) == (True, 1)
    assert [batch["request_counts"]["total"] for batch in server.batches] == [2]
    ledger = CallLedger(tmp_path / "ledger")
    assert sorted(record.key for record in ledger.records()) == sorted(first_turns(server))
    assert (budget.reserved_usd, budget.spent_usd) == (0.0, pytest.approx(ledger.total_cost_usd()))
    assert budget.stopped


def test_a_batch_left_in_flight_counts_at_its_estimate_until_a_capped_run_collects_it(server, tmp_path):
    server.hold_batches()
    assert not waves(server, tmp_path, BatchSettings(poll_interval_s=0.02, wait_s=0)).run().finished
    budget = open_budget(tmp_path, cap_usd=1.0, spent_usd=0.0)
    estimates = sum(estimated_cost_usd(request, BATCH) for request in first_turns(server).values())
    assert (budget.spent_usd, budget.reserved_usd) == (0.0, pytest.approx(estimates))
    server.release_batches()
    with spending_cap(tmp_path / "ledger", budget):
        assert waves(server, tmp_path).run().finished
    ledger = CallLedger(tmp_path / "ledger")
    assert (budget.reserved_usd, budget.spent_usd) == (0.0, pytest.approx(ledger.total_cost_usd()))
    assert (budget.stopped, ledger.count_succeeded(), server.stats()["max_submissions_per_custom_id"]) == (
        False,
        5,
        1,
    )
