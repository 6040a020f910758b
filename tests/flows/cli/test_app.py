"""The `threadmed` app: every command group is registered, with its help."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
from typer.testing import CliRunner

from flows.cli import app

ROOT = Path(__file__).resolve().parents[3]

runner = CliRunner()


def test_every_command_has_help():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("synth", "build", "evaluate", "report", "demo", "snomed", "consult", "judge", "labels"):
        assert command in result.output
        assert runner.invoke(app, [command, "--help"]).exit_code == 0
    for group, commands in {
        "snomed": ("cases", "evaluate", "report", "oracle-data", "patient-eval"),
        "judge": ("rerun", "agreement"),
        "labels": ("sample", "import", "simulate"),
    }.items():
        for command in commands:
            assert runner.invoke(app, [group, command, "--help"]).exit_code == 0, (group, command)


def help_texts(command: Any, path: str = "threadmed") -> Iterator[tuple[str, str]]:
    """(command or option, its help) over the whole command tree."""
    yield path, command.help or ""
    for param in command.params:
        yield f"{path} --{param.name}", getattr(param, "help", None) or ""
    for name, sub in getattr(command, "commands", {}).items():  # typer's own click: duck-typed
        yield from help_texts(sub, f"{path} {name}")


def test_every_file_a_help_text_names_exists():
    # A path counts as the project's file when its first folder is one of the project's (deployments/,
    # sql/, ...): RUN_DIR/report or threadmed/... are not.
    named = [
        (where, path.rstrip("."))
        for where, text in help_texts(typer.main.get_command(app))
        for path in re.findall(r"[\w.-]+(?:/[\w.-]+)+", text)
        if (ROOT / path.split("/")[0]).is_dir()
    ]
    assert ("threadmed consult evaluate --config", "deployments/consult.example.yaml") in named
    assert [(where, path) for where, path in named if not (ROOT / path).exists()] == []
