"""`threadmed snomed`: the SNOMED diagnosis benchmark: build a case set, evaluate clinicians, report."""

import json
from datetime import date
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from flows.cli.errors import reports_errors
from flows.cli.evaluate import (
    ApiBase,
    ApiKeyEnv,
    BatchPoll,
    BatchRoles,
    BatchWait,
    MaxConcurrency,
    MaxTokens,
    Timeout,
    batch_choices,
    call_choices,
    checked_settings,
    run_or_estimate,
    split_list,
)
from flows.cli.render import console
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings, SourceFormat
from tasks.core.preflight import UserError, check_writable_folder

app = typer.Typer(
    help="SNOMED diagnosis benchmark: a clinician model interviews a simulated Synthea patient and names its "
    "conditions as SNOMED CT codes.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
CASE_DEFAULTS = CaseSetSettings()


@app.command()
@reports_errors("out")
def cases(
    source: Annotated[
        Path,
        typer.Argument(
            help="Synthea FHIR bundle folder (*.json), Synthea CSV folder (patients.csv, ...), OMOP CDM "
            "(.duckdb file, or folder of person/condition_occurrence/... .csv or .parquet) or the "
            "reference benchmark's .json.",
            exists=True,
        ),
    ],
    out: Annotated[Path, typer.Option(help="Case set folder: cases.parquet and manifest.json.")],
    source_format: Annotated[
        str | None, typer.Option("--format", help="fhir, synthea_csv, omop or reference; default: detected.")
    ] = None,
    reference_date: Annotated[
        str | None,
        typer.Option(
            help="Read every record as of this date (YYYY-MM-DD); default: each patient's last date."
        ),
    ] = None,
    gold_scope: Annotated[
        str, typer.Option(help="all: every condition of the record; active: only those active at the date.")
    ] = CASE_DEFAULTS.gold_scope,
    gold_tags: Annotated[
        str, typer.Option(help="Comma-separated semantic tags kept in the gold set (unknown tags are kept).")
    ] = ",".join(CASE_DEFAULTS.gold_tags),
    max_observations: Annotated[
        int, typer.Option(min=0, help="Observation kinds kept per case, the latest first.")
    ] = CASE_DEFAULTS.max_observations or 0,
    train_share: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="Share of patients in the train split (the prevalence baseline's)."
        ),
    ] = CASE_DEFAULTS.train_share,
    sample: Annotated[int | None, typer.Option(min=1, help="Keep this many cases (a seeded choice).")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the split and the sample.")] = CASE_DEFAULTS.seed,
) -> None:
    """Build a case set (the `snomed-cases` flow): same input and options, same bytes."""
    from flows.snomed_cases import snomed_cases
    from tasks.benchmarks.snomed.cases.case_set import detect_source_format
    from tasks.benchmarks.snomed.cases.loading import case_set_manifest

    check_writable_folder(out, "--out")
    settings = CaseSetSettings(
        reference_date=date.fromisoformat(reference_date) if reference_date else None,
        gold_scope=gold_scope,  # type: ignore[arg-type]
        gold_tags=tuple(split_list(gold_tags) or ()),
        max_observations=max_observations,
        train_share=train_share,
        sample_size=sample,
        seed=seed,
    )
    try:  # before any flow runs: a source in no known format is one line, not a failed flow run
        chosen_format: SourceFormat = source_format or detect_source_format(source.resolve())  # type: ignore[assignment]
        snomed_cases(source=str(source), out_dir=str(out), settings=settings, source_format=chosen_format)
    except ValueError as error:  # the readers' word for input that is not what its format promises
        raise UserError(str(error)) from None
    counts = case_set_manifest(out)["counts"]
    console.print(
        f"[green]{counts['cases']:,} cases[/green] ({counts['train']:,} train, {counts['test']:,} test; "
        f"{counts['gold_codes']:,} gold codes, {counts['distinct_gold_codes']:,} distinct) written to {out}"
    )


