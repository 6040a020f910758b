"""A deployment's run whose worker and flow process were killed (kill -9) is marked Crashed by the server,
`--watch` ends with 1, and a retry finishes the run without repeating a call that had succeeded.

A real server (its triggers and actions services on), `prefect deploy`, a process worker and the
automation of `python -m deployments.dead_runs` (made twice: it must stay one). The heartbeat frequency is
prefect.yaml's (30 s, Prefect's minimum), so the test waits about a minute and a half for the crash.
"""

import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from deployments.dead_runs import (
    AUTOMATION_NAME,
    crash_window,
    dead_run_automation,
    project_heartbeat_seconds,
)
from tasks.llm.ledger import CallLedger
from tests.eval_fixtures import write_dataset
from tests.llm_server import LLMServer
from tests.prefect_server import PrefectStack

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parents[2]
POOL = "threadmed-process"
ANSWERED_BEFORE_KILL = 6  # calls that succeed before every later one hangs until the processes are killed
# Liveness bounds only, never the bound under test: how long a step may take on a machine many times busier.
STEP_TIMEOUT_S = 600.0


def evaluation(dataset_dir: Path, run_dir: Path, api_base: str, model: str) -> dict[str, Any]:
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


def test_a_run_whose_worker_and_flow_process_died_is_crashed_then_retried_paying_no_call_twice(tmp_path):
    dataset = write_dataset(tmp_path / "build")
    heartbeat_s = project_heartbeat_seconds()
    expected = dead_run_automation(heartbeat_s)
    with PrefectStack(tmp_path / "prefect", PROJECT_ROOT) as stack, LLMServer() as llm:
        stack.create_process_pool(POOL)
        stack.start_worker(POOL)
        stack.deploy()
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
            "evaluate-models/adhoc", evaluation(dataset, tmp_path / "ended", llm.url, "omega")
        )
        assert ended.state_type == "COMPLETED", stack.explain(ended)
        paid_before = llm.stats()["ok"]

        run_dir = tmp_path / "killed"
        ledger = CallLedger(run_dir / "ledger")
        llm.hold_after(ok_replies=paid_before + ANSWERED_BEFORE_KILL)
        watch = stack.watch_deployment(
            "evaluate-models/adhoc", evaluation(dataset, run_dir, llm.url, "alpha")
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
