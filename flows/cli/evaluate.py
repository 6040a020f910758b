"""`threadmed evaluate`: run the evaluate-models flow from the command line, or estimate it (--dry-run); the
options and the body every benchmark's evaluate command shares."""

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from rich.markup import escape

from flows.cli.errors import reports_errors, warn
from flows.cli.render import console, estimate_table, print_run_summary, print_table
from flows.cli.server_launch import start_temporary_server
from tasks.core.preflight import check_writable_folder, validation_message

if TYPE_CHECKING:  # importing them at run time costs every command the seconds Prefect takes
    from prefect.states import State

    from tasks.evals.card import BenchmarkCard
    from tasks.evals.config import EvaluationSettings
    from tasks.evals.plan import RunPlan
    from tasks.evals.protocol import Benchmark


# Exit status of a run that stopped waiting with batches in flight (EX_TEMPFAIL: try again later).
AWAITING_BATCHES_EXIT_CODE = 75
# Exit status of a run stopped by its spending cap (--max-cost): re-run with a higher cap to go on.
COST_CAP_EXIT_CODE = 3
BatchRoles = Annotated[
    str | None,
    typer.Option(
        "--batch",
        help="Comma-separated roles whose calls go through the provider's batch API (OpenAI, Azure, "
        "OpenAI-compatible endpoints), at about half the price, answered within 24 hours: model (the "
        "models under test with such a provider), or a role (judge, patient). Resume as any run.",
    ),
]
BatchWait = Annotated[
    float | None,
    typer.Option(
        min=0,
        help="Seconds to wait for batches before leaving them in flight (exit 75; re-run to go on). "
        "Default: until every batch has finished.",
    ),
]
BatchPoll = Annotated[
    float | None, typer.Option(min=0.01, help="Seconds between checks of batches in flight (default 60).")
]
API_BASE_KEY_NOTE = (
    "It gets no key unless --api-key-env names one: provider keys such as OPENAI_API_KEY never go to a "
    "custom endpoint."
)
ApiBase = Annotated[
    str | None,
    typer.Option(
        help="Send every model and role to this OpenAI-compatible endpoint (gateway, vLLM, llama.cpp, "
        f"Ollama); the offline threadmed/... models stay in-process. {API_BASE_KEY_NOTE}"
    ),
]
ApiKeyEnv = Annotated[
    str | None,
    typer.Option(help="Environment variable whose value is sent as the key to --api-base (e.g. VLLM_KEY)."),
]
MaxConcurrency = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Calls in flight at once per provider (default 8; 1 for a server that answers one at a time).",
    ),
]
MaxTokens = Annotated[
    int | None,
    typer.Option(
        min=1, help="Longest reply of every role, sent as max_tokens (changes replies: a new run id)."
    ),
]
Timeout = Annotated[
    float | None,
    typer.Option(min=0.01, help="Seconds one HTTP attempt may take, its whole reply included (default 120)."),
]


def checked_cap(value: float | None) -> float | None:
    """--max-cost as given, unless it is not a finite number (`inf`, or `1e400`, which reads as inf, would be
    no cap at all, and `nan` a cap no spend compares with) or is below 0. Checked here rather than by a
    range, which would call nan "not greater than or equal to 0"."""
    if value is None or (math.isfinite(value) and value >= 0):
        return value
    if math.isnan(value):
        raise typer.BadParameter("nan is not an amount of USD: give the cap as a finite number, e.g. 5")
    if math.isinf(value):
        raise typer.BadParameter(
            "the cap reads as infinite (so does any number too large for a float, e.g. 1e400), which is no "
            "cap: give a finite amount of USD, e.g. 5"
        )
    raise typer.BadParameter(f"{value:g} is below 0: give the cap as an amount of USD, 0 or more")