@app.command()
@reports_errors("out")
def evaluate(
    cases_dir: Annotated[
        Path,
        typer.Option(
            "--cases",
            help="Case set folder written by `threadmed snomed cases`.",
            exists=True,
            file_okay=False,
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Run folder for the call ledger, the conversations, predictions and scores tables and "
            "manifest.json. Run the same command with the same folder again to resume: only missing calls "
            "are made."
        ),
    ],
    config: Annotated[
        Path | None,
        typer.Option(help="YAML config: see deployments/snomed.example.yaml.", exists=True, dir_okay=False),
    ] = None,
    models: Annotated[
        str | None,
        typer.Option(help="Comma-separated clinicians: config names or litellm model strings."),
    ] = None,
    patient: Annotated[
        str | None,
        typer.Option(help="The simulated patient: a litellm model string; default: the offline patient."),
    ] = None,
    epochs: Annotated[int | None, typer.Option(min=1, help="Interviews per case and clinician.")] = None,
    max_turns: Annotated[int | None, typer.Option(min=1, help="Questions before the final answer.")] = None,
    disclosure: Annotated[
        str | None, typer.Option(help="symptoms (never names a diagnosis, the default) or history.")
    ] = None,
    split: Annotated[str | None, typer.Option(help="Case split to evaluate (default test).")] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Only the first N cases of the seeded order.")
    ] = None,
    api_base: ApiBase = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: MaxConcurrency = None,
    max_tokens: MaxTokens = None,
    timeout: Timeout = None,
    batch: BatchRoles = None,
    batch_wait: BatchWait = None,
    batch_poll: BatchPoll = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print calls, tokens and dollars per model and role; call nothing."),
    ] = False,
    report: Annotated[bool, typer.Option(help="Write RUN_DIR/report at the end.")] = True,
) -> None:
    """Interview every case's patient with every clinician and score the codes (the `snomed-evaluate` flow).

    Every call is kept in RUN_DIR/ledger: re-run the same command to finish a run after a crash or an
    outage; nothing already paid is asked again. Exits 1 if calls failed.
    """
    from tasks.benchmarks.snomed.benchmark import SNOMED
    from tasks.benchmarks.snomed.cases.loading import check_case_set
    from tasks.benchmarks.snomed.config import SnomedConfig
    from tasks.evals.config import RunOverrides, resolve_settings

    check_case_set(cases_dir)
    chosen = {"epochs": epochs, "max_turns": max_turns, "disclosure": disclosure}
    overrides = RunOverrides(
        models=split_list(models),
        roles={"patient": patient} if patient else {},
        settings={name: value for name, value in chosen.items() if value is not None},
        split=split,
        limit=limit,
        **call_choices(api_base, api_key_env, max_concurrency, max_tokens, timeout),
        **batch_choices(batch, batch_wait, batch_poll),
    )
    settings = checked_settings(
        lambda: resolve_settings(
            dataset_dir=cases_dir,
            run_dir=out,
            config_file=config,
            overrides=overrides,
            config_model=SnomedConfig,
        )
    )

    def run_flow():
        from flows.snomed_evaluate import snomed_evaluate

        return snomed_evaluate(
            cases_dir=str(cases_dir),
            run_dir=str(out),
            config=settings.config,
            report=report,
            return_state=True,
        )

    run_or_estimate(SNOMED, settings, out, dry_run, run_flow)
    if report and not dry_run:
        print_snomed_report(out / "report", console)


@app.command("report")
@reports_errors("out", "lake")
def report_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Run folder(s) of `threadmed snomed evaluate`; runs over the same case set merge into one.",
            exists=True,
            file_okay=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(help="Report folder. Default: RUN_DIR/report, or FIRST_RUN_DIR/report-merged."),
    ] = None,
    lake: Annotated[Path, typer.Option(help="Data lake where the flow run's manifest is recorded.")] = Path(
        "data_lake"
    ),
    resamples: Annotated[int | None, typer.Option(min=100, help="Bootstrap resamples per interval.")] = None,
    seed: Annotated[
        int | None, typer.Option(help="Bootstrap seed: the same seed, the same intervals.")
    ] = None,
) -> None:
    """metrics.json, report.md, figures and index.html (with a conversation browser) from stored runs."""
    from flows.cli.report import run_report_flow
    from flows.snomed_report import snomed_report
    from tasks.benchmarks.snomed.report import ReportSettings, check_run_folder

    chosen = {"n_resamples": resamples, "seed": seed}
    settings = ReportSettings(**{name: value for name, value in chosen.items() if value is not None})
    report_dir = run_report_flow(run_dirs, out, lake, check_run_folder, snomed_report, settings)
    print_snomed_report(report_dir, Console())


def print_snomed_report(report_dir: Path, to: Console) -> None:
    """The report's results table, its notes (leaks, failures) and where its files are."""
    from flows.cli.render import COMPACT
    from tasks.benchmarks.snomed.tables import report_notes, terminal_table
    from tasks.report.tables import table_rich

    metrics = json.loads((report_dir / "metrics.json").read_text())
    to.print(table_rich(terminal_table(metrics), **COMPACT))
    for note in report_notes(metrics):
        to.print(f"[yellow]{escape(note)}[/yellow]")
    for name in ("report.md", "index.html", "metrics.json"):
        to.print(f"  {report_dir / name}")
