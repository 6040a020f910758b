import errno
from datetime import date
from pathlib import Path

import pytest
from pydantic import ValidationError

from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.core.preflight import (
    UserError,
    check_readable_files,
    check_writable_folder,
    describe_os_error,
    remedy,
    validation_message,
)


def test_a_full_disk_names_the_file_when_the_error_does():
    error = OSError(errno.ENOSPC, "No space left on device", "lake/raw/part-0.parquet")
    assert describe_os_error(error, [Path("out")]) == (
        "lake/raw/part-0.parquet: no space left on device; free some space or choose a folder on another disk"
    )


def test_a_failed_write_names_the_folders_being_written():
    error = OSError(errno.ENOSPC, "No space left on device")
    assert describe_os_error(error, [Path("out"), Path("lake")]) == (
        "no space left on device while writing under out or lake; "
        "free some space or choose a folder on another disk"
    )


def test_permission_and_read_only_errors_say_what_to_do():
    assert describe_os_error(PermissionError(errno.EACCES, "Permission denied", "d.zst")) == (
        "d.zst: permission denied; give this user access (chmod/chown) or run as a user who has it"
    )
    assert describe_os_error(OSError(errno.EROFS, "Read-only file system", "/mnt/out")) == (
        "/mnt/out: read-only file system; choose a folder on a writable disk"
    )


def test_an_unexpected_errno_is_left_to_its_traceback():
    assert describe_os_error(OSError(errno.EIO, "Input/output error", "d.zst")) is None


def test_a_settings_error_is_one_line():
    with pytest.raises(ValidationError) as caught:
        BuildSettings(start=date(2020, 1, 1), end=date(2019, 1, 1))
    assert validation_message(caught.value) == "start (2020-01-01) must be before end (2019-01-01)"
    with pytest.raises(ValidationError) as caught:
        BuildSettings(seed="x")
    assert validation_message(caught.value) == (
        "seed: Input should be a valid integer, unable to parse string as an integer"
    )


def test_a_folder_inside_a_file_is_not_writable(tmp_path):
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(UserError) as caught:
        check_writable_folder(tmp_path / "notes.txt" / "out", "--out")
    assert (str(caught.value), caught.value.option) == (
        f"{tmp_path / 'notes.txt' / 'out'}: {tmp_path / 'notes.txt'} is a file, not a folder; "
        "choose another folder",
        "--out",
    )


def test_the_write_check_leaves_no_trace(tmp_path):
    check_writable_folder(tmp_path / "new" / "out", "--out")
    check_writable_folder(tmp_path, "--out")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_given_as_a_dump_is_refused(tmp_path):
    with pytest.raises(UserError) as caught:
        check_readable_files([str(tmp_path)], "--comments")
    assert (str(caught.value), caught.value.option) == (
        f"{tmp_path}: a folder, not a file; give a file",
        "--comments",
    )


def test_a_fix_is_told_as_a_command_line_unless_a_deployment_started_the_flow_run(monkeypatch):
    command, deployment = "threadmed build --out b", "build-dataset/adhoc --param out_dir=b"
    monkeypatch.delenv("PREFECT__RUNTIME__DEPLOYMENT__ID", raising=False)
    assert remedy(command, deployment) == command
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "00000000-0000-0000-0000-000000000001")
    assert remedy(command, deployment) == deployment
