"""Checks made before any work starts, and the one-line messages of the errors a user must fix.

Every check raises `UserError` with a message that names the thing and the fix; the command line prints
it as one line instead of a traceback. `option` names the command-line option at fault, if any.
"""

import errno
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import ValidationError


class UserError(Exception):
    """Something the user must fix (an input, an output folder, a setting), not a bug."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


# errno -> what went wrong, and the fix; an errno missing here is unexpected and keeps its traceback.
PROBLEMS: dict[int, str] = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only file system",
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "a folder, not a file",
}
ACCESS_FIX = "give this user access (chmod/chown) or run as a user who has it"
SPACE_FIX = "free some space or choose a folder on another disk"
FIXES: dict[int, str] = {
    errno.EACCES: ACCESS_FIX,
    errno.EPERM: ACCESS_FIX,
    errno.EROFS: "choose a folder on a writable disk",
    errno.ENOSPC: SPACE_FIX,
    errno.EDQUOT: SPACE_FIX,
    errno.ENOTDIR: "choose another path",
    errno.EISDIR: "give a file",
}
# For an output folder, another folder is the simplest fix, except on a full disk.
OUTPUT_FIXES: dict[int, str] = {
    errno.EACCES: "give this user access (chmod/chown) or choose another folder",
    errno.EPERM: "give this user access (chmod/chown) or choose another folder",
    errno.ENOSPC: SPACE_FIX,
    errno.EDQUOT: SPACE_FIX,
}


def describe_os_error(error: OSError, writing: Sequence[Path] = ()) -> str | None:
    """One line naming the path, the problem and the fix; None for an errno nobody can fix from outside.

    A failed write names no file, so the folders being written (`writing`) stand in for it.
    """
    if error.errno not in PROBLEMS:
        return None
    problem, fix = PROBLEMS[error.errno], FIXES[error.errno]
    if error.filename is not None:
        return f"{error.filename}: {problem}; {fix}"
    folders = " or ".join(str(folder) for folder in writing) or "the output folders"
    return f"{problem} while writing under {folders}; {fix}"


def remedy(command: str, deployment: str) -> str:
    """A fix as the user gives it: `deployment` (a deployment's parameters) in a flow run that a deployment
    started, else `command` (the command line, or a flow called from Python)."""
    return deployment if started_by_deployment() else command


def started_by_deployment() -> bool:
    """Whether this runs in a flow run that a deployment created (`prefect deployment run`, a schedule)."""
    from prefect.runtime import deployment  # imported here: the command line starts without Prefect

    return deployment.id is not None


def validation_message(error: ValidationError) -> str:
    """A settings model's errors as one line: 'start (...) must be before end (...)', no pydantic dump."""
    parts = []
    for item in error.errors():
        text = item["msg"].removeprefix("Value error, ")
        parts.append(f"{'.'.join(map(str, item['loc']))}: {text}" if item["loc"] else text)
    return "; ".join(parts)


def check_readable_files(paths: Iterable[str], option: str) -> None:
    """Open every input once, so an unreadable one stops the command before any work starts."""
    for path in paths:
        try:
            with open(path, "rb"):
                pass
        except OSError as error:
            raise UserError(describe_os_error(error) or f"{path}: {error.strerror}", option) from error


def check_writable_folder(folder: Path, option: str) -> None:
    """Raise unless `folder` exists or can be created, and files can be written in it. Leaves no trace.

    The probe creates and removes a folder in `folder` or its nearest existing parent: permission bits
    alone would not show a read-only mount, nor what root may do.
    """
    existing = folder
    try:
        existing = next(path for path in (folder, *folder.parents) if path.exists())
        if not existing.is_dir():
            raise UserError(f"{folder}: {existing} is a file, not a folder; choose another folder", option)
        os.rmdir(tempfile.mkdtemp(prefix=".threadmed-write-check-", dir=existing))
    except OSError as error:
        code = error.errno or 0
        problem = PROBLEMS.get(code, error.strerror)
        fix = OUTPUT_FIXES.get(code, "choose another folder")
        raise UserError(f"{folder}: {problem} writing in {existing}; {fix}", option) from error
