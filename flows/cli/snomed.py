"""`threadmed snomed`: the SNOMED diagnosis benchmark: build a case set, evaluate clinicians, report."""

from datetime import date
from pathlib import Path
from typing import Annotated, Any, get_args

import typer
from rich.console import Console

from flows.cli.case_sets import CaseSetCommand, case_set_commands
from flows.cli.errors import reports_errors, warn
from flows.cli.evaluate import split_list
from flows.cli.render import command_group, console
from flows.cli.server_launch import start_temporary_server
from flows.cli.snomed_oracle import oracle_data, patient_eval
from flows.cli.snomed_train import oracle_train
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings, SourceFormat
from tasks.core.preflight import UserError, check_writable_folder

app = command_group(
    "SNOMED diagnosis benchmark: a clinician model interviews a simulated Synthea patient and names its "
    "conditions as SNOMED CT codes."
)
CASE_DEFAULTS = CaseSetSettings()
app.command("oracle-data")(oracle_data)
app.command("patient-eval")(patient_eval)
app.command("oracle-train")(oracle_train)

SNOMED_COMMANDS = CaseSetCommand(
    "snomed", solvers="clinicians", epoch="interviews", browser="a conversation browser"
)


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
    start_temporary_server()  # while the flow is imported
    from flows.snomed_cases import snomed_cases

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


@case_set_commands(app, SNOMED_COMMANDS)
def evaluate_options(
    patient: Annotated[
        str | None,
        typer.Option(help="The simulated patient: a litellm model string; default: the offline patient."),
    ] = None,
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
    patient_prompt: Annotated[
        str | None,
        typer.Option(
            help="An LLM patient's prompt: a file, or the name of one in tasks/benchmarks/snomed/prompts/: "
            "oracle_patient_v1 (the trained oracle's, the one to serve it with), patient_lay_v1, patient_v1; "
            "default: the one of --patient-prompt-form."
        ),
    ] = None,
) -> tuple[dict[str, str], dict[str, Any]]:
    """Interview every case's patient with every clinician and score the codes (the `snomed-evaluate` flow).

    Every call is kept in RUN_DIR/ledger: re-run the same command to finish a run after a crash or an
    outage; nothing already paid is asked again. Exits 1 if calls failed, 75 if batches (--batch) are still
    in flight, 3 if the spending cap (--max-cost) stopped it.
    """
    from tasks.benchmarks.snomed.config import patient_prompt_file

    settings = {
        "max_turns": max_turns,
        "disclosure": disclosure,
        "patient_prompt_form": patient_prompt_form,
        "patient_prompt": patient_prompt_file(patient_prompt) if patient_prompt else None,
    }
    return {"patient": patient} if patient else {}, settings


def print_snomed_report(report_dir: Path, to: Console = console) -> None:
    """The report's results table, its notes (leaks, failures) and where its files are."""
    from flows.cli.render import print_benchmark_report
    from tasks.benchmarks.snomed.tables import report_notes, terminal_table

    print_benchmark_report(report_dir, lambda metrics: [terminal_table(metrics)], report_notes, to)