MaxCost = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        callback=checked_cap,
        help="Spending cap in USD (a finite amount, 0 or more) of the run folder (what earlier runs in it "
        "paid counts): the run stops before a call would pass it, counting calls and batches in flight at "
        f"their estimates, and exits {COST_CAP_EXIT_CODE}, at once when the folder has spent more already; "
        "re-run with a higher cap to go on. Unpriced models count 0.",
    ),
]


@reports_errors("out")
def evaluate(
    dataset: Annotated[
        Path,
        typer.Option(
            help="Dataset build folder holding dataset/answered/{threads,qa_pairs}.parquet.",
            exists=True,
            file_okay=False,
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Run folder for the call ledger, responses.parquet, judgments.parquet and manifest.json. "
            "Run the same command with the same folder again to resume: only missing calls are made."
        ),
    ],
    config: Annotated[
        Path | None,
        typer.Option(
            help="YAML config (models, judge, sample, limits): see deployments/eval.example.yaml.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    models: Annotated[
        str | None,
        typer.Option(help="Comma-separated model names from the config, or litellm model strings."),
    ] = None,
    judge: Annotated[
        str | None, typer.Option(help="Judge: the config's judge name or a litellm model string.")
    ] = None,
    conditions: Annotated[
        str | None, typer.Option(help="Comma-separated conditions: baseline, oracle.")
    ] = None,
    split: Annotated[str | None, typer.Option(help="Dataset split to sample threads from.")] = None,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Evaluate only the first N threads of the seeded sample.")
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
        bool, typer.Option("--dry-run", help="Print calls, tokens and dollars per model; call nothing.")
    ] = False,
    report: Annotated[
        bool, typer.Option(help="Write RUN_DIR/report (metrics, tables, figures, index.html) at the end.")
    ] = True,
) -> None:
    """Answer and judge the dataset's threads with every model (the `evaluate-models` flow).

    Both conditions of the paper: `baseline` (each model sees its own earlier answers) and `oracle`
    (it sees the physician's). Every call is kept in RUN_DIR/ledger, so a crash, a kill or a provider
    outage costs nothing already paid: re-run the same command to finish. Exits 1 if calls failed, 75
    if batches (--batch) are still in flight, 3 if the spending cap (--max-cost) stopped it.
    """
    # Imported here: the benchmark's modules import Prefect (over a second), and every `threadmed` command,
    # this one's first line too, would pay for it; its card and config are light.
    from tasks.benchmarks.threadmed.card import THREADMED_CARD
    from tasks.benchmarks.threadmed.cases import check_dataset_build
    from tasks.evals.config import RunOverrides, resolve_settings

    check_dataset_build(dataset)
    overrides = RunOverrides(
        models=split_list(models),
        roles={"judge": judge} if judge else {},
        settings={"conditions": split_list(conditions)} if conditions else {},
        split=split,
        limit=limit,
        **call_choices(api_base, api_key_env, max_concurrency, max_tokens, timeout, max_cost),
        **batch_choices(batch, batch_wait, batch_poll),
    )
    settings = checked_settings(
        lambda: resolve_settings(dataset_dir=dataset, run_dir=out, config_file=config, overrides=overrides)
    )

    def run_flow() -> "State":
        from flows.evaluate_models import evaluate_models

        return evaluate_models(
            dataset_dir=str(dataset),
            run_dir=str(out),
            config=settings.config,
            report=report,
            return_state=True,
        )

    run_or_estimate(THREADMED_CARD, threadmed_benchmark, settings, out, dry_run, run_flow)


def threadmed_benchmark() -> "Benchmark":
    from tasks.benchmarks.threadmed.benchmark import THREADMED

    return THREADMED


CALL_OPTIONS = ("api_base", "api_key_env", "max_concurrency", "max_tokens", "timeout", "max_cost")


