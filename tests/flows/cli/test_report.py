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


def test_what_the_report_will_do_is_its_first_line_before_the_flow_runs(tmp_path, monkeypatch):
    make_run(tmp_path / "runs", run_id="r1")
    said_before_the_flow = []

    def report_flow(run_dirs, out_dir, lake_dir, settings):
        said_before_the_flow.append(run_dirs)
        return str(tmp_path / "runs" / "r1" / "report")

    monkeypatch.setattr("flows.report.report_runs", report_flow)
    monkeypatch.setattr("flows.cli.report.print_report_summary", lambda report_dir, console: None)
    result = threadmed_here("report", "runs/r1", cwd=tmp_path)
    assert (result.returncode, said_before_the_flow) == (0, [["runs/r1"]])
    assert result.stdout.splitlines() == [
        "Report of runs/r1 into runs/r1/report: recomputed from the stored runs, no model called"
    ]
