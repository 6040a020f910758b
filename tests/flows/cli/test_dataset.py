"""`threadmed synth` and `threadmed build`: bad input gives a clear message naming the file; each says what it
will do before its flow starts."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import prefect.settings
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tasks.data.reddit.pseudonym_salt import SALT_VARIABLE
from tasks.synth.generator import generate_dumps
from tests.flows.cli.terminal import (
    COMMAND_TIMEOUT_S,
    FLOW_STARTS,
    assert_usage_error,
    error_lines,
    threadmed,
    threadmed_here,
    threadmed_until_its_flow,
)
from tests.tasks.data.reddit.test_reader import write_zstd

ROOT = Path(__file__).resolve().parents[3]

runner = CliRunner(env={"COLUMNS": "200"})  # one message, one line, however long its path


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


def run_threadmed(*arguments: str) -> subprocess.CompletedProcess:
    """The real command in a child process, on the tests' Prefect API, with no salt in its environment."""
    env = {**os.environ, "PREFECT_API_URL": prefect.settings.PREFECT_API_URL.value(), "COLUMNS": "200"}
    env.pop(SALT_VARIABLE, None)
    command = [sys.executable, "-m", "flows.cli", *arguments]
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S
    )


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


@pytest.fixture
def empty_dump(tmp_path: Path) -> Path:
    dump = tmp_path / "d.zst"
    dump.write_bytes(b"")
    return dump


needs_setpriv = pytest.mark.skipif(
    os.geteuid() == 0 and shutil.which("setpriv") is None, reason="root without setpriv ignores chmod"
)


def test_start_after_end_is_a_usage_error(tmp_path, empty_dump):
    dumps = ["--submissions", empty_dump, "--comments", empty_dump]
    result = threadmed_here("build", *dumps, "--out", "out", "--start", "2020-01-01", "--end", "2019-01-01",
                            cwd=tmp_path)  # fmt: skip
    assert_usage_error(result, "Invalid value: start (2020-01-01) must be before end (2019-01-01)")


@needs_setpriv
def test_an_unreadable_dump_is_refused_before_anything_runs(tmp_path, empty_dump):
    empty_dump.chmod(0)
    dumps = ["--submissions", empty_dump, "--comments", empty_dump]
    result = threadmed("build", *dumps, "--out", "out", "--lake", "lake", cwd=tmp_path, unprivileged=True)
    assert_usage_error(
        result,
        f"Invalid value for '--submissions': {empty_dump}: permission denied; "
        "give this user access (chmod/chown) or run as a user who has it",
    )
    assert not (tmp_path / "lake").exists()


@needs_setpriv
def test_a_read_only_out_folder_is_refused_before_any_ingest(tmp_path, empty_dump):
    (tmp_path / "published").mkdir(mode=0o555)
    dumps = ["--submissions", empty_dump, "--comments", empty_dump]
    out = tmp_path / "published" / "build"
    result = threadmed("build", *dumps, "--out", out, "--lake", "lake", cwd=tmp_path, unprivileged=True)
    assert_usage_error(
        result,
        f"Invalid value for '--out': {out}: permission denied writing in {tmp_path / 'published'}; "
        "give this user access (chmod/chown) or choose another folder",
    )
    assert not (tmp_path / "lake").exists()


def test_an_out_folder_under_a_file_is_refused_before_any_ingest(tmp_path, empty_dump):
    """Root-proof: no permission bit is involved, a file simply cannot hold a folder."""
    (tmp_path / "notes.txt").write_text("a file, not a folder")
    dumps = ["--submissions", empty_dump, "--comments", empty_dump]
    out = tmp_path / "notes.txt" / "build"
    result = threadmed_here("build", *dumps, "--out", out, "--lake", "lake", cwd=tmp_path)
    assert_usage_error(
        result,
        f"Invalid value for '--out': {out}: {tmp_path / 'notes.txt'} is a file, not a folder; "
        "choose another folder",
    )
    assert not (tmp_path / "lake").exists()


