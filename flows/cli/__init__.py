"""`threadmed`: the command line. Every command is a thin wrapper that runs a Prefect flow.

One module per command group (dataset: synth and build; evaluate; report; demo; snomed); what they print is
drawn in render.py; process.py runs the app as a process (Ctrl-C, the temporary server, the exit);
prefect_env.py decides its Prefect settings.
"""

import typer

from flows.cli import compare, consult, dataset, demo, evaluate, export, judge, labels, report, server, snomed
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
app.add_typer(server.app, name="server")


def main() -> None:
    """The `threadmed` command (pyproject.toml): the app, with the project's Prefect settings (set before
    anything imports Prefect, which reads them once), Ctrl-C, its server and its exit handled."""
    from flows.cli.prefect_env import prepare
    from flows.cli.process import run

    prepare()
    run(app)