def call_choices(
    api_base: str | None,
    api_key_env: str | None,
    max_concurrency: int | None,
    max_tokens: int | None,
    timeout: float | None,
    max_cost: float | None,
) -> dict[str, Any]:
    """The endpoint, call options and spending cap (the options named in CALL_OPTIONS) as RunOverrides
    fields."""
    return {
        "api_base": api_base,
        "api_key_env": api_key_env,
        "max_concurrency": max_concurrency,
        "max_tokens": max_tokens,
        "timeout_s": timeout,
        "max_cost_usd": max_cost,
    }


def batch_choices(batch: str | None, batch_wait: float | None, batch_poll: float | None) -> dict[str, Any]:
    """The batch options as RunOverrides fields."""
    return {"batch": split_list(batch) or [], "batch_wait_s": batch_wait, "batch_poll_s": batch_poll}


def checked_settings(resolve: Callable[[], "EvaluationSettings"]) -> "EvaluationSettings":
    """The run's settings, or exit 2 with what is wrong in the options or the config file."""
    try:
        return resolve()
    except ValueError as error:  # pydantic's ValidationError is one too
        message = validation_message(error) if isinstance(error, ValidationError) else str(error)
        raise typer.BadParameter(message) from None


def run_or_estimate(
    card: "BenchmarkCard",
    benchmark: Callable[[], "Benchmark"],
    settings: "EvaluationSettings",
    out: Path,
    dry_run: bool,
    run_flow: Callable[[], "State"],
) -> None:
    """Print the dry run's estimate (warning when it passes the spending cap), or run the benchmark's
    evaluate flow holding the run folder and print its summary; exit 1 when calls failed, 3 when the cap
    stopped the run.

    The caller has checked the input folder and the settings of `card`'s benchmark; the run folder and the
    run's sample of the inputs (`card.check_sample`) are checked here. The first line comes next, before
    `benchmark()` imports the benchmark's solvers (seconds) and its plan is walked: what it will do is
    said in a second; the estimate, or the run's id and jobs, follow."""
    from tasks.core.run_folder import check_run_folder_benchmark

    # The flow claims the folder; refused here, before it starts: another benchmark's folder is a bad --out.
    check_run_folder_benchmark(out, card.name, option="--out")
    if card.check_sample is not None:
        card.check_sample(settings.dataset_dir, settings.config)
    models = ", ".join(spec.name or spec.model for spec in settings.config.models)
    if dry_run:
        console.print(
            f"{card.title}. Dry run of {models} into {out}: planning the calls still to make and "
            "estimating them (none is made)",
            markup=False,
            soft_wrap=True,
        )
        print_estimate(benchmark(), settings, out)
        return
    from tasks.evals.run_lock import RunFolderBusy, check_not_held, hold_run_folder

    try:
        # A busy, unwritable or overspent folder is refused in one line, before anything else is said; then
        # what the run will do is the first line, before the benchmark's solvers are imported and its plan
        # is made (seconds).
        check_not_held(out)
        check_writable_folder(out, "--out")
        refuse_overspent_run(out, settings)
        console.print(
            f"{card.title}. Run of {models} into {out}: planning its jobs (calls its ledger holds are not "
            "made again)",
            markup=False,
            soft_wrap=True,
        )
        start_temporary_server()  # while the benchmark is imported and planned
        bench = benchmark()
        plan = bench.plan(settings)  # here, so what the user must fix is said, not a failed flow run
        with hold_run_folder(out):
            console.print(f"Run {plan.run_id}: {len(plan.jobs):,} jobs", markup=False, soft_wrap=True)
            state = run_with_progress(bench, plan, settings, out, run_flow)
    except RunFolderBusy as error:
        console.print(str(error), style="red", markup=False, soft_wrap=True)
        raise typer.Exit(1) from None
    from tasks.evals.batch_runs import AWAITING_BATCHES  # with the call layer and Prefect: seconds

    if state.name == AWAITING_BATCHES:
        console.print(state.message or "", style="yellow", markup=False, soft_wrap=True)
        raise typer.Exit(AWAITING_BATCHES_EXIT_CODE)
    if not (out / "manifest.json").exists():  # the run stopped before writing it: its state says why
        console.print(f"[red]{state.message}[/red]")
        raise typer.Exit(1)
    manifest = json.loads((out / "manifest.json").read_text())
    summary = print_run_summary(manifest, console)
    if summary.cost_cap is not None:
        console.print(f"[red]Run {manifest['run_id']} {escape(summary.cost_cap.message())}[/red]")
        raise typer.Exit(COST_CAP_EXIT_CODE)
    if not state.is_completed():
        console.print(f"[red]{escape(state.message or '')}[/red]")
        raise typer.Exit(1)
    console.print(f"[green]Run {manifest['run_id']} written to[/green] {out}")


