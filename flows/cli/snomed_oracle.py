"""`threadmed snomed oracle-data` and `threadmed snomed patient-eval`: the SNOMED paper's patient oracle's
training data, and a test bench that scores any patient simulator; `oracle_demo` runs both offline."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from flows.cli.errors import reports_errors, warn
from flows.cli.evaluate import (
    ApiBase,
    ApiKeyEnv,
    BatchPoll,
    BatchWait,
    MaxConcurrency,
    MaxCost,
    MaxTokens,
    Timeout,
    batch_choices,
    call_choices,
    checked_settings,
    run_or_estimate,
    split_list,
)
from flows.cli.render import console

if TYPE_CHECKING:  # imported at run time only by the commands: Prefect takes seconds to import
    from prefect.states import State

    from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
    from tasks.benchmarks.snomed.patient_bench.config import PatientBenchConfig
    from tasks.evals.config import RunConfig, RunOverrides
    from tasks.evals.protocol import Benchmark

Cases = Annotated[
    Path,
    typer.Option(
        "--cases", help="Case set folder written by `threadmed snomed cases`.", exists=True, file_okay=False
    ),
]
Disclosure = Annotated[str, typer.Option(help="symptoms (never names a diagnosis, the default) or history.")]
Limit = Annotated[int | None, typer.Option(min=1, help="Only the first N cases, in case id order.")]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Print calls, tokens and dollars per model and role; call nothing.")
]
OFFLINE_PATIENT = "threadmed/patient"
# The oracle data's settings by the option that sets them, for a refusal naming what differs.
ORACLE_DATA_OPTIONS = {
    "models": "--teacher",
    "positives_per_case": "--positives",
    "negatives_per_case": "--negatives",
    "seed": "--seed",
    "disclosure": "--disclosure",
    "sample": "--limit (sample)",
    "max_tokens": "--max-tokens",
}


@reports_errors("out")
def oracle_data(
    cases_dir: Cases,
    out: Annotated[
        Path,
        typer.Option(
            help="Oracle data folder: chat/ and alpaca/ JSONL per split, README.md (dataset card), "
            "manifest.json and the teacher's ledger. Run the same command again to resume: only missing "
            "calls are made."
        ),
    ],
    teacher: Annotated[
        str,
        typer.Option(
            help="The teacher: a litellm model string, or threadmed/oracle-teacher (offline, deterministic, "
            "from the lay lexicon)."
        ),
    ],
    positives: Annotated[int, typer.Option(min=0, help="Positive pairs per case (the paper: 5).")] = 5,
    negatives: Annotated[int, typer.Option(min=0, help="Negative pairs per case (the paper: 2).")] = 2,
    seed: Annotated[int, typer.Option(help="Seed of the topics drawn and of the split by patient.")] = 0,
    disclosure: Disclosure = "symptoms",
    limit: Limit = None,
    api_base: ApiBase = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: MaxConcurrency = None,
    max_tokens: MaxTokens = None,
    timeout: Timeout = None,
    max_cost: MaxCost = None,
    batch: Annotated[
        str | None,
        typer.Option(
            "--batch", help="teacher: its calls go through the provider's batch API (about half price)."
        ),
    ] = None,
    batch_wait: BatchWait = None,
    batch_poll: BatchPoll = None,
    dry_run: DryRun = False,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="Replace the oracle data --out holds when it was made with other inputs (teacher, counts, "
            "seed, disclosure, limit, case set); without it such a folder is refused, naming what differs.",
        ),
    ] = False,
) -> None:
    """Write the patient oracle's training pairs: per case, positive and negative doctor questions with lay
    patient answers by the teacher, validated, split by patient (the `snomed-oracle-data` flow)."""
    from tasks.benchmarks.snomed.cases.loading import case_set_fingerprint, check_case_set
    from tasks.benchmarks.snomed.oracle.benchmark import ORACLE_DATA
    from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
    from tasks.evals.config import RunOverrides
    from tasks.evals.run_inputs import check_same_inputs

    check_case_set(cases_dir)
    roles = ["model" if role == "teacher" else role for role in split_list(batch) or []]
    overrides = RunOverrides(
        models=[teacher],
        settings={
            "positives_per_case": positives,
            "negatives_per_case": negatives,
            "seed": seed,
            "disclosure": disclosure,
        },
        limit=limit,
        **call_choices(api_base, api_key_env, max_concurrency, max_tokens, timeout, max_cost),
        **batch_choices(",".join(roles) or None, batch_wait, batch_poll),
    )

    def run_flow(config: "OracleDataConfig") -> "State":
        from flows.snomed_oracle_data import snomed_oracle_data

        return snomed_oracle_data(
            cases_dir=str(cases_dir), out_dir=str(out), config=config, return_state=True
        )

    def check_out(config: "OracleDataConfig") -> None:
        if not replace:
            fingerprint = case_set_fingerprint(cases_dir)
            check_same_inputs(out, config, fingerprint, ORACLE_DATA_OPTIONS, "oracle data")

    folders = (cases_dir, out)
    if run_command(ORACLE_DATA, OracleDataConfig, folders, overrides, dry_run, run_flow, check_out):
        print_oracle_data(out, console)


def run_command(
    bench: "Benchmark",
    config_model: type["RunConfig"],
    folders: tuple[Path, Path],
    overrides: "RunOverrides",
    dry_run: bool,
    run_flow: Callable[[Any], "State"],
    check_out: Callable[[Any], None] | None = None,
) -> bool:
    """The settings from the options (exit 2 when they are wrong), `check_out(config)` of the output folder,
    then the dry run's estimate or the flow run on (case set, output folder); True when the flow ran (exit
    1 when calls failed)."""
    from tasks.core.run_folder import check_run_folder_benchmark
    from tasks.evals.config import resolve_settings

    cases_dir, out = folders
    settings = checked_settings(
        lambda: resolve_settings(
            dataset_dir=cases_dir, run_dir=out, overrides=overrides, config_model=config_model
        )
    )
    if check_out is not None:
        check_run_folder_benchmark(out, bench.name, option="--out")  # before check_out: named as such
        check_out(settings.config)
    run_or_estimate(bench.card, lambda: bench, settings, out, dry_run, lambda: run_flow(settings.config))
    return not dry_run


def print_oracle_data(out: Path, to: Console) -> None:
    """The data folder's counts per split and kind, rejected pairs by reason, what the leak check read, and
    the offline label; a warning for each split that holds no pair, with the fix."""
    from tasks.benchmarks.snomed.oracle.splits import empty_split_reason

    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    teacher = manifest["teacher"]
    to.print(
        f"Teacher {teacher['model']}"
        + (f" ([yellow]{teacher['label']}[/yellow])" if teacher["offline"] else "")
    )
    for split, kinds in manifest["counts"]["kept"].items():
        to.print(f"  {split}: {kinds['positive']:,} positive, {kinds['negative']:,} negative pairs")
    rejected = ", ".join(f"{reason} {n:,}" for reason, n in manifest["rejected"].items()) or "none"
    to.print(f"  rejected: {rejected}")
    leak = manifest["leak_check"]
    digits = f"runs of {leak['min_digit_run']}+ digits"
    if leak["names_checked"]:
        checked = f"names ({leak['names']:,}) and codes of {leak['conditions']:,} conditions"
        to.print(f"  leak check: {checked}, {digits}")
    else:
        to.print(f"  leak check: {digits}; names allowed (history disclosure)")
    to.print(f"[green]Oracle data written to[/green] {out}")
    for split in manifest["counts"]["kept"]:
        if (reason := empty_split_reason(manifest, split)) is not None:
            warn(f"{out / 'chat' / f'{split}.jsonl'} holds 0 pairs: {reason}")


@reports_errors("out")
def patient_eval(
    cases_dir: Cases,
    patients: Annotated[
        str,
        typer.Option(
            help="Comma-separated patients, as `snomed evaluate --patient` takes them: threadmed/patient "
            "(offline), a litellm model (sent the oracle_patient_v1 prompt), a served oracle openai/<name> "
            "with --api-base."
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Run folder: the ledger, patient_answers and patient_scores (.parquet), manifest.json and "
            "report/. Run the same command again to resume."
        ),
    ],
    oracle_data: Annotated[
        Path | None,
        typer.Option(
            help="Oracle data folder (`snomed oracle-data --out`): the bench asks its test-split patients, "
            "its held-out pairs included.",
            exists=True,
            file_okay=False,
        ),
    ] = None,
    judge: Annotated[
        str | None,
        typer.Option(
            help="A litellm model that grades each answer's faithfulness to the record (default: none)."
        ),
    ] = None,
    askings: Annotated[
        int, typer.Option(min=1, help="Times each question is asked (consistency needs 2).")
    ] = 2,
    disclosure: Disclosure = "symptoms",
    patient_prompt: Annotated[
        str | None,
        typer.Option(
            help="LLM patients' prompt: a file, or the name of one in tasks/benchmarks/snomed/prompts/ "
            "(oracle_patient_v1, the default; patient_lay_v1, patient_v1)."
        ),
    ] = None,
    limit: Limit = None,
    api_base: ApiBase = None,
    api_key_env: ApiKeyEnv = None,
    max_concurrency: MaxConcurrency = None,
    max_tokens: MaxTokens = None,
    timeout: Timeout = None,
    max_cost: MaxCost = None,
    batch: Annotated[
        str | None,
        typer.Option("--batch", help="model: the patients' calls go through their provider's batch API."),
    ] = None,
    batch_wait: BatchWait = None,
    batch_poll: BatchPoll = None,
    dry_run: DryRun = False,
) -> None:
    """Ask every patient the bench's questions about every case, score the answers, compare the patients
    (the `snomed-patient-eval` flow). Exits 1 if calls failed."""
    from tasks.benchmarks.snomed.cases.loading import check_case_set
    from tasks.benchmarks.snomed.config import patient_prompt_file
    from tasks.benchmarks.snomed.patient_bench.benchmark import PATIENT_BENCH
    from tasks.benchmarks.snomed.patient_bench.config import PatientBenchConfig
    from tasks.evals.config import RunOverrides

    check_case_set(cases_dir)
    chosen = {
        "askings": askings,
        "disclosure": disclosure,
        "oracle_data": oracle_data,
        "patient_prompt": patient_prompt_file(patient_prompt) if patient_prompt else None,
    }
    overrides = RunOverrides(
        models=split_list(patients),
        settings={
            **{name: value for name, value in chosen.items() if value is not None},
            **({"judge": {"model": judge}} if judge else {}),
        },
        limit=limit,
        **call_choices(api_base, api_key_env, max_concurrency, max_tokens, timeout, max_cost),
        **batch_choices(batch, batch_wait, batch_poll),
    )

    def run_flow(config: "PatientBenchConfig") -> "State":
        from flows.snomed_patient_eval import snomed_patient_eval

        return snomed_patient_eval(
            cases_dir=str(cases_dir), run_dir=str(out), config=config, return_state=True
        )

    if run_command(PATIENT_BENCH, PatientBenchConfig, (cases_dir, out), overrides, dry_run, run_flow):
        print_bench_report(out / "report", console)


def print_bench_report(report_dir: Path, to: Console) -> None:
    """The patients side by side, and where the report's files are."""
    from flows.cli.render import COMPACT, print_table
    from tasks.benchmarks.snomed.patient_bench.report import bench_table

    metrics = json.loads((report_dir / "metrics.json").read_text(encoding="utf-8"))
    table = bench_table(metrics["patients"])
    # The caption as a paragraph of its own: under a narrow table rich would wrap it to the table's width.
    print_table(table._replace(caption=""), to, **COMPACT)
    to.print(table.caption, style="dim", markup=False)
    for name in ("report.md", "scores.csv", "metrics.json"):
        to.print(f"  {report_dir / name}")


