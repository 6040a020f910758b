"""`threadmed`: the command line. Every command is a thin wrapper that runs a Prefect flow.

One module per command group (dataset: synth and build; evaluate; report; demo; snomed); what they print is
drawn in render.py; process.py runs the app as a process (Ctrl-C, the temporary server, the exit).
"""

import os

# Set before anything imports Prefect, which reads its settings once, at import; the user's settings win.
# Telemetry would fail (and log an error) offline; a loaded machine needs time to start the API.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")

import typer

from flows.cli import compare, consult, dataset, demo, evaluate, export, judge, labels, report, snomed
from flows.cli.leaderboard import leaderboard
from flows.cli.release import compare_release

app = typer.Typer(
    help="ThReadMed-QA: rebuild the multi-turn r/AskDocs benchmark from Pushshift dumps; evaluate LLMs.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
)
for command in (dataset.synth, dataset.build, demo.demo, evaluate.evaluate, report.report, export.export):
    app.command()(command)
app.command()(compare.compare)
app.command()(leaderboard)
app.command()(compare_release)
app.add_typer(snomed.app, name="snomed")
app.add_typer(consult.app, name="consult")
app.add_typer(judge.app, name="judge")
app.add_typer(labels.app, name="labels")


def main() -> None:
    """The `threadmed` command (pyproject.toml): the app, with Ctrl-C, its server and its exit handled."""
    from flows.cli.process import run

    run(app)
