"""prefect.yaml end to end, the way operators run it: a real server, `prefect deploy`, a process worker and
`prefect deployment run`, shared by this module's tests (each start costs seconds of CPU, the same for every
test; the guide's own run is test_deployment_guide.py).

- The resume path: a dataset built from a generated dump, three models evaluated on it against the
  fault-injecting LLM server. Two models' first calls exhaust their retries, so the run must end Failed with
  its counts; retrying the flow run and running the deployment again must finish it without repeating a
  single call that had succeeded.
- Runs as operators start them: the server refuses a misspelt key of a settings model when the flow run is
  created (each deployment has `enforce_parameter_schema: true`, and every settings model forbids unknown
  keys); a key inside a free-form object (`overrides.settings`) is refused when the flow run starts, with the
  nearest name; a missing input folder, a case set without a train split and a call that fails are told with
  the deployment's parameters.
- A run whose worker and flow process were killed (kill -9) is marked Crashed by the server through the
  automation of `python -m deployments.dead_runs` (made twice: it must stay one), `--watch` ends with 1, and
  a retry finishes the run without repeating a call that had succeeded. The heartbeat frequency is
  prefect.yaml's (30 s, Prefect's minimum), so the test waits about a minute and a half for the crash. It
  comes last: it installs the automation and kills the worker (then starts a new one).
"""

import json
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from deployments.dead_runs import (
    AUTOMATION_NAME,
    crash_window,
    dead_run_automation,
    project_heartbeat_seconds,
)
from tasks.llm.ledger import CallLedger
from tasks.synth.generator import generate_dumps
from tests.eval_fixtures import write_dataset
from tests.llm_server import LLMServer
from tests.llm_server_state import Action
from tests.prefect_server import PrefectStack
from tests.snomed_fixtures import CASES, write_case_set

# Minutes of tests one after another: started first, beside the suite's other long chains (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.starts_first]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
POOL = "threadmed-process"
SAMPLE = 2  # threads evaluated
RETRIES = {"max_attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}
OFFLINE_CONFIG = {
    "models": [{"model": "threadmed/deferral"}],
    "judge": {"model": "threadmed/overlap-judge"},
    "conditions": ["baseline"],
    "sample": {"limit": 1},
}
ANSWERED_BEFORE_KILL = 6  # calls that succeed before every later one hangs until the processes are killed
# Liveness bounds only, never the bound under test: how long a step may take on a machine many times busier.
STEP_TIMEOUT_S = 600.0


@pytest.fixture(scope="module", name="stack")
def deployed_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectStack]:
    """One server with the process pool, a worker and every deployment of prefect.yaml, for the module's
    tests. tests/conftest.py deals a slow file whole to one xdist worker, which runs it in file order."""
    with PrefectStack(tmp_path_factory.mktemp("prefect"), PROJECT_ROOT) as deployed:
        deployed.create_process_pool(POOL)
        deployed.start_worker(POOL)  # it starts up while the deployments are registered
        deployed.deploy()
        yield deployed


def three_model_evaluation(dataset_dir: Path, run_dir: Path, api_base: str, split: str) -> dict[str, Any]:
    """The evaluate-models parameters: three models and a judge, all served by the test LLM server."""
    model = {name: {"name": name, "model": f"openai/{name}", "api_base": api_base} for name in
             ("alpha", "beta", "gamma", "judge")}  # fmt: skip
    return {
        "dataset_dir": str(dataset_dir),
        "run_dir": str(run_dir),
        "config": {
            "models": [model["alpha"], model["beta"], model["gamma"]],
            "judge": {**model["judge"], "max_reasks": 0},
            "conditions": ["baseline"],
            "sample": {"split": split, "limit": SAMPLE},
            "retry": RETRIES,
        },
    }


def answered_turns(run_dir: Path, model: str) -> int:
    responses = pq.read_table(run_dir / "responses.parquet", columns=["model", "status"]).to_pylist()
    return sum(r["model"] == model and r["status"] == "ok" for r in responses)


