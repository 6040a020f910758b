"""The `threadmed` app: every command group is registered, with its help."""

import re
import subprocess
import sys
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
    commands = ("synth", "build", "evaluate", "report", "demo", "snomed", "consult", "judge", "labels")
    for command in (*commands, "export", "compare", "leaderboard", "compare-release"):
        assert command in result.output
        assert runner.invoke(app, [command, "--help"]).exit_code == 0
    for group, commands in {
        "snomed": ("cases", "evaluate", "report", "oracle-data", "patient-eval", "oracle-train"),
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


def test_every_command_that_makes_model_calls_takes_a_spending_cap():
    """A command that makes calls has a --dry-run estimate: each also takes --max-cost."""

    def commands(command: Any, path: str = "threadmed") -> Iterator[tuple[str, set[str]]]:
        yield path, {option for param in command.params for option in getattr(param, "opts", [])}
        for name, sub in getattr(command, "commands", {}).items():
            yield from commands(sub, f"{path} {name}")

    estimating = {
        path: options for path, options in commands(typer.main.get_command(app)) if "--dry-run" in options
    }
    assert sorted(estimating) == [
        "threadmed consult evaluate",
        "threadmed evaluate",
        "threadmed judge rerun",
        "threadmed snomed evaluate",
        "threadmed snomed oracle-data",
        "threadmed snomed patient-eval",
    ]
    assert [path for path, options in estimating.items() if "--max-cost" not in options] == []


def test_the_app_starts_without_the_libraries_only_its_commands_need():
    """Every `threadmed` command, --help included, pays for what the app imports: each of these costs 1 to 4
    seconds of CPU, so a command imports it only when it runs."""
    heavy = ("litellm", "prefect", "scipy", "matplotlib", "duckdb", "sklearn", "torch", "inspect_ai")
    script = f"import sys, flows.cli; print([name for name in {heavy!r} if name in sys.modules])"
    imported = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert imported.stdout == "[]\n"
