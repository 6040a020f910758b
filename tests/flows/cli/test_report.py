"""`threadmed report`: a folder that is not a run, or a run given twice, is a usage error."""

import shutil

from tests.flows.cli.terminal import assert_usage_error, threadmed_here
from tests.tasks.benchmarks.threadmed.test_report import make_run


def test_report_on_a_folder_that_is_not_a_run(tmp_path):
    (tmp_path / "dumps").mkdir()
    assert_usage_error(
        threadmed_here("report", "dumps", cwd=tmp_path),
        "Invalid value for 'RUN_DIRS...': dumps is not an evaluation run (no manifest.json); "
        "pass the --out folder of `threadmed evaluate`",
    )


def test_a_run_given_twice_is_refused_however_it_is_named(tmp_path):
    run = make_run(tmp_path / "runs", run_id="r1")
    shutil.copytree(run, tmp_path / "copy")
    for first, again, folder in (
        ("runs/r1", "runs/r1", run),
        ("runs/r1", "./runs/r1/", run),
        ("runs/r1", "copy", tmp_path / "copy"),
    ):
        assert_usage_error(
            threadmed_here("report", first, again, cwd=tmp_path),
            f"Invalid value for 'RUN_DIRS...': the same run is given more than once (r1 in {run}, {folder}): "
            "give each run once",
        )
    assert not (run / "report-merged").exists()
