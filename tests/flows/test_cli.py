"""The `threadmed` command line: bad input gives a clear message naming the file, not a traceback."""

import pytest
from typer.testing import CliRunner

from flows.cli import app

runner = CliRunner()


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
    assert "paper.zst: neither a zstd file nor NDJSON" in " ".join(result.output.split())
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
