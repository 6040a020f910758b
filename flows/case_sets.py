"""The flows of the benchmarks over a case set (SNOMED, consult), each defined once for both: evaluate and
report. Each benchmark's flow modules hold its two, `<benchmark>-evaluate` and `<benchmark>-report`."""

from collections.abc import Callable
from typing import Any

from prefect import Flow, flow
from prefect.states import State
from pydantic import BaseModel

from flows.evaluation import evaluate_benchmark
from tasks.core.provenance import write_run_manifest
from tasks.core.runners import RunnerSettings
from tasks.evals.config import RunConfig, RunOverrides, resolve_settings
from tasks.evals.outputs import RunSummary
from tasks.evals.protocol import Benchmark


def case_set_evaluate_flow(bench: Benchmark, report_flow: Flow, module: str, description: str) -> Flow:
    """The evaluate flow of a benchmark over a case set: every model solves every sampled case (each epoch),
    then each is scored, and `report_flow` reports the run."""

    def evaluate(
        cases_dir: str,
        run_dir: str,
        config: RunConfig | None = None,
        config_file: str | None = None,
        models: list[str] | None = None,
        overrides: RunOverrides | None = None,
        runner: RunnerSettings | None = None,
        report: bool = True,
    ) -> RunSummary | State:
        """Write the benchmark's tables, manifest.json and report/ to run_dir.

        The config is `config`, or the YAML `config_file`, or just `models` (litellm model strings); the
        `overrides` (roles, settings such as epochs, split, limit, endpoint, batch roles, spending cap)
        change it. The run ends Failed (after writing every output) when calls failed; re-running with
        the same run_dir finishes it.
        """
        chosen = overrides or RunOverrides()
        if models:
            if chosen.models and chosen.models != models:
                raise ValueError(f"models {models} and overrides.models {chosen.models} differ: give one")
            chosen = chosen.model_copy(update={"models": models})
        settings = resolve_settings(
            dataset_dir=cases_dir,
            run_dir=run_dir,
            config=config,
            config_file=config_file,
            overrides=chosen,
            config_model=bench.config_model,
        )
        report_runs = (lambda run_dirs: report_flow(run_dirs=run_dirs)) if report else None
        return evaluate_benchmark(bench, settings, runner, report_runs, input_parameter="cases_dir")

    return named_flow(evaluate, f"{bench.name}-evaluate", ("config", bench.config_model), module, description)


def case_set_report_flow(bench: Benchmark, module: str, description: str) -> Flow:
    """The report flow of a benchmark over a case set: metrics, tables, figures and index.html from its
    stored runs; calls no model."""
    name = f"{bench.name}-report"

    def report(
        run_dirs: list[str],
        out_dir: str | None = None,
        lake_dir: str = "data_lake",
        settings: BaseModel | None = None,
    ) -> str:
        """metrics.json, report.md, figures and index.html for the runs (merged when several share a case
        set), also as Prefect artifacts; return the report folder."""
        settings = settings or bench.report_settings()
        report_dir = bench.report(run_dirs, out_dir, settings)
        write_run_manifest(
            lake_dir, name, {"run_dirs": run_dirs, "out_dir": report_dir, **settings.model_dump()}
        )
        return report_dir

    return named_flow(report, name, ("settings", bench.report_settings), module, description)


def named_flow(
    function: Callable[..., Any],
    name: str,
    typed: tuple[str, type[BaseModel]],
    module: str,
    description: str,
) -> Flow:
    """`function` as the flow `name`, found by Prefect in `module` under `name` with underscores (Prefect
    records a flow's entrypoint as its function's module and name: prefect.yaml, serve). `typed` is the
    parameter to validate as the benchmark's own model (a deployment's parameter schema), not its base."""
    parameter, model = typed
    function.__annotations__[parameter] = model | None
    function.__name__ = function.__qualname__ = name.replace("-", "_")
    function.__module__ = module
    return flow(name=name, description=description)(function)
