"""`threadmed snomed`: the SNOMED diagnosis benchmark: build a case set, evaluate clinicians, report."""

from datetime import date
from pathlib import Path
from typing import Annotated, get_args

import typer
from rich.console import Console

from flows.cli.errors import reports_errors, warn
from flows.cli.evaluate import (
    ApiBase,
    ApiKeyEnv,
    BatchPoll,
    BatchRoles,
    BatchWait,
    CaseSetRun,
    MaxConcurrency,
    MaxCost,
    MaxTokens,
    Timeout,
    batch_choices,
    call_choices,
    run_evaluate_command,
    split_list,
)
from flows.cli.render import console
from flows.cli.report import Lake, MergedReportOut, SomeResamples, SomeSeed
from flows.cli.snomed_oracle import oracle_data, patient_eval
from flows.cli.snomed_train import oracle_train
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings, SourceFormat
from tasks.core.preflight import UserError, check_writable_folder

app = typer.Typer(
    help="SNOMED diagnosis benchmark: a clinician model interviews a simulated Synthea patient and names its "
    "conditions as SNOMED CT codes.",
    no_args_is_help=True,
    rich_markup_mode="rich",
)
CASE_DEFAULTS = CaseSetSettings()
app.command("oracle-data")(oracle_data)
app.command("patient-eval")(patient_eval)
app.command("oracle-train")(oracle_train)


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
    allow_empty: Annotated[
        bool, typer.Option(help="Write the case set (with a warning) even when no case has a gold code.")
    ] = False,
) -> None:
    """Build a case set (the `snomed-cases` flow): same input and options, same bytes."""
    from flows.snomed_cases import snomed_cases
    from tasks.benchmarks.snomed.cases.case_set import CASE_SET_FILES
    from tasks.benchmarks.snomed.cases.loading import case_set_manifest
    from tasks.core.files import check_replaceable_folder

    check_writable_folder(out, "--out")
    settings = CaseSetSettings(
        reference_date=parse_reference_date(reference_date),
        gold_scope=gold_scope,  # type: ignore[arg-type]
        gold_tags=tuple(split_list(gold_tags) or ()),
        max_observations=max_observations,
        train_share=train_share,
        sample_size=sample,
        seed=seed,
    )
    try:  # before any flow runs: a folder holding other files is one line, not a failed flow run
        check_replaceable_folder(out, CASE_SET_FILES)  # a rebuild replaces the folder whole
    except ValueError as error:
        raise UserError(str(error)) from None
    chosen_format = check_source(source, source_format, settings, allow_empty)
    snomed_cases(
        source=str(source),
        out_dir=str(out),
        settings=settings,
        source_format=chosen_format,
        allow_empty=allow_empty,
    )
    counts = case_set_manifest(out)["counts"]
    console.print(
        f"[green]{counts['cases']:,} cases[/green] ({counts['train']:,} train, {counts['test']:,} test; "
        f"{counts['gold_codes']:,} gold codes, {counts['distinct_gold_codes']:,} distinct) written to {out}"
    )


def parse_reference_date(text: str | None) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError as error:
        raise UserError(f"{text!r} is not a date YYYY-MM-DD ({error})", "--reference-date") from None


def check_source(
    source: Path, source_format: str | None, settings: CaseSetSettings, allow_empty: bool
) -> SourceFormat:
    """Read the source once before any flow runs, so a bad file or record is one line, not a failed flow
    run: warn of what the reader skipped and of cases without gold codes; return the source's format."""
    from tasks.benchmarks.snomed.cases.case_set import build_cases, check_gold, detect_source_format
    from tasks.benchmarks.snomed.vocabulary import derive_synthea_vocabulary

    if source_format not in (None, *get_args(SourceFormat)):
        raise UserError(f"{source_format!r} is not one of {', '.join(get_args(SourceFormat))}", "--format")
    path = source.resolve()
    try:
        chosen: SourceFormat = source_format or detect_source_format(path)  # type: ignore[assignment]
        cases, skipped = build_cases(path, chosen, settings, derive_synthea_vocabulary(), allow_empty=True)
        for reason, count in sorted(skipped.items()):
            warn(f"{path}: {reason}: {count:,} skipped")
        without_gold = sum(not case.gold_codes for case in cases)
        if without_gold == len(cases):
            if not allow_empty:
                check_gold(cases, path)
            warn(f"{path}: none of its {len(cases):,} cases has a gold code; written anyway (--allow-empty)")
        elif without_gold:
            warn(f"{path}: {without_gold:,} of {len(cases):,} cases have no gold code")
    except ValueError as error:  # the readers' word for input that is not what its format promises
        raise UserError(str(error)) from None
    return chosen


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
    patient_prompt_form: Annotated[
        str | None,
        typer.Option(
            help="How an LLM patient's prompt shows its conditions: lay (the default: its own lay sentences, "
            "no diagnosis name under symptoms) or named (the condition names, told not to say them; for "
            "comparison). Recorded in manifest.json and the report."
        ),
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
    max_cost: MaxCost = None,
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
    from tasks.evals.config import RunOverrides

    check_case_set(cases_dir)
    chosen = {
        "epochs": epochs,
        "max_turns": max_turns,
        "disclosure": disclosure,
        "patient_prompt_form": patient_prompt_form,
    }
    overrides = RunOverrides(
        models=split_list(models),
        roles={"patient": patient} if patient else {},
        settings={name: value for name, value in chosen.items() if value is not None},
        split=split,
        limit=limit,
        **call_choices(api_base, api_key_env, max_concurrency, max_tokens, timeout, max_cost),
        **batch_choices(batch, batch_wait, batch_poll),
    )
    run = CaseSetRun(cases_dir, out, config, dry_run, report)
    run_evaluate_command(
        SNOMED,
        "flows.snomed_evaluate:snomed_evaluate",
        run,
        overrides,
        lambda path: print_snomed_report(path, console),
    )


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
    out: MergedReportOut = None,
    lake: Lake = Path("data_lake"),
    resamples: SomeResamples = None,
    seed: SomeSeed = None,
) -> None:
    """metrics.json, report.md, figures and index.html (with a conversation browser) from stored runs."""
    from flows.cli.report import bootstrap_settings, run_report_flow
    from flows.snomed_report import snomed_report
    from tasks.benchmarks.snomed.report import ReportSettings, check_run_folder, check_runs

    settings = bootstrap_settings(ReportSettings, resamples, seed)
    check_runs(run_dirs)  # before the flow: runs that do not merge are one line, not a failed flow run
    report_dir = run_report_flow(run_dirs, out, lake, check_run_folder, snomed_report, settings)
    print_snomed_report(report_dir, Console())


def print_snomed_report(report_dir: Path, to: Console) -> None:
    """The report's results table, its notes (leaks, failures) and where its files are."""
    from flows.cli.render import print_benchmark_report
    from tasks.benchmarks.snomed.tables import report_notes, terminal_table

    print_benchmark_report(report_dir, lambda metrics: [terminal_table(metrics)], report_notes, to)
