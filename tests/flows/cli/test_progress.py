"""An evaluate command's live progress bars on a terminal, and Prefect's log lines beside them."""

import io
import logging
import time
from collections.abc import Callable

from prefect.logging.handlers import PrefectConsoleHandler
from rich.console import Console

from flows.cli.progress import RunProgress
from tasks.evals.progress import Track
from tests.flows.cli.terminal import TERMINAL_CODES


def wait_for(done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 300  # a liveness bound only
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_prefect_s_log_lines_print_above_the_live_bars_not_across_them(tmp_path):
    configured = io.StringIO()  # the stream Prefect's logging configuration gives its console handler
    logger = logging.getLogger("threadmed-test-progress")
    logger.propagate = False
    logger.addHandler(handler := PrefectConsoleHandler(stream=configured))
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120, color_system=None)
    progress = RunProgress(tmp_path, lambda: [Track("openai/m (model)", "openai/m", 4)], console=terminal)
    try:
        progress.start()
        wait_for(lambda: "openai/m (model)" in screen.getvalue(), "the bars are drawn")
        logger.warning("Task run 'answer-1' - Finished in state Crashed()")
        progress.stop()
        logger.warning("after the bars")
    finally:
        logger.removeHandler(handler)
    drawn = TERMINAL_CODES.sub("", screen.getvalue()).replace("\r", "\n")
    shown = [line.strip() for line in drawn.split("\n")]
    assert "Task run 'answer-1' - Finished in state Crashed()" in shown  # a line of its own, above the bars
    assert configured.getvalue() == "after the bars\n"  # once they are gone, the stream it was given
