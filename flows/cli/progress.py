"""Live progress of an evaluate command, one bar per role, read from the run's ledger while the flow runs.

On a terminal the bars redraw in place, and Prefect's log lines (warnings and errors by default:
flows/cli/prefect_env.py) print above them, not across them; when the output is a file or a pipe, a plain
line per role is printed every `LOG_INTERVAL_S` seconds (only when something moved) and once at the end, so
a log of a long run says how far it got.
"""

import io
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.text import Text

from flows.cli.render import console as default_console
from tasks.evals.progress import (
    LedgerReader,
    RoleProgress,
    Track,
    duration,
    progress_line,
    role_progress,
)
from tasks.llm.in_flight import calls_in_flight

REDRAW_S = 1.0
LOG_INTERVAL_S = 30.0
REPLAN_S = 15.0


class RunProgress:
    """Follows one run folder's ledger from a daemon thread until `stop()`."""

    def __init__(
        self,
        run_dir: Path,
        tracks: Callable[[], list[Track]],
        console: Console = default_console,
        log_interval_s: float = LOG_INTERVAL_S,
    ) -> None:
        self._plan_tracks = tracks
        self._console = console
        self._log_interval_s = log_interval_s
        self._stopping = threading.Event()
        self._stop_lock = threading.Lock()
        self._started = time.monotonic()
        self._since = datetime.now(UTC)
        self._reader = LedgerReader(run_dir / "ledger", self._since)
        self._bars: Progress | None = None
        self._restore_logs: Callable[[], None] | None = None
        self._bar_ids: dict[str, TaskID] = {}
        self._next_plan = 0.0
        self._last_lines = True
        self._logged_at = 0.0
        self._thread = threading.Thread(target=self._follow, name="run-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, last_lines: bool = True) -> None:
        """Draw the last state and stop (safe to call twice). Interrupted, the command ends on one line of
        its own: `last_lines=False` prints no last progress lines (bars already drawn stay)."""
        with self._stop_lock:
            if self._stopping.is_set():
                return
            self._last_lines = last_lines
            self._stopping.set()
        if last_lines:  # interrupted, the process exits at once: the thread is not waited for
            self._thread.join(timeout=10 * REDRAW_S)
        if self._bars is not None:
            self._bars.stop()
        if self._restore_logs is not None:
            self._restore_logs()

    def _follow(self) -> None:
        try:
            self._show()
        except Exception as error:  # progress is a view: it never stops the run it shows
            self._console.print(f"progress display stopped: {error}", style="yellow", markup=False)

    def _show(self) -> None:
        tracks = self._replan()  # the dry run's walk, here so the flow starts without waiting for it
        at_start = self._reader.tally()
        if self._console.is_terminal:
            self._bars = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[details]}"),
                console=self._console,
                refresh_per_second=2,
            )
            self._bars.start()
            self._restore_logs = prefect_logs_through(self._bars.console)
        logged: list[str] | None = None
        while True:
            stopping = self._stopping.wait(REDRAW_S)
            if stopping and not self._last_lines:
                return
            if stopping or time.monotonic() >= self._next_plan:
                tracks = self._replan()  # dialogues that ended are counted exactly from then on
            rows = self._rows(tracks, at_start)
            if self._bars is not None:
                self._draw(rows)
            elif logged is None or stopping or time.monotonic() - self._logged_at >= self._log_interval_s:
                logged = self._log(rows, logged)
            if stopping:
                return

    def _replan(self) -> list[Track]:
        """The tracks again; planning is spaced to at least ten times what it takes (a GIL is shared)."""
        began = time.monotonic()
        tracks = self._plan_tracks()
        took = time.monotonic() - began
        self._next_plan = began + max(REPLAN_S, 10 * took)
        return tracks

    def _log(self, rows: list[RoleProgress], logged: list[str] | None) -> list[str]:
        """Print the rows as plain lines unless they say what the last ones said."""
        lines = [progress_line(row) for row in rows]
        if lines != logged:
            elapsed = duration(time.monotonic() - self._started)
            for line in lines:
                self._console.print(f"[{elapsed}] {line}", markup=False, highlight=False, soft_wrap=True)
            self._logged_at = time.monotonic()
        return lines

    def _rows(self, tracks: list[Track], at_start: dict) -> list[RoleProgress]:
        now = self._reader.tally()
        elapsed_s = time.monotonic() - self._started
        return role_progress(tracks, now, at_start, calls_in_flight(), elapsed_s)

    def _draw(self, rows: list[RoleProgress]) -> None:
        assert self._bars is not None
        for row in rows:
            details = f"{row.failed:,} failed · {row.in_flight:,} in flight · {row.tokens:,} tokens · "
            details += f"{row.cost_usd:,.4f} USD"
            if row.seconds_left is not None:
                details += f" · {duration(row.seconds_left)} left"
            if row.label not in self._bar_ids:
                self._bar_ids[row.label] = self._bars.add_task(
                    row.label, total=row.expected_calls, details=""
                )
            self._bars.update(
                self._bar_ids[row.label],
                completed=row.done + row.failed,
                total=row.expected_calls,
                details=details,
            )


class LinesThrough(io.TextIOBase):
    """A text file whose every line `console` prints: a live display's console prints it above its bars.
    (rich's FileProxy would do, but a Console unwraps one given as its file.)"""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._partial = ""

    def write(self, text: str) -> int:
        *lines, self._partial = (self._partial + text).split("\n")
        for line in lines:
            self._console.print(Text.from_ansi(line), soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        if self._partial:
            self.write("\n")


def prefect_logs_through(console: Console) -> Callable[[], None]:
    """Print Prefect's console log lines through `console` (a live display's: above its bars) until the
    returned function is called. Prefect's handler writes to the stderr it was configured with, which the
    live display's redirection of sys.stderr does not reach: its lines would be drawn across the bars."""
    from prefect.logging.handlers import PrefectConsoleHandler

    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    handlers = {
        handler
        for logger in loggers
        for handler in getattr(logger, "handlers", [])  # placeholders of unnamed parents have none
        if isinstance(handler, PrefectConsoleHandler)
    }
    files = {handler: handler.console.file for handler in handlers}
    for handler in handlers:
        handler.console.file = LinesThrough(console)

    def restore() -> None:
        for handler, file in files.items():
            handler.console.file.flush()
            handler.console.file = file

    return restore


@contextmanager
def showing_progress(run_dir: Path, tracks: Callable[[], list[Track]]) -> Iterator[RunProgress]:
    """Show the run's progress while the body runs; `tracks` is called in the background."""
    progress = RunProgress(run_dir, tracks)
    progress.start()
    try:
        yield progress
    finally:
        progress.stop()
