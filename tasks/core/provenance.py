"""Where an output came from: git commit, package versions, and the per-run manifest of every flow."""

import json
import re
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from prefect import task
from prefect.runtime import flow_run

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CORE_PACKAGES = ("prefect", "duckdb", "pyarrow", "zstandard", "orjson", "tiktoken", "litellm")


def git_commit() -> str | None:
    """The project's HEAD commit, or None outside a git checkout."""
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return completed.stdout.strip()


def package_versions(names: Iterable[str] = CORE_PACKAGES) -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@task(name="write-run-manifest")
def write_run_manifest(lake_dir: str, flow_name: str, settings: dict[str, Any]) -> str:
    """Record a flow run's settings and provenance in `<lake>/_runs/<flow>/<run id>.json`; return its path."""
    run_id = str(flow_run.get_id() or "local")
    path = Path(lake_dir) / "_runs" / flow_name / f"{run_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    manifest = {
        "flow": flow_name,
        "flow_run_id": run_id,
        "flow_run_name": flow_run.get_name(),
        "written_at": utc_now(),
        "git_commit": git_commit(),
        "packages": package_versions(),
        "settings": settings,
    }
    path.write_text(json.dumps(manifest, indent=2, default=str))
    return str(path)


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key (lowercase letters, digits and dashes only) from free text."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")
