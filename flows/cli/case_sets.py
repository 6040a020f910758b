"""The evaluate and report commands of the benchmarks over a case set (SNOMED, consult), each defined once for
both: a benchmark names what it has of its own in a `CaseSetCommand`, and adds its own evaluate options."""

import importlib
import inspect
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer
from pydantic import BaseModel

from flows.cli.errors import reports_errors
from flows.cli.evaluate import (
    CALL_OPTIONS,
    ApiBase,
    ApiKeyEnv,
    BatchPoll,
    BatchRoles,
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
from flows.cli.report import Lake, bootstrap_settings, run_report_flow

if TYPE_CHECKING:
    from prefect.states import State


class CaseSetCommand(NamedTuple):
    """What one case-set benchmark's commands have of their own besides its evaluate options: its name and
    words. Its parts are named after it (below). Each is imported when a command runs: they import Prefect
    (over a second), and every `threadmed` command would pay for it."""

    name: str  # the benchmark's, and its command group's: `threadmed <name>`
    solvers: str  # what its models play: clinicians, agents
    epoch: str  # one model's go at one case, plural: interviews, episodes
    browser: str  # its report page's browser: a conversation browser, an episode browser

    def part(self, path: str) -> Any:
        """`module:name`, the benchmark's name filled in (`{name}`, `{NAME}` in capitals) -> that object."""
        module, _, attribute = path.format(name=self.name, NAME=self.name.upper()).partition(":")
        return getattr(importlib.import_module(module), attribute)


# The parts every case-set benchmark has, named after it.
BENCHMARK = "tasks.benchmarks.{name}.benchmark:{NAME}"
CARD = "tasks.benchmarks.{name}.card:{NAME}_CARD"
EVALUATE_FLOW = "flows.{name}_evaluate:{name}_evaluate"
REPORT_FLOW = "flows.{name}_report:{name}_report"
CHECK_RUN_FOLDER = "tasks.benchmarks.{name}.run_data:check_run_folder"
LOAD_RUNS = "tasks.benchmarks.{name}.run_data:load_runs"
PRINT_REPORT = "flows.cli.{name}:print_{name}_report"

# A benchmark's own evaluate options: a function of them returning the roles (patient, judge) and the settings
# (max_turns, ...) they choose.
BenchmarkOptions = Callable[..., tuple[dict[str, str], dict[str, Any]]]


def case_set_commands(
    app: typer.Typer, command: CaseSetCommand
) -> Callable[[BenchmarkOptions], BenchmarkOptions]:
    """Decorate the function of a benchmark's own evaluate options: add its `evaluate` command to `app`, with
    its options after the ones every case-set benchmark shares and its docstring as the command's help, and
    its `report` command."""

    def decorate(own_options: BenchmarkOptions) -> BenchmarkOptions:
        own = list(inspect.signature(own_options).parameters.values())
        shared = list(inspect.signature(shared_evaluate_options(command)).parameters.values())
        at = [parameter.name for parameter in shared].index("split")
        parameters = [*shared[:at], *own, *shared[at:]]

        def evaluate(**options: Any) -> None:
            roles, settings = own_options(
                **{parameter.name: options.pop(parameter.name) for parameter in own}
            )
            run_case_set_evaluate(command, roles, settings, **options)

        # Typer reads a command's options from its signature: here the shared ones and the benchmark's own.
        evaluate.__signature__ = inspect.Signature(parameters, return_annotation=None)  # type: ignore[attr-defined]
        evaluate.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
        evaluate.__doc__ = own_options.__doc__
        app.command("evaluate")(reports_errors("out")(evaluate))
        app.command("report")(case_set_report_command(command))
        return own_options

    return decorate


def shared_evaluate_options(command: CaseSetCommand) -> Callable[..., None]:
    """A function whose signature is the options every case-set benchmark's evaluate command has."""

    def options(
        cases_dir: Annotated[
            Path,
            typer.Option(
                "--cases",
                help=f"Case set folder written by `threadmed {command.name} cases`.",
                exists=True,
                file_okay=False,
            ),
        ],
        out: Annotated[
            Path,
            typer.Option(
                help="Run folder for the call ledger, the run's tables and manifest.json. Run the same "
                "command with the same folder again to resume: only missing calls are made."
            ),
        ],
        config: Annotated[
            Path | None,
            typer.Option(
                help=f"YAML config: see deployments/{command.name}.example.yaml.", exists=True, dir_okay=False
            ),
        ] = None,
        models: Annotated[
            str | None,
            typer.Option(help=f"Comma-separated {command.solvers}: config names or litellm model strings."),
        ] = None,
        epochs: Annotated[
            int | None, typer.Option(min=1, help=f"Epochs: {command.epoch} per case and model, each scored.")
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
            typer.Option(
                "--dry-run", help="Print calls, tokens and dollars per model and role; call nothing."
            ),
        ] = False,
        report: Annotated[bool, typer.Option(help="Write RUN_DIR/report at the end.")] = True,
    ) -> None: ...

    return options


def run_case_set_evaluate(
    command: CaseSetCommand,
    roles: dict[str, str],
    settings: dict[str, Any],
    *,
    cases_dir: Path,
    out: Path,
    config: Path | None,
    models: str | None,
    epochs: int | None,
    split: str | None,
    limit: int | None,
    dry_run: bool,
    report: bool,
    **call_options: Any,
) -> None:
    """A case-set benchmark's evaluate command: check the case set, resolve the settings (exit 2 on a bad
    option or config), then print the dry run's estimate, or run its evaluate flow and print its report.
    `call_options` are the endpoint, call, spending cap and batch options."""
    from tasks.evals.config import RunOverrides, resolve_settings

    card = command.part(CARD)  # light: the benchmark's own modules are imported after the first line
    card.check_inputs(cases_dir)
    chosen = {"epochs": epochs, **settings}
    overrides = RunOverrides(
        models=split_list(models),
        roles=roles,
        settings={name: value for name, value in chosen.items() if value is not None},
        split=split,
        limit=limit,
        **call_choices(**{name: call_options.pop(name) for name in CALL_OPTIONS}),
        **batch_choices(**call_options),  # what is left
    )
    resolved = checked_settings(
        lambda: resolve_settings(
            dataset_dir=cases_dir,
            run_dir=out,
            config_file=config,
            overrides=overrides,
            config_model=card.config_model,
        )
    )

    def run_flow() -> "State":
        return command.part(EVALUATE_FLOW)(
            cases_dir=str(cases_dir),
            run_dir=str(out),
            config=resolved.config,
            report=report,
            return_state=True,
        )

    run_or_estimate(card, lambda: command.part(BENCHMARK), resolved, out, dry_run, run_flow)
    if report and not dry_run:
        command.part(PRINT_REPORT)(out / "report")


def case_set_report_command(command: CaseSetCommand) -> Callable[..., None]:
    """A case-set benchmark's report command: check that the runs merge, then run its report flow and print
    the report."""

    @reports_errors("out", "lake")
    def report(
        run_dirs: Annotated[
            list[Path],
            typer.Argument(
                help=f"Run folder(s) of `threadmed {command.name} evaluate`; runs over the same case set "
                "merge into one.",
                exists=True,
                file_okay=False,
            ),
        ],
        out: Annotated[
            Path | None,
            typer.Option(help="Report folder. Default: RUN_DIR/report, or FIRST_RUN_DIR/report-merged."),
        ] = None,
        lake: Lake = Path("data_lake"),
        resamples: Annotated[
            int | None, typer.Option(min=100, help="Bootstrap resamples per interval.")
        ] = None,
        seed: Annotated[
            int | None, typer.Option(help="Bootstrap seed: the same seed, the same intervals.")
        ] = None,
    ) -> None:
        command.part(LOAD_RUNS)(run_dirs)  # before the flow: runs that do not merge are one line

        def settings() -> BaseModel:  # after the first line: the benchmark's import takes seconds
            return bootstrap_settings(command.part(BENCHMARK).report_settings, resamples, seed)

        check_run_folder = command.part(CHECK_RUN_FOLDER)
        report_flow = partial(command.part, REPORT_FLOW)  # imported after the command's first line
        report_dir = run_report_flow(run_dirs, out, lake, check_run_folder, report_flow, settings)
        command.part(PRINT_REPORT)(report_dir)

    report.__doc__ = (
        f"metrics.json, report.md, figures and index.html (with {command.browser}) from stored runs."
    )
    return report
