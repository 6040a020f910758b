"""The `report` flow and `threadmed report` on a small generated run, under a temporary Prefect API."""

import json
from pathlib import Path

import pytest
import typer
from prefect.artifacts import Artifact
from typer.testing import CliRunner

from flows.cli.report import report
from flows.report import report_runs
from tasks.benchmarks.threadmed.report import ReportSettings
from tasks.core.provenance import folder_tag
from tests.perf.bench_report import fabricate_run

pytestmark = pytest.mark.slow
TABLES = ("overall", "turn-groups", "consistency", "error-propagation", "oracle-ablation", "coverage")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return fabricate_run(tmp_path_factory.mktemp("bench"), n_threads=15)


def test_flow_writes_the_report_and_its_artifacts(
    prefect_harness: None, run_dir: Path, tmp_path: Path
) -> None:
    report_dir = Path(
        report_runs(
            run_dirs=[str(run_dir)], lake_dir=str(tmp_path / "lake"), settings=ReportSettings(n_resamples=200)
        )
    )
    assert report_dir == run_dir / "report"
    for name in ("metrics.json", "report.md", "index.html", "fig_turn_scores.png", "fig_wrong_after.png"):
        assert (report_dir / name).stat().st_size > 0
    prefix = f"report-bench-{folder_tag(report_dir)}"  # the report's run id, then its folder
    for table in TABLES:
        artifact = Artifact.get(key=f"{prefix}-{table}")
        assert artifact is not None and artifact.type == "table", table
    summary = Artifact.get(key=f"{prefix}-summary")
    assert summary is not None and "Conversational Consistency Score" in summary.data
    assert list((tmp_path / "lake" / "_runs" / "report").glob("*.json"))


def test_command_reports_into_the_given_folder(prefect_harness: None, run_dir: Path, tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(report)
    out = tmp_path / "out"
    args = [
        str(run_dir),
        "--out",
        str(out),
        "--lake",
        str(tmp_path / "lake"),
        "--resamples",
        "200",
        "--clustered",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    printed = result.output.replace("\n", "")
    assert "Overall (0-100)" in printed and "gemini/gemini-2.5-flash" in printed
    assert str(out / "index.html") in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["bootstrap"] == {
        "resamples": 200,
        "seed": 0,
        "level": 0.95,
        "method": "percentile, clustered by conversation",
    }