def refuse_overspent_run(out: Path, settings: "EvaluationSettings") -> None:
    """Exit 3 in one line when the run folder's ledger has spent the spending cap already."""
    from tasks.evals.cap_checks import overspent_refusal
    from tasks.llm.ledger import CallLedger

    spent = CallLedger(out / "ledger").total_cost_usd() if settings.config.max_cost_usd is not None else 0.0
    if (refusal := overspent_refusal(out, settings.config.max_cost_usd, spent)) is not None:
        console.print(refusal, style="red", markup=False, soft_wrap=True)
        raise typer.Exit(COST_CAP_EXIT_CODE)


def run_with_progress(
    bench: "Benchmark",
    plan: "RunPlan[Any, Any]",
    settings: "EvaluationSettings",
    out: Path,
    run_flow: Callable[[], "State"],
) -> "State":
    """Run the flow under the live progress of the plan's calls; Ctrl-C prints one line of what was left."""
    from flows.cli.process import abandoned_words, on_interrupt
    from flows.cli.progress import showing_progress
    from tasks.evals.progress import Track, plan_tracks

    def tracks() -> list[Track]:
        return plan_tracks(plan, bench.estimate_job, settings.config)

    def last_words(abandoned: int) -> str:
        progress.stop(last_lines=False)  # the terminal's cursor back; nothing printed before the line
        return interrupted_line(out, abandoned_words(abandoned))

    with showing_progress(out, tracks) as progress:
        on_interrupt(last_words)
        return run_flow()


def print_estimate(bench: "Benchmark", settings: "EvaluationSettings", out: Path) -> None:
    """The dry run's table: the plan's calls still to make, their tokens and dollars per model and role; a
    warning when they would pass the spending cap."""
    from tasks.evals.cap_checks import cap_exceeded_warning
    from tasks.evals.estimate import estimate_plan

    estimates = estimate_plan(bench.plan(settings), bench.estimate_job)
    print_table(estimate_table(estimates), console)
    expected = sum(estimate.cost_usd or 0.0 for estimate in estimates)
    if (warning := cap_exceeded_warning(out, settings.config.max_cost_usd, expected)) is not None:
        warn(warning)


def interrupted_line(run_dir: Path, abandoned: str = "") -> str:
    """What an interrupted run leaves: the calls in its ledger (every reply that came before the exit), the
    calls in flight it left (`abandoned`, words of flows/cli/process.py), and those in batches at the
    provider."""
    from tasks.llm.batches import BatchStore
    from tasks.llm.ledger import CallLedger

    kept = (
        f"interrupted: {CallLedger(run_dir / 'ledger').count_succeeded()} calls kept in {run_dir}{abandoned}"
    )
    in_flight = BatchStore(run_dir / "batches").in_flight()
    if not in_flight:
        return f"{kept}; re-run the same command to resume"
    calls = sum(len(record.keys) for record in in_flight)
    batches = f"{len(in_flight)} provider {'batch' if len(in_flight) == 1 else 'batches'}"
    return (
        f"{kept}, {calls} more in flight in {batches}; re-run the same command to resume (it, or the "
        "resume-batch-runs poller, collects them without paying again)"
    )


def split_list(value: str | None) -> list[str] | None:
    return [item.strip() for item in value.split(",") if item.strip()] if value else None
