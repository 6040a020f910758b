"""`threadmed export` (in this process: no flow): the files it names and how to open them; a bad call is
refused in one line."""

from tests.flows.cli.terminal import assert_usage_error, threadmed_here
from tests.tasks.export.runs import make_runs


def test_export_names_its_files_and_how_to_open_them(tmp_path) -> None:
    run = make_runs(tmp_path / "runs")["snomed"]
    result = threadmed_here("export", run, "--out", "logs", "--format", "inspect", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    files = sorted(path.name for path in (tmp_path / "logs").glob("*.eval"))
    assert len(files) == 2
    lines = result.stdout.splitlines()
    assert lines[0] == "Run r1 (SNOMED diagnosis): 6 samples of 2 models, exported to:"
    assert sorted(line.strip().removeprefix("logs/") for line in lines[1:3]) == files
    assert lines[3:] == ["Open them in Inspect's log viewer: inspect view --log-dir logs"]


def test_a_missing_run_folder_and_an_unknown_format_are_refused(tmp_path) -> None:
    assert_usage_error(
        threadmed_here("export", "nowhere", "--out", "x", cwd=tmp_path),
        "Invalid value for 'RUN_DIR': dir 'nowhere' does not exist.",
    )
    (tmp_path / "run").mkdir()
    assert_usage_error(
        threadmed_here("export", "run", "--out", "x", "--format", "xml", cwd=tmp_path),
        "Invalid value for '--format': Value error, 'xml' is not one of 'inspect', 'parquet', 'csv'.",
    )
    assert not (tmp_path / "x").exists()
