"""Serve every deployment of prefect.yaml from this process, for people who run no worker.

    PREFECT_API_URL=http://127.0.0.1:4200/api python -m deployments.serve    # from the project root

Names, parameters and schedules are read from prefect.yaml, so served and worker-run deployments never
drift apart; only the work pool is left out: this process polls for runs and executes them itself.
Serving replaces worker-run deployments of the same names. Ctrl-C stops it and pauses the schedules.
Its flow runs send heartbeats as often as prefect.yaml's work pool says, so deployments/dead_runs.py
finds dead ones here too.
"""

import importlib
from pathlib import Path
from typing import Any

import yaml
from prefect import Flow, serve
from prefect.deployments.runner import RunnerDeployment
from prefect.schedules import Cron

from deployments.dead_runs import project_heartbeat_seconds

PREFECT_YAML = Path(__file__).resolve().parents[1] / "prefect.yaml"


def load_flow(entrypoint: str) -> Flow:
    """`flows/report.py:report_runs` -> that flow, imported as a module of this project."""
    path, _, name = entrypoint.partition(":")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    return getattr(module, name)


def to_runner_deployment(spec: dict[str, Any]) -> RunnerDeployment:
    """One deployment of prefect.yaml, served: the same name, description, tags, parameters and crons."""
    schedules = [
        Cron(schedule["cron"], timezone=schedule.get("timezone"), active=schedule.get("active", True))
        for schedule in spec.get("schedules") or []
    ]
    return load_flow(spec["entrypoint"]).to_deployment(
        name=spec["name"],
        description=spec.get("description"),
        tags=spec.get("tags"),
        parameters=spec.get("parameters"),
        schedules=schedules,
        enforce_parameter_schema=spec.get("enforce_parameter_schema", True),
    )


def project_deployments(prefect_yaml: Path = PREFECT_YAML) -> list[RunnerDeployment]:
    return [to_runner_deployment(spec) for spec in yaml.safe_load(prefect_yaml.read_text())["deployments"]]


if __name__ == "__main__":
    serve(*project_deployments(), heartbeat_seconds=project_heartbeat_seconds())