def test_a_full_disk_names_the_folder_being_written(tmp_path):
    """/dev/full fails every write with ENOSPC, as a full disk would."""
    (tmp_path / "dumps").mkdir()
    (tmp_path / "dumps" / "AskDocs_submissions.zst").symlink_to("/dev/full")
    result = threadmed_here("synth", "--out", "dumps", "--posts", "20", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback (most recent call last) ─" not in result.stdout + result.stderr  # the CLI's own
    assert error_lines(result)[-1] == (
        "Error: no space left on device while writing under dumps; free some space or choose a folder "
        "on another disk"
    )


def run_build(folder: Path, submissions: Path, comments: Path, *options: str) -> subprocess.CompletedProcess:
    """`threadmed build` on the worker's Prefect API (conftest.py), 500 columns wide: one error, one line."""
    arguments = ["--submissions", str(submissions), "--comments", str(comments), "--out", "out"]
    return threadmed_here("build", *arguments, "--lake", "lake", *options, cwd=folder, columns=500)


def write_ndjson(path: Path, subreddit: str) -> Path:
    path.write_text(f'{{"id":"p1","subreddit":"{subreddit}","created_utc":1451606400,"link_id":"t3_p1"}}\n')
    return path


@pytest.mark.slow
def test_an_empty_dump_fails_the_build_naming_it(tmp_path):
    comments = write_ndjson(tmp_path / "RC.ndjson", "AskDocs")
    (tmp_path / "RS.zst").write_bytes(b"")
    result = run_build(tmp_path, tmp_path / "RS.zst", comments)
    assert (result.returncode, error_lines(result)[-1]) == (
        1,
        f"Error: {tmp_path / 'RS.zst'}: empty file (0 bytes)",
    )
    write_zstd(tmp_path / "RS.zst", b"")
    result = run_build(tmp_path, tmp_path / "RS.zst", comments)
    assert (result.returncode, error_lines(result)[-1]) == (
        1, f"Error: {tmp_path / 'RS.zst'}: no records in this dump (nothing once decompressed)"
    )  # fmt: skip
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_dumps_without_the_subreddit_fail_unless_an_empty_dataset_is_allowed(tmp_path):
    submissions = write_ndjson(tmp_path / "RS.ndjson", "AskReddit")
    comments = write_ndjson(tmp_path / "RC.ndjson", "AskReddit")
    result = run_build(tmp_path, submissions, comments)
    assert (result.returncode, error_lines(result)[-1]) == (1, (
        "Error: no submissions of r/AskDocs from 2015-01-01 to 2023-07-01 (exclusive) in RS.ndjson; "
        "no comments of r/AskDocs in RC.ndjson; check --subreddit, --start and --end, or pass "
        "--allow-empty to publish an empty dataset"
    ))  # fmt: skip
    assert not (tmp_path / "out").exists()
    # In a process of its own: the warning is Prefect's log line, which this process's handlers keep.
    arguments = ["--submissions", submissions, "--comments", comments, "--out", "out", "--lake", "lake"]
    result = threadmed("build", *arguments, "--allow-empty", cwd=tmp_path, env={"COLUMNS": "500"})
    assert result.returncode == 0
    assert "publishing an empty dataset, as allowed: no submissions of r/AskDocs" in result.stderr
    assert (tmp_path / "out/dataset/full/threads.parquet").exists()


def test_synth_and_build_say_what_they_will_do_before_their_flow_and_prefect_s_server_start(tmp_path):
    synth = threadmed_until_its_flow("synth", "--out", "dumps", "--posts", "40", "--seed", "3", cwd=tmp_path)
    assert synth == ["Writing dumps of 40 r/AskDocs posts (seed 3, subreddit layout) to dumps", FLOW_STARTS]
    generate_dumps(tmp_path / "dumps", posts=40, seed=3)
    sizes = {
        kind: os.path.getsize(tmp_path / "dumps" / f"AskDocs_{kind}.zst") / 2**20
        for kind in ("submissions", "comments")
    }
    dumps = ["--submissions", "dumps/AskDocs_submissions.zst", "--comments", "dumps/AskDocs_comments.zst"]
    build = threadmed_until_its_flow("build", *dumps, "--out", "out", "--start", "2019-01-01", cwd=tmp_path)
    assert build == [
        f"Building the r/AskDocs dataset of 2019-01-01..2023-07-01 from 1 submission file "
        f"({sizes['submissions']:,.1f} MiB) and 1 comment file ({sizes['comments']:,.1f} MiB) into out",
        FLOW_STARTS,
    ]
