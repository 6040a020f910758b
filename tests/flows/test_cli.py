"""The `threadmed` command line: bad input gives a clear message naming the file, not a traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tests.tasks.test_reader import write_zstd

runner = CliRunner()
THREADMED = Path(sys.executable).parent / "threadmed"


def test_every_command_has_help():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("synth", "build", "evaluate", "report", "demo"):
        assert command in result.output
        assert runner.invoke(app, [command, "--help"]).exit_code == 0


def test_a_missing_dump_is_refused_before_anything_runs(tmp_path):
    missing = str(tmp_path / "nope.zst")
    result = runner.invoke(app, ["build", "--submissions", missing, "--comments", missing, "--out", "out"])
    assert result.exit_code == 2
    assert "nope.zst: no such dump file" in " ".join(result.output.replace("│", " ").split())


@pytest.mark.usefixtures("prefect_harness")
def test_a_file_that_is_not_a_dump_fails_the_build_with_its_name(tmp_path):
    not_a_dump = tmp_path / "paper.zst"
    not_a_dump.write_text("%PDF-1.7 not a dump")
    dumps = ["--submissions", str(not_a_dump), "--comments", str(not_a_dump)]
    result = runner.invoke(
        app, ["build", *dumps, "--out", str(tmp_path / "out"), "--lake", str(tmp_path / "lake")]
    )
    assert result.exit_code == 1
    assert "paper.zst: not zstd data" in " ".join(result.output.split())
    assert not (tmp_path / "out").exists()


def test_an_unknown_answer_role_is_refused_naming_the_known_ones(tmp_path):
    dump = tmp_path / "d.zst"
    dump.write_bytes(b"")
    arguments = ["--submissions", str(dump), "--comments", str(dump), "--out", "out"]
    result = runner.invoke(app, ["build", *arguments, "--answer-roles", "physicians"])
    output = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2
    assert "unknown answer role(s) ['physicians']" in output
    assert "'physician_assistant'" in output


@pytest.fixture(scope="module")
def run_build(tmp_path_factory):
    """Run the real `threadmed build` in a subprocess (one Prefect home for the module's runs)."""
    prefect_home = tmp_path_factory.mktemp("prefect-home")
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env |= {"PREFECT_HOME": str(prefect_home), "COLUMNS": "500"}  # COLUMNS: rich wraps at 80 otherwise

    def run(folder: Path, submissions: Path, comments: Path, *options: str) -> subprocess.CompletedProcess:
        arguments = ["--submissions", str(submissions), "--comments", str(comments), "--out", "out"]
        return subprocess.run(
            [THREADMED, "build", *arguments, "--lake", "lake", *options],
            cwd=folder, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    return run


def write_ndjson(path: Path, subreddit: str) -> Path:
    path.write_text(f'{{"id":"p1","subreddit":"{subreddit}","created_utc":1451606400,"link_id":"t3_p1"}}\n')
    return path


@pytest.mark.slow
def test_an_empty_dump_fails_the_build_naming_it(tmp_path, run_build):
    comments = write_ndjson(tmp_path / "RC.ndjson", "AskDocs")
    (tmp_path / "RS.zst").write_bytes(b"")
    result = run_build(tmp_path, tmp_path / "RS.zst", comments)
    assert (result.returncode, result.stdout) == (
        1,
        f"Build failed: {tmp_path / 'RS.zst'}: empty file (0 bytes)\n",
    )
    write_zstd(tmp_path / "RS.zst", b"")
    result = run_build(tmp_path, tmp_path / "RS.zst", comments)
    assert (result.returncode, result.stdout) == (
        1, f"Build failed: {tmp_path / 'RS.zst'}: no records in this dump (nothing once decompressed)\n"
    )  # fmt: skip
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_dumps_without_the_subreddit_fail_unless_an_empty_dataset_is_allowed(tmp_path, run_build):
    submissions = write_ndjson(tmp_path / "RS.ndjson", "AskReddit")
    comments = write_ndjson(tmp_path / "RC.ndjson", "AskReddit")
    result = run_build(tmp_path, submissions, comments)
    assert (result.returncode, result.stdout) == (1, (
        "Build failed: no submissions of r/AskDocs from 2015-01-01 to 2023-07-01 (exclusive) in RS.ndjson; "
        "no comments of r/AskDocs in RC.ndjson; check --subreddit, --start and --end, or pass "
        "--allow-empty to publish an empty dataset\n"
    ))  # fmt: skip
    assert not (tmp_path / "out").exists()
    result = run_build(tmp_path, submissions, comments, "--allow-empty")
    assert result.returncode == 0
    assert "publishing an empty dataset, as allowed: no submissions of r/AskDocs" in result.stderr
    assert (tmp_path / "out/dataset/full/threads.parquet").exists()