def test_deploy_worker_and_cli_runs(stack, tmp_path):
    dumps = generate_dumps(tmp_path / "dumps", posts=2000, seed=3)
    build_dir, run_dir = tmp_path / "build", tmp_path / "run"
    with LLMServer() as llm:
        monthly = stack.read_deployment("build-dataset/monthly")
        assert [s["schedule"]["cron"] for s in monthly["schedules"]] == ["0 6 2 * *"]
        assert monthly["pull_steps"][0]["prefect.deployments.steps.set_working_directory"] == {
            "directory": str(PROJECT_ROOT)
        }

        submissions, comments = map(str, dumps.files)
        build = stack.run_deployment(
            "build-dataset/adhoc",
            {"submissions": [submissions], "comments": [comments], "out_dir": str(build_dir),
             "lake_dir": str(tmp_path / "lake")},
        )  # fmt: skip
        assert build.state_type == "COMPLETED", stack.explain(build)
        answered = build_dir / "dataset" / "answered"
        truth = pq.read_table(dumps.truth_threads, columns=["in_answered", "n_pairs_answered"])
        expected_pairs = pc.sum(pc.filter(truth["n_pairs_answered"], truth["in_answered"])).as_py()
        assert pq.read_metadata(answered / "qa_pairs.parquet").num_rows == expected_pairs

        # Every attempt of beta's and gamma's first calls fails (SAMPLE threads x 2 attempts), so those
        # calls exhaust their retries and block the later turns. gamma's faults last for two runs.
        attempts = SAMPLE * RETRIES["max_attempts"]
        llm.script(*[Action(status=429, retry_after="0")] * attempts, model="beta")
        llm.script(*[Action(status=500)] * (2 * attempts), model="gamma")
        splits = Counter(pq.read_table(answered / "threads.parquet", columns=["split"])["split"].to_pylist())
        settings = three_model_evaluation(build_dir, run_dir, llm.url, split=splits.most_common(1)[0][0])

        first = stack.run_deployment("evaluate-models/adhoc", settings)
        assert first.state_type == "FAILED", stack.explain(first)
        assert first.message.startswith(
            f"{2 * SAMPLE} calls failed: rate limit {SAMPLE}, server error {SAMPLE}; re-run"
        ), stack.explain(first)
        turns = answered_turns(run_dir, "alpha")  # of the sample, all answered by alpha
        assert answered_turns(run_dir, "beta") == answered_turns(run_dir, "gamma") == 0
        assert llm.stats()["ok"] == 2 * turns  # alpha's answers and their judgments

        retried = stack.retry_flow_run(first.id)  # the UI's Retry: beta finishes, gamma fails again
        assert retried.state_type == "FAILED", stack.explain(retried)
        assert retried.message.startswith(f"{SAMPLE} calls failed: server error {SAMPLE}; re-run"), (
            stack.explain(retried)
        )
        assert llm.stats()["ok"] == 2 * 2 * turns

        again = stack.run_deployment("evaluate-models/adhoc", settings)  # the server is fixed
        assert again.state_type == "COMPLETED", stack.explain(again)
        assert answered_turns(run_dir, "gamma") == turns
        assert llm.stats()["ok"] == 3 * 2 * turns
        assert llm.stats()["max_ok_per_body"] == 1, "a call that had succeeded was made again"


def flow_run_ids(stack: PrefectStack) -> set[str]:
    runs = httpx.post(f"{stack.api_url}/flow_runs/filter", json={}, timeout=30).raise_for_status().json()
    return {run["id"] for run in runs}


def test_deployment_runs_refuse_misspelt_settings_and_name_failures_in_their_own_terms(stack, tmp_path):
    dataset, cases = write_dataset(tmp_path / "build"), tmp_path / "cases"
    write_case_set(cases, [case for case in CASES if case.split == "test"])  # no train split
    runs_before = flow_run_ids(stack)
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
    assert flow_run_ids(stack) == runs_before and not (tmp_path / "run").exists()

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


