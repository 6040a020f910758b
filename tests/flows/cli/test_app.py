"""The `threadmed` app: every command group is registered, with its help."""

from typer.testing import CliRunner

from flows.cli import app

runner = CliRunner()


def test_every_command_has_help():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("synth", "build", "evaluate", "report", "demo", "snomed"):
        assert command in result.output
        assert runner.invoke(app, [command, "--help"]).exit_code == 0
    for command in ("cases", "evaluate", "report"):
        assert runner.invoke(app, ["snomed", command, "--help"]).exit_code == 0
