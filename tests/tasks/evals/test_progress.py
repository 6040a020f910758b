import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tasks.evals.estimate import CallEstimate
from tasks.evals.progress import (
    LedgerReader,
    ModelCalls,
    RoleProgress,
    Track,
    duration,
    progress_line,
    role_progress,
    tally_outcomes,
    tally_records,
    tracks_from_estimates,
)
from tasks.llm.call_store import CallStore
from tasks.llm.ledger import CallLedger, CallRecord

START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def record(key: str, model: str, status: str = "ok", *, at: datetime = START, tokens=(10, 5), cost=0.0):
    return CallRecord(
        key=key, model=model, status=status, prompt_tokens=tokens[0], completion_tokens=tokens[1],
        input_cost_usd=cost, started_at=at, finished_at=at,
    )  # fmt: skip


def test_a_track_per_model_string_and_roles_sharing_one_model_share_a_track():
    estimates = [
        CallEstimate(model="clin", role="clinician", calls=8, cached=2),
        CallEstimate(model="same", role="patient", calls=5),
        CallEstimate(model="judge", role="judge", calls=3),
    ]
    model_strings = {"clin": "openai/clin", "same": "openai/judge", "judge": "openai/judge"}
    assert tracks_from_estimates(estimates, model_strings) == [
        Track("clinician clin", "openai/clin", 10),
        Track("patient+judge same", "openai/judge", 8),
    ]


def test_a_failure_of_an_earlier_run_is_still_to_do_and_one_of_this_run_counts():
    records = [
        record("a", "m", tokens=(100, 20), cost=0.5),
        record("b", "m", "failed", at=START - timedelta(hours=1), tokens=(7, 0)),
        record("c", "m", "failed", at=START + timedelta(seconds=1), tokens=(9, 0), cost=0.25),
        record("d", "other"),
    ]
    assert tally_records(records, since=START) == {
        "m": ModelCalls(done=1, failed=1, tokens=129, cost_usd=0.75),
        "other": ModelCalls(done=1, failed=0, tokens=15, cost_usd=0.0),
    }


def test_time_left_follows_the_rate_of_the_calls_this_run_finished():
    tracks = [Track("judge j", "j", 100), Track("model m", "m", 10)]
    now = {"j": ModelCalls(done=30, failed=2, tokens=900, cost_usd=1.5), "m": ModelCalls(done=4)}
    at_start = {"j": ModelCalls(done=10), "m": ModelCalls(done=4)}
    rows = role_progress(tracks, now, at_start, in_flight={"j": 3}, elapsed_s=44.0)
    # judge: 22 calls finished in 44 s, 68 left -> 136 s; model: nothing finished in this run yet.
    assert rows == [
        RoleProgress("judge j", 100, 30, 2, 3, 900, 1.5, 136.0),
        RoleProgress("model m", 10, 4, 0, 0, 0, 0.0, None),
    ]


def test_more_calls_done_than_planned_raise_the_total_rather_than_overflow_the_bar():
    rows = role_progress([Track("t", "m", 3)], {"m": ModelCalls(done=5)}, {}, {}, elapsed_s=1.0)
    assert (rows[0].expected_calls, rows[0].seconds_left, rows[0].finished) == (5, None, True)


def test_a_plain_line_says_at_most_until_the_role_is_done():
    running = RoleProgress("judge openai/j", 120, 30, 2, 3, 12345, 0.12345, 3725.0)
    assert progress_line(running) == (
        "judge openai/j: 30 of at most 120 calls done, 2 failed, 3 in flight, 12,345 tokens, 0.1235 USD, "
        "about 1:02:05 left"
    )
    done = RoleProgress("judge openai/j", 32, 30, 2, 0, 12345, 0.5, None)
    assert progress_line(done) == (
        "judge openai/j: 30 of 32 calls done, 2 failed, 0 in flight, 12,345 tokens, 0.5000 USD"
    )
    assert (duration(59.6), duration(61), duration(3600)) == ("1:00", "1:01", "1:00:00")


def test_the_reader_counts_new_records_a_retry_s_failure_and_a_retired_failure(tmp_path):
    ledger = CallLedger(tmp_path)
    reader = LedgerReader(tmp_path, since=START)
    ledger.write(record("aa1", "m"))
    ledger.write(record("bb2", "m", "failed", tokens=(1, 0)))
    assert reader.tally() == {"m": ModelCalls(done=1, failed=1, tokens=16, cost_usd=0.0)}
    ledger.write(record("bb2", "m", "failed", tokens=(2, 0)))  # the retry's failure is the call's now
    assert reader.tally() == {"m": ModelCalls(done=1, failed=1, tokens=17, cost_usd=0.0)}
    ledger.write(record("bb2", "m"))
    ledger.write(record("cc3", "m"))
    assert reader.tally() == {"m": ModelCalls(done=3, failed=0, tokens=45, cost_usd=0.0)}


# Costs in 1/1024 USD steps and whole seconds: sums are exact, so tallies compare whole.
WRITES = st.lists(
    st.tuples(
        st.sampled_from(["aa", "bb", "cc", "dd"]),
        st.sampled_from(["m", "n"]),
        st.sampled_from(["ok", "failed"]),
        st.integers(-3, 3),  # seconds from the reader's start: earlier failures are not this run's
        st.integers(0, 64),
        st.booleans(),  # written by this process, or by another one (its own segment)
        st.booleans(),  # the reader looks now
    ),
    max_size=25,
)


@given(WRITES)
def test_the_reader_s_running_tally_is_the_tally_of_the_ledger_s_outcomes_whoever_wrote_them(writes):
    with tempfile.TemporaryDirectory() as folder:
        ledger, other_process = CallLedger(Path(folder)), CallStore(Path(folder))
        reader = LedgerReader(Path(folder), since=START)
        for key, model, status, seconds, cost, here, look in writes:
            written = record(key, model, status, at=START + timedelta(seconds=seconds), cost=cost / 1024)
            (ledger.write if here else other_process.write)(written)
            if look:
                reader.tally()
        ledger.refresh()
        expected = tally_records(ledger.records(), since=START)
        assert reader.tally() == expected == tally_outcomes(ledger.outcomes(), since=START)
