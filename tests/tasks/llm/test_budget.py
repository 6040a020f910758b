from pathlib import Path

import pytest

from tasks.llm.budget import CapStop, SpendingBudget, budget_for, spending_cap


def test_reservations_count_until_the_next_would_pass_the_cap():
    budget = SpendingBudget(1.0, spent_usd=0.5)
    assert budget.reserve("a", 0.2)
    assert budget.reserve("b", 0.3)  # 0.5 + 0.2 + 0.3 = 1.0: at the cap is within it
    assert not budget.reserve("c", 0.01)
    assert (budget.stopped, budget.spent_usd, budget.reserved_usd) == (True, 0.5, 0.5)
    # Told once the calls in flight have ended, with what the ledger then records.
    assert budget.stop_after(0.61) == CapStop(cap_usd=1.0, spent_usd=0.61, refused_usd=0.01)


def test_once_stopped_no_call_is_reserved_even_one_that_fits():
    budget = SpendingBudget(1.0)
    assert not budget.reserve("big", 2.0)
    assert not budget.reserve("small", 0.1)
    assert not budget.reserve("free", 0.0)
    assert budget.stop_after(0.0) == CapStop(cap_usd=1.0, spent_usd=0.0, refused_usd=2.0)


def test_a_settled_call_replaces_its_estimate_with_what_it_cost_since_its_earlier_attempts():
    budget = SpendingBudget(1.0, spent_usd=0.25)  # 0.05 of it: an earlier failed attempt of "a"
    assert budget.reserve("a", 0.5, recorded_usd=0.05)
    budget.settle("a", 0.15)  # the ledger now records 0.15 for "a", both attempts
    assert (budget.spent_usd, budget.reserved_usd) == (pytest.approx(0.35), 0.0)
    assert budget.reserve("b", 0.65)  # the estimate given back makes room
    assert (budget.stopped, budget.stop_after(1.0)) == (False, None)


def test_a_failed_call_gives_its_reservation_back():
    budget = SpendingBudget(0.1)
    assert budget.reserve("a", 0.1)
    budget.settle("a", 0.0)  # a permanent failure, nothing billed
    assert (budget.spent_usd, budget.reserved_usd, budget.stopped) == (0.0, 0.0, False)
    assert budget.reserve("b", 0.1)


def test_a_call_that_raised_counts_its_estimate_as_spent():
    budget = SpendingBudget(1.0)
    assert budget.reserve("a", 0.4)
    budget.settle("a", None)  # it may have been paid: what it cost is unknown
    assert (budget.spent_usd, budget.reserved_usd) == (0.4, 0.0)


def test_a_call_released_gives_its_reservation_back_and_spends_nothing():
    budget = SpendingBudget(1.0, spent_usd=0.5)
    assert budget.reserve("a", 0.5)
    budget.release("a")  # another process recorded the call meanwhile: it is not made here
    assert (budget.spent_usd, budget.reserved_usd, budget.stopped) == (0.5, 0.0, False)
    assert budget.reserve("b", 0.5)


def test_a_budget_kept_in_this_process_has_no_reservation_for_another_request_to_carry():
    assert SpendingBudget(1.0).reservation("a", 0.1) is None


def test_a_batch_already_at_the_provider_is_held_whatever_the_cap_and_counts_until_collected():
    budget = SpendingBudget(1.0, spent_usd=0.2)
    budget.hold("in-batch-1", 0.5, recorded_usd=0.1)
    budget.hold("in-batch-2", 0.5)  # past the cap: it is submitted already, so it counts, unrefused
    assert (budget.reserved_usd, budget.stopped) == (1.0, False)
    assert not budget.reserve("next", 0.01)  # nothing new while the batch may cost that much
    budget.settle("in-batch-1", 0.3)  # collected: 0.3 recorded, 0.1 of it paid before
    budget.settle("in-batch-2", 0.0)  # left unanswered (an expired batch): nothing paid
    assert (budget.spent_usd, budget.reserved_usd) == (pytest.approx(0.4), 0.0)


def test_the_stop_message_gives_the_cap_the_call_refused_and_what_the_folder_spent_in_the_end():
    stop = CapStop(cap_usd=0.05, spent_usd=0.082, refused_usd=0.004)
    assert stop.message() == (
        "stopped at the spending cap of USD 0.0500: a call of about USD 0.0040 would have passed it with "
        "the calls then in flight, so it was not made (nor any after it); the run folder has spent "
        "USD 0.0820 (its ledger, every call in flight ended). Raise --max-cost (max_cost_usd) and re-run the "
        "same command to go on: no call is paid twice"
    )


def test_a_ledger_folder_has_its_budget_only_inside_spending_cap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    budget = SpendingBudget(1.0)
    with spending_cap(Path("run/ledger"), budget) as opened:
        assert opened is budget
        assert budget_for(tmp_path / "run" / "ledger") is budget  # the same folder, spelled absolute
        assert budget_for(tmp_path / "other" / "ledger") is None
    assert budget_for(tmp_path / "run" / "ledger") is None
    with spending_cap(tmp_path / "run" / "ledger", None) as uncapped:
        assert (uncapped, budget_for(tmp_path / "run" / "ledger")) == (None, None)
