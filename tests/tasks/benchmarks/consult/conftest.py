"""The hand-made consultation runs of report_fixtures.py as fixtures: their folders and their metrics."""

from pathlib import Path
from typing import Any

import pytest

from tasks.benchmarks.consult.report import compute_metrics
from tasks.benchmarks.consult.run_data import load_runs
from tests.tasks.benchmarks.consult.report_fixtures import SETTINGS, make_run


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    return [make_run(tmp_path, "r1", ["alpha"]), make_run(tmp_path, "r2", ["beta"])]


@pytest.fixture
def metrics(runs: list[Path]) -> dict[str, Any]:
    return compute_metrics(load_runs(runs), SETTINGS)[0]
