"""Where an output came from: git state, package versions, and the per-run manifest of every flow."""

import hashlib
import json
import os
import platform
import re
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from prefect import task
from prefect.runtime import flow_run

from tasks.core.files import write_json_atomic

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CORE_PACKAGES = ("prefect", "duckdb", "pyarrow", "zstandard", "orjson", "tiktoken", "litellm")
PROJECT = "threadmed-qa"  # this project's distribution name (pyproject.toml)


def _git(*args: str) -> str | None:
    """The output of a git command in the project, or None outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), *args], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_commit() -> str | None:
    """The project's HEAD commit, or None outside a git checkout."""
    return _git("rev-parse", "HEAD")


def git_state() -> dict[str, Any]:
    """The commit of the code that ran, and whether the tree had uncommitted changes (None outside git)."""
    status = _git("status", "--porcelain")
    return {"commit": git_commit(), "dirty": None if status is None else bool(status)}


def package_versions(names: Iterable[str] = CORE_PACKAGES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def code_provenance(packages: Iterable[str]) -> dict[str, Any]:
    """The manifest entries naming the code that ran: the project's version, package versions, Python
    version, git state."""
    return {
        "project": {"name": PROJECT, "version": package_versions([PROJECT])[PROJECT]},
        "packages": package_versions(packages),
        "python": platform.python_version(),
        "git": git_state(),
    }


def settings_sha256(settings: dict[str, Any]) -> str:
    """The sha256 of settings as canonical JSON (sorted keys, no spaces): equal settings, equal hash."""
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@task(name="write-run-manifest")
def write_run_manifest(lake_dir: str, flow_name: str, settings: dict[str, Any]) -> str:
    """Record a flow run's settings and provenance in `<lake>/_runs/<flow>/<run id>.json`; return its path."""
    run_id = str(flow_run.get_id() or "local")
    manifest = {
        "flow": flow_name,
        "flow_run_id": run_id,
        "flow_run_name": flow_run.get_name(),
        "written_at": utc_now(),
        "git_commit": git_commit(),
        "packages": package_versions(),
        "settings": settings,
    }
    return str(write_json_atomic(Path(lake_dir) / "_runs" / flow_name / f"{run_id}.json", manifest))


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes only, at most 100) from free text."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")[:100]


# Hex digits of a folder's tag in artifact keys: two folders collide once in about four billion pairs.
FOLDER_TAG_DIGITS = 8


def folder_tag(folder: str | Path) -> str:
    """The folder's absolute path, hashed short: the same folder gives the same tag however it is spelt. The
    path is hashed as the file system's bytes: a name that is not UTF-8 reaches Python with its bytes
    escaped as lone surrogates (os.fsdecode), which `str.encode` refuses."""
    return hashlib.sha256(os.fsencode(Path(folder).resolve())).hexdigest()[:FOLDER_TAG_DIGITS]


def run_artifact_key(kind: str, run_id: str, run_dir: str | Path, *parts: str) -> str:
    """The key of a run's artifact: its run id and its folder's tag first, so that two run folders of the same
    settings (one run id) never write over each other's artifacts, while a re-run into one folder adds a
    version to the same key."""
    return artifact_key(kind, run_id, folder_tag(run_dir), *parts)
