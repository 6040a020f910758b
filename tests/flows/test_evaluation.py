"""The body every evaluate flow shares: it claims the run folder for its benchmark before anything else."""

import dataclasses
from types import SimpleNamespace

import pytest

from flows.cli.evaluate import run_or_estimate
from flows.evaluation import evaluate_benchmark
from tasks.benchmarks.registry import BENCHMARKS
from tasks.core.preflight import UserError
from tasks.evals.run_folder import claim_run_folder, run_folder_benchmark


def never(*arguments, **options):
    raise AssertionError("nothing may be planned or run in a folder of another benchmark")


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_evaluate_refuses_a_run_folder_of_another_benchmark_before_planning(tmp_path, name):
    never_plans = dataclasses.replace(BENCHMARKS[name], plan=never)
    for owner in sorted(set(BENCHMARKS) - {name}):
        run_dir = tmp_path / owner
        claim_run_folder(run_dir, owner)
        message = (
            f"{run_dir} belongs to the {owner} benchmark, not {name}: give its runs another --out folder"
        )
        for dry_run in (True, False):  # the command line, estimating or running
            with pytest.raises(UserError) as error:
                run_or_estimate(never_plans, SimpleNamespace(), run_dir, dry_run, never)
            assert str(error.value) == message
        with pytest.raises(UserError) as error:  # the flow itself, as a deployment runs it
            evaluate_benchmark(never_plans, SimpleNamespace(run_dir=run_dir), None, None)
        assert (str(error.value), run_folder_benchmark(run_dir)) == (message, owner)
