"""`threadmed labels`: a clinician rating round over a run's judged answers: sample them into a blinded
rating page, import the raters' CSVs, or simulate a rater for a demo.

These commands read and write a few local files and call no model, so they run no Prefect flow: a flow
would add an API server's start to a command that takes a second.
"""

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from flows.cli.errors import errors, reports_errors, warn
from flows.cli.render import command_group, console
from tasks.core.preflight import UserError, check_writable_folder

app = command_group(
    "Clinician ratings of a run's judged answers: sample a blinded rating page, import the raters' "
    "CSVs (then `threadmed judge agreement`)."
)
LabelsDir = Annotated[
    Path,
    typer.Argument(help="Labels folder written by `threadmed labels sample`.", exists=True, file_okay=False),
]


@app.command()
@reports_errors("out")
def sample(
    run_dir: Annotated[
        Path,
        typer.Argument(help="A finished ThReadMed run folder (`threadmed evaluate --out`).", exists=True),
    ],
    out: Annotated[Path, typer.Option(help="Labels folder to write: sample.json, items.parquet, rate.html.")],
    n: Annotated[
        int, typer.Option(min=1, help="Items to sample (all judged turns when the run has fewer).")
    ] = 200,
    seed: Annotated[int, typer.Option(help="Sampling seed: the same run and seed give the same page.")] = 0,
) -> None:
    """Draw a stratified sample of the run's judged turns and write its blinded rating page.

    Strata are (turn group, model, judge grade), each offered an equal share of --n; a stratum smaller than
    its share gives all it has and the rest is shared among the others, so rare grades and late turns
    appear. The page (rate.html) shows no model, run or judge grade; send it to each rater, who opens it in
    a browser (no server needed), rates and exports a CSV for `threadmed labels import`.
    """
    from tasks.benchmarks.threadmed.labels.sample import build_sample
    from tasks.benchmarks.threadmed.labels.store import check_same_sample, write_sample
    from tasks.benchmarks.threadmed.run_data import check_run_folder

    try:
        check_run_folder(run_dir)
    except UserError as error:
        raise UserError(str(error), "RUN_DIR") from None
    check_writable_folder(out, "--out")
    drawn = build_sample(run_dir, n, seed)
    check_same_sample(out, drawn)
    if drawn.info["n"] < n:
        warn(f"{run_dir} has {drawn.info['n']} judged turns, fewer than --n {n}: the sample holds them all")
    write_sample(out, drawn)
    console.print(
        f"Sampled {drawn.info['n']} judged turns of run {escape(drawn.info['run_id'])} in "
        f"{len(drawn.info['strata'])} strata (seed {seed}).\n"
        f"Rating page: {escape(str(out / drawn.info['page']))}"
    )


@app.command("import")
@reports_errors()
def import_ratings(
    labels_dir: LabelsDir,
    csv_files: Annotated[
        list[Path],
        typer.Argument(
            help="CSVs exported by the rating page (or `labels simulate`).", exists=True, dir_okay=False
        ),
    ],
    replace: Annotated[
        bool,
        typer.Option(help="Replace the stored ratings of the raters in these files, instead of refusing."),
    ] = False,
) -> None:
    """Check every row of the raters' CSVs and store them in LABELS_DIR/ratings.parquet.

    A row must name an item of the sample, a grade of 0, 0.5 or 1, a rater, a rater_kind (clinician or
    simulated) and an ISO 8601 UTC time; a rater may rate an item once and is one kind, its stored ratings'
    too. Every bad row is reported (file, line, fix) and then nothing is written (exit 2).
    """
    from tasks.benchmarks.threadmed.labels.folder import read_items
    from tasks.benchmarks.threadmed.labels.ratings import (
        check_ratings,
        merged_ratings,
        rating_counts,
        read_csv_texts,
        read_ratings,
        write_ratings,
    )

    item_ids = set(read_items(labels_dir)["item_id"].to_pylist())
    stored = read_ratings(labels_dir)
    texts, unreadable = read_csv_texts(csv_files)
    checked = check_ratings(texts, item_ids, stored.to_pylist(), replace)
    if unreadable or checked.errors:
        for message in [*unreadable, *checked.errors]:
            errors.print(f"[red]Error:[/red] {escape(message)}", soft_wrap=True)
        errors.print(f"Nothing imported: {len(unreadable) + len(checked.errors)} errors.")
        raise typer.Exit(2)
    ratings = merged_ratings(stored, checked.rows)
    write_ratings(labels_dir, ratings)
    counts, shared = rating_counts(ratings)
    console.print(f"Imported {len(checked.rows)} ratings into {escape(str(labels_dir / 'ratings.parquet'))}.")
    for count in counts:
        console.print(
            f"  {escape(count.rater)} ({count.rater_kind}): {count.n_rated} of {len(item_ids)} items"
        )
    console.print(f"Items rated by 2 raters or more: {shared} of {len(item_ids)}.")


@app.command()
@reports_errors("out")
def simulate(
    labels_dir: LabelsDir,
    rater: Annotated[str, typer.Option(help="The simulated rater's id (it also seeds its errors).")],
    out: Annotated[Path, typer.Option(help="CSV to write, as the rating page exports it.", dir_okay=False)],
    error_rate: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Chance that a grade is replaced by another, uniformly.")
    ] = 0.15,
    seed: Annotated[int, typer.Option(help="Seed of the simulated errors (with the rater id).")] = 0,
) -> None:
    """Rate every item of the sample as a SIMULATED rater, for a demo or a test; not a clinician.

    Its grade is its own offline heuristic: the F1 of the content words of the physician's and the model's
    answers, 1 at 0.25 or more, 0.5 at 0.12 or more, else 0; then, with probability --error-rate, another
    grade drawn uniformly (seeded by --seed and --rater). Every row says rater_kind `simulated` and its
    note says how the grade was made. Import the CSV with `threadmed labels import`.
    """
    from tasks.benchmarks.threadmed.labels.folder import utc_text
    from tasks.benchmarks.threadmed.labels.ratings import rater_problem
    from tasks.benchmarks.threadmed.labels.simulate import simulated_csv
    from tasks.benchmarks.threadmed.labels.store import read_item_texts
    from tasks.core.files import write_text_atomic

    if (problem := rater_problem(rater.strip())) is not None:
        raise UserError(problem, "--rater")
    items = read_item_texts(labels_dir)
    csv_text = simulated_csv(items, rater.strip(), error_rate, seed, utc_text(datetime.now(UTC)))
    write_text_atomic(out, csv_text)
    console.print(f"Simulated rater {escape(rater)} graded {len(items)} items: {escape(str(out))}")