def one_model_evaluation(dataset_dir: Path, run_dir: Path, api_base: str, model: str) -> dict[str, Any]:
    """evaluate-models parameters: `model` and a judge, both served by the counting test server."""
    return {
        "dataset_dir": str(dataset_dir),
        "run_dir": str(run_dir),
        "config": {
            "models": [{"name": model, "model": f"openai/{model}", "api_base": api_base}],
            "judge": {"name": "judge", "model": "openai/judge", "api_base": api_base, "max_reasks": 0},
            "conditions": ["baseline"],
            "sample": {"split": "test"},
            "retry": {"max_attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02},
        },
        "report": False,
    }


def automations(stack: PrefectStack) -> list[dict[str, Any]]:
    body = {"automations": {"name": {"any_": [AUTOMATION_NAME]}}}
    return httpx.post(f"{stack.api_url}/automations/filter", json=body, timeout=30).raise_for_status().json()


def wait_until(condition, what: str, stack: PrefectStack) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {STEP_TIMEOUT_S:.0f} s\n{stack.logs()}")
        time.sleep(0.2)


def at(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp)


def test_a_run_whose_worker_and_flow_process_died_is_crashed_then_retried_paying_no_call_twice(
    stack, tmp_path
):
    dataset = write_dataset(tmp_path / "build")
    heartbeat_s = project_heartbeat_seconds()
    expected = dead_run_automation(heartbeat_s)
    with LLMServer() as llm:
        assert stack.read_deployment("evaluate-models/adhoc")["job_variables"] == {
            "env": {"PREFECT_FLOWS_HEARTBEAT_FREQUENCY": str(heartbeat_s)}
        }
        outputs = [stack.python("-m", "deployments.dead_runs") for _ in range(2)]
        assert [output.split()[0] for output in outputs] == ["created", "updated"]
        [automation] = automations(stack)
        assert (automation["trigger"]["within"], automation["actions"]) == (
            crash_window(heartbeat_s).total_seconds(),
            [action.model_dump(mode="json") for action in expected.actions],
        )

        # A run that ends is never taken for a dead one: checked at the end, long after its window passed.
        ended = stack.run_deployment(
            "evaluate-models/adhoc", one_model_evaluation(dataset, tmp_path / "ended", llm.url, "omega")
        )
        assert ended.state_type == "COMPLETED", stack.explain(ended)
        paid_before = llm.stats()["ok"]

        run_dir = tmp_path / "killed"
        ledger = CallLedger(run_dir / "ledger")
        llm.hold_after(ok_replies=paid_before + ANSWERED_BEFORE_KILL)
        watch = stack.watch_deployment(
            "evaluate-models/adhoc", one_model_evaluation(dataset, run_dir, llm.url, "alpha")
        )
        run_id = stack.flow_run_id(watch, time.monotonic() + STEP_TIMEOUT_S)

        def only_held_calls_in_flight() -> bool:
            state = llm.state
            ledger.refresh()  # what the flow run's process recorded since this one last read the folder
            recorded = ledger.count_succeeded() if ledger.root.exists() else 0
            # Every reply that ended is recorded: ANSWERED_BEFORE_KILL, or a few more that arrived while the
            # last of them was being answered (the server counts replies as they end).
            answered = llm.stats()["ok"] - paid_before
            return state.held > 0 and state.in_flight == state.held and recorded == answered

        wait_until(only_held_calls_in_flight, "the run's answered calls recorded, the others held", stack)
        assert stack.flow_run(run_id)["state"]["type"] == "RUNNING"
        killed = stack.kill_worker()
        killed_at = time.monotonic()
        assert [any("prefect.engine" in word for word in command) for command in killed] == [False, True], (
            killed
        )

        assert watch.popen.wait(timeout=STEP_TIMEOUT_S) == 1, watch.tail()
        watch_ended_after_s = time.monotonic() - killed_at
        assert "Flow run finished in state 'Crashed'" in watch.log.read_text(), watch.tail()
        state = stack.flow_run(run_id)["state"]
        assert (state["type"], state["message"]) == ("CRASHED", expected.actions[0].message)
        beats = stack.events("prefect.flow-run.heartbeat", f"prefect.flow-run.{run_id}")
        silence = at(state["timestamp"]) - at(beats[0]["occurred"])
        assert silence >= crash_window(heartbeat_s), "crashed before its heartbeats were missed"
        print(
            f"kill -9 -> Crashed seen by --watch: {watch_ended_after_s:.1f} s; last heartbeat -> Crashed "
            f"(server clock): {silence.total_seconds():.1f} s; heartbeats sent: {len(beats)}"
        )
        assert stack.flow_run(ended.id)["state"]["type"] == "COMPLETED"

        stack.start_worker(POOL)
        llm.drop_held()
        retried = stack.retry_flow_run(run_id)
        assert retried.state_type == "COMPLETED", stack.explain(retried)
        assert llm.stats()["ok"] == 2 * paid_before  # the same calls as the ended run's, for another model
        assert llm.stats()["max_ok_per_body"] == 1, "a call that had succeeded was made again"
