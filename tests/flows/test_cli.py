"""The `threadmed` command line: bad input gives a clear message naming the file, not a traceback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import prefect.settings
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tasks.pseudonym_salt import SALT_VARIABLE
from tasks.synth import generate_dumps

ROOT = Path(__file__).resolve().parents[2]

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


def run_threadmed(*arguments: str) -> subprocess.CompletedProcess:
    """The real command in a child process, on the tests' Prefect API, with no salt in its environment."""
    env = {**os.environ, "PREFECT_API_URL": prefect.settings.PREFECT_API_URL.value(), "COLUMNS": "200"}
    env.pop(SALT_VARIABLE, None)
    command = [sys.executable, "-m", "flows.cli", *arguments]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.usefixtures("prefect_harness")
def test_build_warns_without_a_salt_and_never_writes_the_one_given(tmp_path):
    dumps = generate_dumps(tmp_path / "dumps", posts=300, seed=5)
    inputs = ["--submissions", str(dumps.files[0]), "--comments", str(dumps.files[1])]

    public = run_threadmed(
        "build", *inputs, "--out", str(tmp_path / "public"), "--lake", str(tmp_path / "lake0")
    )
    assert public.returncode == 0, public.stderr
    assert "This build is NOT safe to publish" in " ".join(public.stderr.split())
    assert json.loads((tmp_path / "public" / "build.json").read_text())["pseudonyms"]["publishable"] is False

    canary = "canary-salt-51c0ffee"
    secret = run_threadmed(
        "build",
        *inputs,
        "--out",
        str(tmp_path / "secret"),
        "--lake",
        str(tmp_path / "lake"),
        "--salt",
        canary,
    )
    assert secret.returncode == 0, secret.stderr
    assert "NOT safe to publish" not in secret.stderr and canary not in secret.stdout + secret.stderr
    assert json.loads((tmp_path / "secret" / "build.json").read_text())["pseudonyms"]["publishable"] is True
    written = [p for root in ("secret", "lake") for p in (tmp_path / root).rglob("*") if p.is_file()]
    assert [p for p in written if canary.encode() in p.read_bytes()] == []
