"""The body every evaluate flow shares: it claims the run folder for its benchmark before anything else; the
case-set benchmarks' flows are built by one function."""

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from prefect.utilities.callables import parameter_schema

from deployments.serve import load_flow
from flows.cli.evaluate import run_or_estimate
from flows.consult_evaluate import consult_evaluate
from flows.evaluation import evaluate_benchmark
from flows.snomed_evaluate import snomed_evaluate
from tasks.benchmarks.registry import BENCHMARKS
from tasks.core.preflight import UserError
from tasks.core.run_folder import claim_run_folder, run_folder_benchmark
from tasks.evals.config import RunOverrides


def never(*arguments, **options):
    raise AssertionError("nothing may be planned or run in a folder of another benchmark")


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_evaluate_refuses_a_run_folder_of_another_benchmark_before_planning(tmp_path, name):
    # Its inputs are not checked here (that comes first, tested with each flow): only the run folder is.
    unchecked = dataclasses.replace(BENCHMARKS[name].card, check_inputs=None, check_sample=None)
    never_plans = dataclasses.replace(BENCHMARKS[name], card=unchecked, plan=never)
    for owner in sorted(set(BENCHMARKS) - {name}):
        run_dir = tmp_path / owner
        claim_run_folder(run_dir, owner)
        message = (
            f"{run_dir} belongs to the {owner} benchmark, not {name}: give its runs another --out folder"
        )
        for dry_run in (True, False):  # the command line, estimating or running
            with pytest.raises(UserError) as error:
                run_or_estimate(unchecked, never, SimpleNamespace(), run_dir, dry_run, never)
            assert str(error.value) == message
        with pytest.raises(UserError) as error:  # the flow itself, as a deployment runs it
            evaluate_benchmark(never_plans, SimpleNamespace(run_dir=run_dir), None, None)
        assert (str(error.value), run_folder_benchmark(run_dir)) == (message, owner)


def test_the_case_set_flows_share_their_parameters_and_validate_their_own_config():
    snomed, consult = (parameter_schema(flow).model_dump() for flow in (snomed_evaluate, consult_evaluate))
    config_refs = [schema["properties"].pop("config")["anyOf"][0]["$ref"] for schema in (snomed, consult)]
    assert config_refs == ["#/definitions/SnomedConfig", "#/definitions/ConsultConfig"]
    assert snomed["properties"] == consult["properties"]
    assert list(snomed["properties"]) == [
        "cases_dir", "run_dir", "config_file", "models", "overrides", "runner", "report"
    ]  # fmt: skip


def test_prefect_finds_each_case_set_flow_at_its_prefect_yaml_entrypoint():
    """Prefect records a served flow's entrypoint from its function; a worker imports it from prefect.yaml."""
    entrypoints = {
        spec["entrypoint"] for spec in yaml.safe_load(Path("prefect.yaml").read_text())["deployments"]
    }
    for flow, name in ((snomed_evaluate, "snomed-evaluate"), (consult_evaluate, "consult-evaluate")):
        entrypoint = f"flows/{flow.fn.__name__}.py:{flow.fn.__name__}"
        assert (flow.name, entrypoint in entrypoints, load_flow(entrypoint)) == (name, True, flow)
        assert flow.to_deployment(name="adhoc").entrypoint == entrypoint


def test_models_named_twice_differently_are_refused(tmp_path):
    with pytest.raises(ValueError, match=r"models \['a'\] and overrides.models \['b'\] differ: give one"):
        snomed_evaluate.fn(
            cases_dir=str(tmp_path),
            run_dir=str(tmp_path / "run"),
            models=["a"],
            overrides=RunOverrides(models=["b"]),
        )
