"""The SNOMED and consultation commands are built by one function: the same shared options, each its own."""

import pytest
import typer

from flows.cli import case_sets
from flows.cli.consult import CONSULT_COMMANDS
from flows.cli.consult import app as consult_app
from flows.cli.snomed import SNOMED_COMMANDS
from flows.cli.snomed import app as snomed_app
from tests.flows.cli.terminal import imported, threadmed_until_import
from tests.tasks.benchmarks.consult.report_fixtures import make_run as make_consult_run
from tests.tasks.benchmarks.snomed.test_report import make_run as make_snomed_run

FUNCTIONS = ("EVALUATE_FLOW", "REPORT_FLOW", "CHECK_RUN_FOLDER", "LOAD_RUNS", "PRINT_REPORT")
SHARED_HEAD = ["cases_dir", "out", "config", "models", "epochs"]
SHARED_TAIL = [
    "split", "limit", "api_base", "api_key_env", "max_concurrency", "max_tokens", "timeout", "max_cost",
    "batch", "batch_wait", "batch_poll", "dry_run", "report",
]  # fmt: skip


def options(app: typer.Typer, command: str) -> list[str]:
    return [parameter.name for parameter in typer.main.get_command(app).commands[command].params]


def test_each_evaluate_command_has_the_shared_options_around_its_own():
    assert options(snomed_app, "evaluate") == [
        *SHARED_HEAD, "patient", "max_turns", "disclosure", "patient_prompt_form", "patient_prompt",
        *SHARED_TAIL,
    ]  # fmt: skip
    assert options(consult_app, "evaluate") == [*SHARED_HEAD, "max_questions", "judge", *SHARED_TAIL]


def test_the_report_commands_share_their_options():
    shared = ["run_dirs", "out", "lake", "resamples", "seed"]
    assert (options(snomed_app, "report"), options(consult_app, "report")) == (shared, shared)


def test_every_part_named_after_a_benchmark_exists():
    """The parts are found by name when a command runs; a renamed module would break only that command."""
    for command in (SNOMED_COMMANDS, CONSULT_COMMANDS):
        bench = command.part(case_sets.BENCHMARK)
        assert (bench.name, callable(bench.check_inputs)) == (command.name, True)
        for part in FUNCTIONS:
            assert callable(command.part(getattr(case_sets, part))), (command.name, part)


@pytest.mark.parametrize(
    ("benchmark", "make_run"), [("snomed", make_snomed_run), ("consult", make_consult_run)]
)
def test_a_report_says_what_it_will_do_before_it_imports_the_benchmark_s_solvers(
    tmp_path, benchmark, make_run
):
    make_run(tmp_path, "r1", ["alpha"])
    solvers = f"tasks.benchmarks.{benchmark}.solver"
    assert threadmed_until_import(solvers, benchmark, "report", "r1", cwd=tmp_path) == [
        "Report of r1 into r1/report: recomputed from the stored runs, no model called",
        imported(solvers),
    ]
