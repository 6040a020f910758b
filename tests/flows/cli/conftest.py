"""The `threadmed` commands these tests start share their worker's Prefect API (tests/conftest.py), so each
does not start a temporary server of its own: that start-up is most of a short command's CPU time. The tests
of the temporary server itself (test_process.py, test_temporary_server.py) keep the command's own, and those
of `threadmed server` (test_server.py) start their own."""

from pathlib import Path

import prefect.settings
import pytest

OWN_SERVER_TESTS = {"test_process.py", "test_temporary_server.py", "test_server.py"}


@pytest.fixture(autouse=True)
def shared_prefect_api(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if Path(request.node.path).name in OWN_SERVER_TESTS:
        return
    request.getfixturevalue("prefect_harness")
    monkeypatch.setenv("PREFECT_API_URL", prefect.settings.PREFECT_API_URL.value())
