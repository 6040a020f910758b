"""`threadmed compare`: models of stored runs side by side, with paired intervals and tests."""

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from flows.cli.errors import reports_errors
from flows.cli.report import BootstrapSeed, Lake, Level, Resamples
from flows.cli.server_launch import start_temporary_server
from tasks.core.preflight import check_writable_folder
from tasks.report.settings import CompareSettings

DEFAULTS = CompareSettings()


@reports_errors("out", "lake")
def compare(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Run folders of one benchmark over the same threads or cases (a model evaluated later in "
            "its own run compares with the others).",
            exists=True,
            file_okay=False,
        ),
    ],
    models: Annotated[
        str | None, typer.Option(help="Comma-separated models to compare, e.g. A,B. Default: every model.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Output folder. Default: FIRST_RUN_DIR/compare.")] = None,
    lake: Lake = Path("data_lake"),
    resamples: Resamples = DEFAULTS.n_resamples,
    seed: BootstrapSeed = DEFAULTS.seed,
    level: Level = DEFAULTS.level,
) -> None:
    """Compare models pair by pair on the items both scored (the `compare` flow); never calls a model.

    Per pair, the difference of the benchmark's headline scores, as its report computes them, with a
    paired bootstrap interval and a paired test (Wilcoxon signed-rank for graded scores, McNemar for
    pass/fail; for the consultation's composite and stage scores, recomputed on each resample of cases, the
    paired bootstrap's), overall and per turn group, and the items where the two differ most. Writes
    compare_differences and compare_items (Parquet and CSV), compare.md and index.html, where an item opens
    both models' answers side by side. Refuses runs of different benchmarks or over different items.
    """
    start_temporary_server()  # while the flow is imported
    from flows.cli.render import print_table
    from flows.compare import compare_runs
    from tasks.benchmarks.compare import check_comparable
    from tasks.report.compare import differences_table, read_differences

    chosen = None if models is None else [name.strip() for name in models.split(",") if name.strip()]
    check_comparable(run_dirs, chosen)
    folder = out or run_dirs[0] / "compare"
    check_writable_folder(folder, "--out")
    check_writable_folder(lake, "--lake")
    settings = CompareSettings(n_resamples=resamples, seed=seed, level=level)
    compare_dir = Path(
        compare_runs(
            run_dirs=[str(run_dir) for run_dir in run_dirs],
            out_dir=str(folder),
            models=chosen,
            lake_dir=str(lake),
            settings=settings,
        )
    )
    console = Console()
    print_table(differences_table(read_differences(compare_dir), level), console, markup=False)
    for name in ("compare.md", "index.html", "compare_differences.parquet", "compare_items.parquet"):
        console.print(f"  {compare_dir / name}", markup=False)
