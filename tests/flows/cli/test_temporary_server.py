"""The temporary server's logs, in a subprocess: importing its module registers the server Prefect starts."""

import subprocess
import sys

SHUTDOWN_LOGGING = """
import asyncio, logging, sys
from flows.cli.temporary_server import POOL_LOGGER, DropShutdownCancellation
pool = logging.getLogger(POOL_LOGGER)
pool.propagate = False
pool.addHandler(logging.StreamHandler(sys.stdout))
pool.addFilter(DropShutdownCancellation())
for error in (asyncio.CancelledError("shutdown"), RuntimeError("disk full")):
    try:
        raise error
    except BaseException:
        pool.error("reset failed: %s", type(error).__name__, exc_info=True)
"""


def test_a_pool_reset_cancelled_by_shutdown_is_dropped_and_any_other_pool_error_kept():
    logged = subprocess.run(
        [sys.executable, "-c", SHUTDOWN_LOGGING], capture_output=True, text=True, timeout=120, check=True
    )
    assert [line for line in logged.stdout.splitlines() if line.startswith("reset failed")] == [
        "reset failed: RuntimeError"
    ]
