"""A run's progress by role, from its call ledger: calls done, failed, in flight, tokens, cost, time left.

The ledger is the one record every runner shares (threads, Dask workers, an earlier run), so progress
read from it is right whichever process makes the calls. What a role has still to do comes from the dry
run's walk of the plan (tasks/evals/estimate.py): for interviews and consultations it is an upper bound,
since a dialogue may end before its last allowed turn.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

from tasks.evals.config import RunConfig
from tasks.evals.estimate import CallEstimate, JobEstimator, estimate_plan
from tasks.evals.plan import RunPlan
from tasks.llm.ledger import CallRecord, read_record


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


class LedgerReader:
    """Reads a ledger folder again and again cheaply: a success is read once (it never changes), a
    failure again only when its file was replaced (records are written by rename: a new inode)."""

    def __init__(self, ledger_dir: Path) -> None:
        self.root = ledger_dir
        self._records: dict[Path, tuple[tuple[int, int], CallRecord]] = {}

    def records(self) -> list[CallRecord]:
        """Every readable record now: successes, and failures of calls that have not succeeded."""
        succeeded: dict[Path, tuple[tuple[int, int], CallRecord]] = {}
        for path in self.root.glob("ok/*/*.json"):
            kept = self._records.get(path)
            if kept is None and (record := read_record(path)) is not None:
                kept = ((0, 0), record)
            if kept is not None:
                succeeded[path] = kept
        keys = {record.key for _, record in succeeded.values()}
        failed: dict[Path, tuple[tuple[int, int], CallRecord]] = {}
        for path in self.root.glob("failed/*/*.json"):
            try:
                stat = path.stat()
                changed = (stat.st_ino, stat.st_mtime_ns)
            except FileNotFoundError:  # the call succeeded since the glob
                continue
            kept = self._records.get(path)
            if (kept is None or kept[0] != changed) and (record := read_record(path)) is not None:
                kept = (changed, record)
            if kept is not None and kept[1].key not in keys:
                failed[path] = kept
        self._records = {**succeeded, **failed}
        return [record for _, record in self._records.values()]
