from pathlib import Path

import pytest

from tests.tasks.benchmarks.threadmed.labels.fixtures import write_labels_run


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hand-written finished run of fixtures.py (read only by the tests)."""
    return write_labels_run(tmp_path_factory.mktemp("labels-run"))
