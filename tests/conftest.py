"""Session-wide test isolation: Prefect state, result storage and offline settings live in a tmp dir."""

import atexit
import fcntl
import os
import random
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import pytest
import websockets.asyncio.connection
import websockets.client
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

from flows.cli.process import stop_prefect_threads
from tests.prefect_db import TEMPLATE_VARIABLE, seed, start_template

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
# Local Dask clusters (read from the environment by every process they start): a loaded machine may take
# longer than Dask's 30 s to connect a worker, which then never joins and its tasks wait for good.
os.environ.setdefault("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "600s")
os.environ.setdefault("DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP", "600s")
# Property tests: every failing example hypothesis finds is kept in the repository and replayed first on
# every later run; no deadline, as the suite must pass on a machine three times busier than a quiet one
# (time bounds are checked by counting work, not by the clock). HYPOTHESIS_MAX_EXAMPLES raises the count.
settings.register_profile(
    "threadmed",
    database=DirectoryBasedExampleDatabase(Path(__file__).parent / "hypothesis-examples"),
    deadline=None,
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "100")),
)
settings.load_profile("threadmed")
# websockets draws its ping payloads and reconnect delays from the global `random`. Prefect's events client
# keeps a websocket open in a background thread of every worker that ran a flow, and a ping landing while
# hypothesis generated an example changed that state: hypothesis then warned "Do not use the `random` module
# inside strategies". A generator of their own changes nothing else.
for websockets_module in (websockets.asyncio.connection, websockets.client):
    websockets_module.random = random.Random()
# Registered before Prefect's own exit hooks, so it runs after them, as in the `threadmed` command: Prefect's
# loop threads alive at exit would keep DuckDB objects alive and make DuckDB print `nanobind: leaked`.
atexit.register(stop_prefect_threads)


def pytest_configure(config: pytest.Config) -> None:
    """The run's first process starts making the migrated Prefect database its servers' databases copy."""
    if not hasattr(config, "workerinput") and TEMPLATE_VARIABLE not in os.environ:
        start_template(_PREFECT_STATE / "template")


@pytest.fixture(scope="session", autouse=True)
def seeded_prefect_home() -> None:
    """This process's Prefect home holds the migrated database before a server is started on it."""
    seed(_PREFECT_STATE / "home" / "prefect.db")


@pytest.fixture(scope="session")
def prefect_harness() -> Iterator[None]:
    """A temporary Prefect API for tests that run flows (started once per session), its database a copy of
    the migrated one: Prefect's harness puts its database in a new folder made by its module's `mkdtemp`."""
    from prefect.testing import utilities
    from prefect.testing.utilities import prefect_test_harness

    def seeded_folder() -> str:
        folder = tempfile.mkdtemp()
        seed(Path(folder) / "prefect-test.db")
        return folder

    with (
        mock.patch.object(utilities, "mkdtemp", seeded_folder),
        prefect_test_harness(server_startup_timeout=SERVER_STARTUP_TIMEOUT_S),
    ):
        yield


@contextmanager
def dask_cluster_turn() -> Iterator[None]:
    """Hold the test run's one turn to run local Dask clusters (a file lock shared by the xdist workers):
    a full run once hung with two clusters of two tests started at once, one of whose workers never came."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getpid()))
    with (Path(tempfile.gettempdir()) / f"threadmed-tests-dask-{run}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or when its process dies
        yield


@pytest.fixture
def one_dask_cluster_at_a_time() -> Iterator[None]:
    """A test starting a local Dask cluster runs while no other test's cluster does."""
    with dask_cluster_turn():
        yield


@pytest.fixture(scope="module")
def one_dask_cluster_at_a_time_in_module() -> Iterator[None]:
    """A module whose tests start local Dask clusters (or share one) runs while no other's cluster does."""
    with dask_cluster_turn():
        yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist's work stealing each worker starts with an equal run of the collection, in order, and an
    idle one steals the tail of the longest queue. So each run starts with its share of the end-to-end test
    files (marked slow), then other tests in their order: the longest start at once on every worker instead
    of queuing behind each other on the first (the real fine-tune is collected late, under tests/tasks)."""
    workers = getattr(config, "workerinput", {}).get("workercount", 1)
    items[:] = [item for run in worker_runs(items, workers) for item in run]


def starts_later(file_items: list[pytest.Item]) -> bool:
    return file_items[0].get_closest_marker("starts_first") is None


def dealing_order(file_items: list[pytest.Item]) -> tuple[bool, int]:
    return starts_later(file_items), -len(file_items)


def run_order(file_items: list[pytest.Item]) -> tuple[bool, int]:
    return starts_later(file_items), len(file_items)


def worker_runs(items: list[pytest.Item], workers: int) -> list[list[pytest.Item]]:
    """`items` in `workers` runs of the sizes work stealing sends (N // workers, then a share of the rest).
    The slow files are dealt out to the run with the fewest slow tests: first those marked `starts_first`
    (tests that run one after another for minutes, on one shared server: the suite's longest chains, one per
    run, each counted as its run's share of the slow tests), then the others largest first. In each run the
    `starts_first` files come first, then the files with fewest tests (the long single end-to-end tests)."""
    slow_files: dict[Path, list[pytest.Item]] = {}
    for item in items:
        if item.get_closest_marker("slow") is not None:
            slow_files.setdefault(item.path, []).append(item)

    # A chain weighs a run's whole share of the slow tests: it is minutes long, not its few tests' worth, and
    # counting its tests gave its run the long single tests too.
    share = sum(map(len, slow_files.values())) / workers

    def weight(file_items: list[pytest.Item]) -> float:
        return len(file_items) if starts_later(file_items) else max(share, len(file_items))

    dealt: list[list[list[pytest.Item]]] = [[] for _ in range(workers)]
    for file_items in sorted(slow_files.values(), key=dealing_order):
        min(dealt, key=lambda files: sum(map(weight, files))).append(file_items)
    runs = [[item for file_items in sorted(files, key=run_order) for item in file_items] for files in dealt]
    others = [item for item in items if item.get_closest_marker("slow") is None]
    left = len(items)
    for index, run in enumerate(runs):
        size = left // (workers - index)
        left -= size
        taken = max(0, size - len(run))
        run.extend(others[:taken])
        del others[:taken]
    runs[-1].extend(others)  # what a run over its size left
    return runs
