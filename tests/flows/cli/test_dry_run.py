"""Every benchmark's `evaluate --dry-run` says what it will do, its inputs, options and run folder checked,
before it imports litellm (seconds) or its planner: the command's first line comes within a second or so,
the plan and the estimate after it. So does its `evaluate` without --dry-run, a spending cap set."""

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tasks.benchmarks.consult.card import CONSULT_CARD
from tasks.benchmarks.consult.cases import CaseGenerationSettings, generate_cases, write_case_set
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.snomed.card import SNOMED_CARD
from tasks.benchmarks.threadmed.card import THREADMED_CARD
from tasks.evals.card import BenchmarkCard
from tests.eval_fixtures import write_dataset
from tests.flows.cli.terminal import COMMAND_TIMEOUT_S, imported, threadmed_until_import
from tests.snomed_fixtures import write_case_set as write_snomed_case_set


def write_consult_case_set(folder: Path) -> None:
    settings = CaseGenerationSettings(n=3, seed=0)
    write_case_set(generate_cases(load_kb(), settings), folder, settings)


# Per benchmark: what writes its input folder, the command's options and the model it names, its card.
DRY_RUNS: dict[str, tuple[Callable[[Path], object], list[str], str, BenchmarkCard]] = {
    "threadmed": (
        write_dataset,
        ["evaluate", "--dataset", "inputs", "--judge", "threadmed/overlap-judge"],
        "threadmed/deferral",
        THREADMED_CARD,
    ),
    "snomed": (
        write_snomed_case_set,
        ["snomed", "evaluate", "--cases", "inputs"],
        "threadmed/checklist",
        SNOMED_CARD,
    ),
    "consult": (
        write_consult_case_set,
        ["consult", "evaluate", "--cases", "inputs"],
        "threadmed/consult-silent",
        CONSULT_CARD,
    ),
}


def heavy_import(benchmark: str) -> re.Pattern[str]:
    """litellm and the benchmark's planner, as `python -X importtime` names each when its import ends."""
    planner = re.escape(f"tasks.benchmarks.{benchmark}.plan")
    return re.compile(rf"import time: .*\| +(litellm|openai|{planner})(\.\S+)?$")


@pytest.mark.parametrize("benchmark", sorted(DRY_RUNS))
def test_a_dry_run_prints_its_first_line_before_importing_litellm_or_its_planner(tmp_path, benchmark):
    """Rich flushes each line it prints and Python writes each import's timing as the import ends, both
    into one pipe here: their order is the order they happened in."""
    write_inputs, options, model, card = DRY_RUNS[benchmark]
    write_inputs(tmp_path / "inputs")
    merged = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "flows.cli", *options,
         "--models", model, "--out", "run", "--dry-run"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=tmp_path, env={**os.environ, "COLUMNS": "200"}, timeout=COMMAND_TIMEOUT_S,
    )  # fmt: skip
    lines = merged.stdout.splitlines()
    assert merged.returncode == 0, lines[-20:]
    first = lines.index(
        f"{card.title}. Dry run of {model} into run: planning the calls still to make and estimating them "
        "(none is made)"
    )
    heavy = [index for index, line in enumerate(lines) if heavy_import(benchmark).match(line)]
    assert heavy and min(heavy) > first, [lines[index] for index in heavy if index < first]
    assert "Dry run: calls still to make" in "\n".join(lines[first:])  # the estimate follows


@pytest.mark.parametrize("benchmark", sorted(DRY_RUNS))
def test_a_run_prints_its_first_line_before_importing_its_planner(tmp_path, benchmark):
    """The planner imports the benchmark's solvers; litellm comes later still, with the first call."""
    write_inputs, options, model, card = DRY_RUNS[benchmark]
    write_inputs(tmp_path / "inputs")
    arguments = [*options, "--models", model, "--out", "run", "--max-cost", "1"]
    planner = f"tasks.benchmarks.{benchmark}.plan"
    assert threadmed_until_import(planner, *arguments, cwd=tmp_path) == [
        f"{card.title}. Run of {model} into run: planning its jobs (calls its ledger holds are not made "
        "again)",
        imported(planner),
    ]
