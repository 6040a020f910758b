"""What a solve or score step returns: its rows, in a state whose name says when calls of the job failed.

A job whose calls failed still finishes: its failures are rows (a re-run retries them, but for a reply the
provider withheld) and the flow writes
them with the others. Returned as plain rows, Prefect would log and show it as `Completed`; returned in a
`CallsFailed` state (of type COMPLETED, so the flow still collects its rows) it says what happened.
"""

from collections import Counter
from typing import Any

from prefect.states import Completed, State

CALLS_FAILED = "CallsFailed"


def job_result(rows: list[dict[str, Any]], outcomes: Counter[str]) -> list[dict[str, Any]] | State:
    """`rows` as they are when every call of the job succeeded; else in a `CallsFailed` state."""
    if not outcomes["failed"]:
        return rows
    failed, withheld = outcomes["failed"], outcomes["withheld"]
    made = failed + outcomes["ok"]
    if not withheld:
        retried = "a re-run retries them"
    elif withheld == failed:
        retried = "their replies withheld by the provider: no re-run asks again"
    else:
        retried = f"{withheld} withheld by the provider, never asked again; a re-run retries the others"
    message = f"{failed} of {made} calls failed (recorded; {retried})"
    return Completed(name=CALLS_FAILED, message=message, data=rows)


def rows_of(result: list[dict[str, Any]] | State) -> list[dict[str, Any]]:
    """The rows a solve or score step returned, whatever its state."""
    return result.data if isinstance(result, State) else result
