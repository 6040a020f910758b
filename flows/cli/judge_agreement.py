"""`threadmed judge agreement`: each run's judge against clinicians' ratings; raters against raters."""

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from flows.cli.errors import reports_errors
from flows.cli.server_launch import start_temporary_server
from tasks.benchmarks.threadmed.agreement_settings import AgreementSettings
from tasks.core.preflight import check_writable_folder

DEFAULTS = AgreementSettings()


@reports_errors("out", "lake")
def agreement(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="The sampled run and runs re-judged from it (`threadmed judge rerun`): each is one judge.",
            exists=True,
            file_okay=False,
        ),
    ],
    labels: Annotated[
        Path,
        typer.Option(
            help="Labels folder of `threadmed labels sample`, with the ratings of `threadmed labels import`.",
            exists=True,
            file_okay=False,
        ),
    ],
    out: Annotated[Path | None, typer.Option(help="Output folder. Default: LABELS/agreement.")] = None,
    lake: Annotated[Path, typer.Option(help="Data lake where the flow run's manifest is recorded.")] = Path(
        "data_lake"
    ),
    seed: Annotated[
        int, typer.Option(help="Bootstrap seed: the same seed gives the same intervals.")
    ] = DEFAULTS.seed,
    resamples: Annotated[int, typer.Option(min=100, help="Bootstrap resamples per interval.")] = (
        DEFAULTS.n_resamples
    ),
) -> None:
    """Measure each run's judge against every rater and the raters' consensus, and the raters against each
    other (the ceiling), with bootstrap intervals over the sampled answers (the `judge-agreement` flow).

    Never calls a model. Writes agreement.json, agreement.md, a CSV per table and fig_agreement.png: Cohen's
    kappa (unweighted, linear, quadratic), ordinal Krippendorff's alpha, exact agreement and confusion counts,
    by turn group, model and answer length; the paper's metrics on the human grades beside the judge's; a
    length check; and each judge's drift between its samples (runs at other params or epochs).
    """
    start_temporary_server()  # while the flow is imported
    from flows.cli.render import print_table
    from flows.judge_agreement import judge_agreement
    from tasks.benchmarks.threadmed.agreement import check_agreement_inputs, default_out_dir
    from tasks.benchmarks.threadmed.agreement_tables import summary_table

    check_agreement_inputs(run_dirs, labels)
    check_writable_folder(out or default_out_dir(labels), "--out")
    check_writable_folder(lake, "--lake")
    folder = Path(
        judge_agreement(
            run_dirs=[str(run_dir) for run_dir in run_dirs],
            labels_dir=str(labels),
            out_dir=None if out is None else str(out),
            lake_dir=str(lake),
            settings=AgreementSettings(n_resamples=resamples, seed=seed),
        )
    )
    result = json.loads((folder / "agreement.json").read_text())
    console = Console()
    print_table(summary_table(result), console, markup=False)
    for note in result["notes"]:
        console.print(f"[yellow]Note:[/yellow] {note}", soft_wrap=True, markup=True)
    for name in ("agreement.md", "agreement.json", "fig_agreement.png"):
        console.print(f"  {folder / name}")
