"""Session-wide test isolation: Prefect state, result storage and offline settings live in a tmp dir."""

import atexit
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.cli.process import stop_prefect_threads

# How long a temporary Prefect server (the harness's, and each `threadmed` command's in a subprocess) may
# take to start: a guard against a hang, not a speed bound. At a load average of 9.5 on two cores the
# harness's server did not answer within 90 s, and a session fixture that fails errors every test using it.
SERVER_STARTUP_TIMEOUT_S = 600
# Set before Prefect is imported anywhere: a throw-away home, no telemetry, quiet server logs.
_PREFECT_STATE = Path(tempfile.mkdtemp(prefix="threadmed-tests-"))
os.environ["PREFECT_HOME"] = str(_PREFECT_STATE / "home")
os.environ["PREFECT_RESULTS_LOCAL_STORAGE_PATH"] = str(_PREFECT_STATE / "results")
os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
os.environ["PREFECT_SERVER_LOGGING_LEVEL"] = "CRITICAL"
os.environ["PREFECT_LOGGING_LEVEL"] = "WARNING"
os.environ["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = str(SERVER_STARTUP_TIMEOUT_S)
os.environ.pop("PREFECT_API_URL", None)
(_PREFECT_STATE / "home").mkdir(parents=True, exist_ok=True)
# Registered before Prefect's own exit hooks, so it runs after them, as in the `threadmed` command: Prefect's
# loop threads alive at exit would keep DuckDB objects alive and make DuckDB print `nanobind: leaked`.
atexit.register(stop_prefect_threads)


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """A temporary Prefect API for tests that run flows (started once per session)."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=SERVER_STARTUP_TIMEOUT_S):
        yield


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """End-to-end tests (marked slow) first, each file's order kept: under xdist the longest ones start early
    instead of one of them ending the run alone (the real fine-tune is collected late, under tests/tasks)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