def oracle_demo(workdir: Path, cases_dir: Path) -> None:
    """The oracle pipeline offline: oracle data from the case set by the offline teacher, then the patient
    bench on the offline patient (its held-out pairs included); prints the bench's table. Exits 1 on
    failure."""
    from flows.snomed_oracle_data import snomed_oracle_data
    from flows.snomed_patient_eval import snomed_patient_eval
    from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
    from tasks.benchmarks.snomed.oracle.offline_teacher import OFFLINE_TEACHER
    from tasks.benchmarks.snomed.patient_bench.config import PatientBenchConfig
    from tasks.evals.config import ModelSpec

    console.rule("SNOMED patient oracle: training data (offline teacher) and the patient bench")
    data_dir, run_dir = workdir / "oracle-data", workdir / "patient-bench"
    teacher = OracleDataConfig(models=[ModelSpec(model=OFFLINE_TEACHER)])
    states = [
        snomed_oracle_data(cases_dir=str(cases_dir), out_dir=str(data_dir), config=teacher, return_state=True)
    ]
    print_oracle_data(data_dir, console)
    bench = PatientBenchConfig(models=[ModelSpec(model=OFFLINE_PATIENT)], oracle_data=data_dir)
    states.append(
        snomed_patient_eval(cases_dir=str(cases_dir), run_dir=str(run_dir), config=bench, return_state=True)
    )
    print_bench_report(run_dir / "report", console)
    for state in states:
        if not state.is_completed():
            console.print(f"[red]{state.message}[/red]")
            raise typer.Exit(1)
