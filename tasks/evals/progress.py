"""A run's progress by role, from its call ledger: calls done, failed, in flight, tokens, cost, time left.

The ledger is the one record every runner shares (threads, Dask workers, an earlier run), so progress
read from it is right whichever process makes the calls. What a role has still to do comes from the dry
run's walk of the plan (tasks/evals/estimate.py), an upper bound: a dialogue may end before its last
allowed turn, and a judge's or a model's re-asks may not be needed.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from tasks.evals.config import RunConfig
from tasks.evals.estimate import CallEstimate, JobEstimator, estimate_plan
from tasks.evals.plan import RunPlan
from tasks.llm.call_store import Follower
from tasks.llm.ledger import CallLedger, CallRecord


class Track(NamedTuple):
    """One line of progress: the roles a litellm model string plays, and the calls they make at most.

    Ledger records name the model string, not the role, so a model playing two roles (one model as
    clinician and patient) is one track labelled with both.
    """

    label: str
    model: str
    expected_calls: int


class ModelCalls(NamedTuple):
    """What the ledger holds for one model string: calls that succeeded, calls that failed in this run
    (and have not succeeded since), and the tokens and dollars of every attempt of both."""

    done: int = 0
    failed: int = 0
    tokens: int = 0
    cost_usd: float = 0.0


class RoleProgress(NamedTuple):
    label: str
    expected_calls: int
    done: int
    failed: int
    in_flight: int
    tokens: int
    cost_usd: float
    seconds_left: float | None  # None until a call of this run has finished, or when nothing is left

    @property
    def finished(self) -> bool:
        return self.done + self.failed >= self.expected_calls and not self.in_flight


def tracks_from_estimates(estimates: Iterable[CallEstimate], model_strings: Mapping[str, str]) -> list[Track]:
    """The run's tracks in the estimate's order; `model_strings` maps model names to litellm strings."""
    roles: dict[str, dict[str, None]] = defaultdict(dict)
    names: dict[str, str] = {}
    expected: dict[str, int] = defaultdict(int)
    for estimate in estimates:
        model = model_strings.get(estimate.model, estimate.model)
        roles[model][estimate.role] = None
        names.setdefault(model, estimate.model)
        expected[model] += estimate.calls + estimate.cached
    return [Track(f"{'+'.join(roles[m])} {names[m]}", m, expected[m]) for m in roles]


def plan_tracks(plan: RunPlan, estimate_job: JobEstimator, config: RunConfig) -> list[Track]:
    """The tracks of a run about to start: the dry run's estimate, per litellm model string."""
    model_strings = {spec.name: spec.model for specs in config.roles().values() for spec in specs}
    return tracks_from_estimates(estimate_plan(plan, estimate_job), model_strings)


def tally_records(records: Iterable[CallRecord], since: datetime) -> dict[str, ModelCalls]:
    """Per model string: successes ever, failures recorded since `since`, their tokens and dollars."""
    totals: dict[str, ModelCalls] = {}
    for record in records:
        if record.status == "failed" and record.finished_at < since:
            continue  # an earlier run's failure: this run retries it, so it is still to do
        done, failed, tokens, cost = totals.get(record.model, ModelCalls())
        totals[record.model] = ModelCalls(
            done + (record.status == "ok"),
            failed + (record.status == "failed"),
            tokens + record.prompt_tokens + record.completion_tokens,
            cost + record.cost_usd,
        )
    return totals


def role_progress(
    tracks: list[Track],
    now: Mapping[str, ModelCalls],
    at_start: Mapping[str, ModelCalls],
    in_flight: Mapping[str, int],
    elapsed_s: float,
) -> list[RoleProgress]:
    """Each track's progress; time left assumes the rate of the calls this run has finished so far."""
    rows = []
    for track in tracks:
        calls = now.get(track.model, ModelCalls())
        finished_here = calls.done + calls.failed - at_start.get(track.model, ModelCalls()).done
        left = max(0, track.expected_calls - calls.done - calls.failed)
        seconds_left = None
        if left and finished_here > 0 and elapsed_s > 0:
            seconds_left = left * elapsed_s / finished_here
        expected = max(track.expected_calls, calls.done + calls.failed)
        flying = in_flight.get(track.model, 0)
        rows.append(RoleProgress(track.label, expected, *calls[:2], flying, *calls[2:], seconds_left))
    return rows


def progress_line(row: RoleProgress) -> str:
    """One role's progress as a plain line, for logs and terminals that are not interactive."""
    bound = "" if row.finished else "at most "
    parts = [
        f"{row.done:,} of {bound}{row.expected_calls:,} calls done",
        f"{row.failed:,} failed",
        f"{row.in_flight:,} in flight",
        f"{row.tokens:,} tokens",
        f"{row.cost_usd:,.4f} USD",
    ]
    if row.seconds_left is not None:
        parts.append(f"about {duration(row.seconds_left)} left")
    return f"{row.label}: {', '.join(parts)}"


def duration(seconds: float) -> str:
    """`seconds` as h:mm:ss, or m:ss under an hour."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def tally_outcomes(outcomes: pa.Table, since: datetime) -> dict[str, ModelCalls]:
    """`tally_records` over a ledger's outcomes as columns (`CallLedger.outcomes`): no record is read."""
    counted = outcomes.filter(
        pc.or_(pc.equal(outcomes["status"], "ok"), pc.greater_equal(outcomes["finished_at"], since))
    )
    ok = pc.equal(counted["status"], "ok")
    columns = pa.table(
        {
            "model": counted["model"],
            "done": pc.cast(ok, pa.int64()),
            "failed": pc.cast(pc.invert(ok), pa.int64()),
            "tokens": pc.add(counted["prompt_tokens"], counted["completion_tokens"]),
            "cost": pc.add(counted["input_cost_usd"], counted["output_cost_usd"]),
        }
    )
    sums = columns.group_by("model", use_threads=False).aggregate(
        [("done", "sum"), ("failed", "sum"), ("tokens", "sum"), ("cost", "sum")]
    )
    return {
        row["model"]: ModelCalls(row["done_sum"], row["failed_sum"], row["tokens_sum"], row["cost_sum"])
        for row in sums.to_pylist()
    }


class LedgerReader:
    """Follows a ledger folder's calls cheaply, however many: counted once from its columns, then each
    change of a call's outcome (a new record, here or in another process) adds what it changed."""

    def __init__(self, ledger_dir: Path, since: datetime) -> None:
        self._ledger = CallLedger(ledger_dir)
        self._since = since
        self._follower: Follower | None = None
        self._totals: dict[str, ModelCalls] = {}

    def tally(self) -> dict[str, ModelCalls]:
        """`tally_records` of the ledger's outcomes now."""
        if self._follower is None:
            self._follower = self._ledger.follow()
        self._ledger.refresh()
        snapshot, changes = self._follower.take()
        if snapshot is not None:
            self._totals = tally_outcomes(snapshot, self._since)
        for change in changes:
            removed = tally_records([change.before] if change.before else [], self._since)
            added = tally_records([change.after], self._since)
            for model in {*removed, *added}:
                now = self._totals.get(model, ModelCalls())
                less, more = removed.get(model, ModelCalls()), added.get(model, ModelCalls())
                self._totals[model] = ModelCalls(
                    *(n - a + b for n, a, b in zip(now, less, more, strict=True))
                )
        # A model whose every call was counted out (another success of the same key became its outcome)
        # has none left: every counted record adds a call done or failed.
        self._totals = {model: calls for model, calls in self._totals.items() if calls.done or calls.failed}
        return dict(self._totals)
