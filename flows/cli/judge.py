"""`threadmed judge`: the judge of stored runs as a measured instrument."""

import typer

from flows.cli.judge_agreement import agreement

app = typer.Typer(
    help="Measure the judge of stored ThReadMed runs against clinicians' ratings.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.command()(agreement)
