"""`threadmed report`: a folder that is not a run is a usage error."""

from tests.flows.cli.terminal import assert_usage_error, threadmed


def test_report_on_a_folder_that_is_not_a_run(tmp_path):
    (tmp_path / "dumps").mkdir()
    assert_usage_error(
        threadmed("report", "dumps", cwd=tmp_path),
        "Invalid value for 'RUN_DIRS...': dumps is not an evaluation run (no manifest.json); "
        "pass the --out folder of `threadmed evaluate`",
    )
