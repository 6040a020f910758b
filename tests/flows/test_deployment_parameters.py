"""Deployment runs as an operator starts them (a real server, `prefect deploy`, a process worker, the CLI): a
misspelt setting refused, and a failure told in the run's state and logs in the deployment's own terms.

The server refuses a misspelt key of a settings model when the flow run is created (each deployment has
`enforce_parameter_schema: true`, and every settings model forbids unknown keys). A key inside a free-form
object (`overrides.settings`) is refused when the flow run starts, with the nearest name. A missing input
folder, a case set without a train split and a call that fails are told with the deployment's parameters.
"""

import json
from pathlib import Path

import httpx
import pytest

from tests.eval_fixtures import write_dataset
from tests.prefect_server import PrefectStack
from tests.snomed_fixtures import CASES, write_case_set

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parents[2]
POOL = "threadmed-process"
OFFLINE_CONFIG = {
    "models": [{"model": "threadmed/deferral"}],
    "judge": {"model": "threadmed/overlap-judge"},
    "conditions": ["baseline"],
    "sample": {"limit": 1},
}


def flow_runs(stack: PrefectStack) -> list[dict]:
    return httpx.post(f"{stack.api_url}/flow_runs/filter", json={}, timeout=30).raise_for_status().json()


def test_deployment_runs_refuse_misspelt_settings_and_name_failures_in_their_own_terms(tmp_path):
    dataset, cases = write_dataset(tmp_path / "build"), tmp_path / "cases"
    write_case_set(cases, [case for case in CASES if case.split == "test"])  # no train split
    with PrefectStack(tmp_path / "prefect", PROJECT_ROOT) as stack:
        stack.create_process_pool(POOL)
        stack.start_worker(POOL)
        stack.deploy()

        # The server refuses the run when it is created: no flow run, nothing for a worker to pick up.
        misspelt = {**OFFLINE_CONFIG, "condtions": ["baseline"]}
        refused = stack.cli(
            "deployment", "run", "evaluate-models/adhoc", "--param", f"dataset_dir={dataset}",
            "--param", f"run_dir={tmp_path / 'run'}", "--param", f"config={json.dumps(misspelt)}",
            check=False,
        )  # fmt: skip
        assert (
            "Error creating flow run: Validation failed for field 'config'. Failure reason: Additional "
            "properties are not allowed ('condtions' was unexpected)"
        ) in " ".join(refused.split()), refused
        assert flow_runs(stack) == [] and not (tmp_path / "run").exists()

        # A free-form object's keys are the flow's to check: refused as the run starts, with the nearest name.
        overrides = stack.run_deployment(
            "snomed-evaluate/adhoc",
            {"cases_dir": str(cases), "run_dir": str(tmp_path / "snomed"),
             "config_file": "deployments/snomed.demo.yaml", "overrides": {"settings": {"epoch": 2}}},
        )  # fmt: skip
        assert overrides.state_type == "FAILED", stack.explain(overrides)
        assert "overrides.settings.epoch: not a setting; did you mean epochs?" in overrides.message
        assert not (tmp_path / "snomed").exists()

        # The guide's path: a case set built without a train share, then the demo config's prevalence model.
        prevalence = stack.run_deployment(
            "snomed-evaluate/adhoc",
            {"cases_dir": str(cases), "run_dir": str(tmp_path / "snomed"),
             "config_file": "deployments/snomed.demo.yaml"},
        )  # fmt: skip
        assert prevalence.state_type == "FAILED", stack.explain(prevalence)
        fix = """(snomed-cases/adhoc --param settings='{"train_share": 0.5}')"""
        told = prevalence.message.endswith(f"build the case set with a train share {fix}")
        assert told, stack.explain(prevalence)

        missing = tmp_path / "no-such-build"
        refused_input = stack.run_deployment(
            "evaluate-models/adhoc",
            {"dataset_dir": str(missing), "run_dir": str(tmp_path / "run"), "config": OFFLINE_CONFIG},
        )
        assert (refused_input.state_type, refused_input.message) == (
            "FAILED",
            f"dataset_dir: {missing} is not a dataset build (no dataset/answered/threads.parquet); "
            "pass the out_dir of a build-dataset run",
        ), stack.explain(refused_input)
        assert not (tmp_path / "run").exists()

        # The unknown provider: litellm's words in the state and the run's logs, and no report.
        failed = stack.run_deployment(
            "evaluate-models/adhoc",
            {"dataset_dir": str(dataset), "run_dir": str(tmp_path / "run"),
             "models": ["nosuchprovider/model-x"], "judge": "threadmed/overlap-judge",
             "conditions": ["baseline"], "limit": 1},
        )  # fmt: skip
        assert failed.state_type == "FAILED", stack.explain(failed)
        provider_error = "nosuchprovider/model-x: litellm.BadRequestError: LLM Provider NOT provided."
        assert f"First error of each kind: [bad request] {provider_error}" in failed.message
        assert failed.message.endswith("No report was written: no call succeeded.")
        logs = " ".join(stack.cli("flow-run", "logs", failed.id).split())
        assert f"bad request (1), e.g. {provider_error}" in logs
        assert not (tmp_path / "run" / "report").exists()
