"""The spending cap's refusal and warning, said before a run."""

from datetime import UTC, datetime

from tasks.evals.cap_checks import cap_exceeded_warning, overspent_refusal
from tasks.llm.ledger import CallLedger, CallRecord

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def spend(run_dir, key: str, cost_usd: float) -> None:
    record = CallRecord(
        key=key, model="openai/m", status="ok", input_cost_usd=cost_usd, started_at=NOW, finished_at=NOW
    )
    CallLedger(run_dir / "ledger").write(record)


def test_a_folder_that_has_spent_more_than_the_cap_is_refused_saying_what_it_spent_and_the_cap(tmp_path):
    assert overspent_refusal(tmp_path, 0.0, 0.38) == (
        f"{tmp_path} has spent USD 0.3800 already, more than the spending cap of USD 0.0000: no call was "
        "made; raise --max-cost (max_cost_usd) above what it spent and re-run the same command to go on"
    )
    assert overspent_refusal(tmp_path, 0.38, 0.38) is None  # at the cap: calls that cost nothing may go on
    assert overspent_refusal(tmp_path, None, 0.38) is None


def test_the_dry_run_warns_when_what_is_left_and_what_was_spent_pass_the_cap(tmp_path):
    spend(tmp_path, "aa01", 0.25)
    assert cap_exceeded_warning(tmp_path, None, 100.0) is None
    assert cap_exceeded_warning(tmp_path, 1.0, 0.75) is None  # exactly at the cap
    assert cap_exceeded_warning(tmp_path, 1.0, 0.8) == (
        "the estimate (USD 0.8000 still to spend at most, USD 0.2500 spent) exceeds the spending cap of USD "
        "1.0000: the run stops at the cap if it needs that much; raise --max-cost to be sure it finishes"
    )
