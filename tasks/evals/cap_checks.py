"""What a command says of a run folder's spending cap before the run: a refusal when the folder has spent the
cap already, a warning when the dry run's estimate passes it. Light on purpose (no litellm, no Prefect): the
refusal comes before a run's first line, in one line (the accounting during a run is spending.py's)."""

from pathlib import Path

from tasks.llm.ledger import CallLedger


def overspent_refusal(run_dir: Path, cap_usd: float | None, spent_usd: float) -> str | None:
    """Why a capped run in `run_dir` can make no call at all: the folder has spent `spent_usd` (its ledger's),
    more than the cap already (earlier runs with a higher cap, replies longer than their estimates); None
    when it has not, or there is no cap. Said before any call, rather than a run that refuses each one."""
    if cap_usd is None or spent_usd <= cap_usd:
        return None
    return (
        f"{run_dir} has spent USD {spent_usd:,.4f} already, more than the spending cap of "
        f"USD {cap_usd:,.4f}: no call was made; raise --max-cost (max_cost_usd) above what it spent and "
        "re-run the same command to go on"
    )


def cap_exceeded_warning(run_dir: Path, cap_usd: float | None, estimate_usd: float) -> str | None:
    """The dry run's warning when the calls still to make, at most (its estimate counts every re-ask and
    turn that may be needed), on top of what the run folder has spent, pass the cap; None when they fit (or
    there is no cap)."""
    if cap_usd is None:
        return None
    spent = CallLedger(run_dir / "ledger").total_cost_usd()
    if spent + estimate_usd <= cap_usd:
        return None
    return (
        f"the estimate (USD {estimate_usd:,.4f} still to spend at most, USD {spent:,.4f} spent) exceeds the "
        f"spending cap of USD {cap_usd:,.4f}: the run stops at the cap if it needs that much; raise "
        "--max-cost to be sure it finishes"
    )
