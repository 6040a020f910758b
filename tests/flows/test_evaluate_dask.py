"""The evaluate flow on a local Dask cluster of two worker processes, against the counting test server: a
kill -9 of the whole run (flow, scheduler and workers) then a re-run pays no call twice, and one spending
cap holds for both workers (tasks/llm/cluster.py)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import prefect.settings
import pytest

from flows.evaluate_models import evaluate_models
from tasks.core.runners import RunnerSettings
from tasks.evals.config import EvalConfig, EvaluationSettings, JudgeSpec, ModelSpec
from tasks.evals.receipts import ReceiptBook
from tasks.llm.ledger import CallLedger
from tasks.llm.request import Prices, ProviderLimits, RetryPolicy
from tests.eval_fixtures import write_dataset
from tests.llm_server import LLMServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.usefixtures("prefect_harness", "one_dask_cluster_at_a_time_in_module"),
]

ROOT = Path(__file__).parents[2]
PRICES = Prices(input_per_token=1e-6, output_per_token=3e-6)
# 3 test threads of 3, 4 and 6 turns: 13 baseline and 10 oracle turns, each answered and judged.
CALLS = 2 * (13 + 10)
JOBS = 3 * 2  # each thread in each condition
DASK = RunnerSettings(kind="dask", dask_workers=2)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("build"))


def settings(dataset: Path, run_dir: Path, url: str, **config) -> EvaluationSettings:
    return EvaluationSettings(
        dataset_dir=dataset,
        run_dir=run_dir,
        config=EvalConfig(
            models=[ModelSpec(name="alpha", model="openai/alpha", api_base=url, prices=PRICES)],
            judge=JudgeSpec(name="judge", model="openai/judge", api_base=url, prices=PRICES, max_reasks=1),
            retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02),
            providers={"openai": ProviderLimits(max_concurrency=3)},
            **config,
        ),
    )


def evaluate_on_dask(run: EvaluationSettings):
    return evaluate_models(
        dataset_dir=str(run.dataset_dir),
        run_dir=str(run.run_dir),
        config=run.config,
        runner=DASK,
        report=False,
        return_state=True,
    )


RUN_IN_CHILD = """
import sys
from flows.evaluate_models import evaluate_models
from tasks.core.runners import RunnerSettings
from tasks.evals.config import EvaluationSettings
run = EvaluationSettings.model_validate_json(sys.argv[1])
evaluate_models(dataset_dir=str(run.dataset_dir), run_dir=str(run.run_dir), config=run.config, report=False,
                runner=RunnerSettings.model_validate_json(sys.argv[2]))
"""


def test_a_kill_9_of_a_dask_run_then_a_rerun_pays_no_call_twice(dataset, tmp_path):
    def recorded() -> int:
        return CallLedger(tmp_path / "ledger").count_succeeded()

    def only_held_requests_in_flight() -> bool:
        state = server.state
        return state.held > 0 and state.in_flight == state.held and recorded() == server.stats()["ok"]

    with LLMServer() as server:
        run = settings(dataset, tmp_path, server.url)
        server.hold_after(ok_replies=10)  # later requests hang in flight until the run is killed
        env = {**os.environ, "PREFECT_API_URL": prefect.settings.PREFECT_API_URL.value()}
        # Its own process group: the flow, the cluster's scheduler, nannies and worker processes die at once.
        child = subprocess.Popen(
            [sys.executable, "-c", RUN_IN_CHILD, run.model_dump_json(), DASK.model_dump_json()],
            cwd=ROOT,
            env=env,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 600  # a liveness bound only
            while not only_held_requests_in_flight():
                assert time.monotonic() < deadline and child.poll() is None
                time.sleep(0.05)
            held = server.state.held
        finally:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        assert 10 <= recorded() < CALLS and held <= 3  # the provider's limit held across both workers
        server.drop_held()

        assert evaluate_on_dask(run).is_completed()
        stats = server.stats()
    assert (stats["ok"], stats["max_ok_per_body"], stats["max_in_flight"] <= 3) == (CALLS, 1, True)
    # Each job, walked as its task ended on a worker, has its receipt: a dry run counts it without a walk.
    assert len(ReceiptBook(CallLedger(tmp_path / "ledger"))) == JOBS


def test_one_spending_cap_holds_for_every_worker_and_a_rerun_with_a_higher_cap_pays_no_call_twice(
    dataset, tmp_path
):
    with LLMServer() as server:
        state = evaluate_on_dask(settings(dataset, tmp_path, server.url, max_cost_usd=0.01))
        made, ledger = len(server.requests), CallLedger(tmp_path / "ledger")
        # Every call reserves its estimate (400 reply tokens) while in flight, in one budget for both
        # workers: the cap is never passed.
        assert 0 < made == ledger.count_succeeded() < CALLS
        assert ledger.total_cost_usd() <= 0.01
        assert state.is_failed() and "cost cap" in state.message
        summary = json.loads((tmp_path / "manifest.json").read_text())["summary"]
        assert summary["cost_cap"]["cap_usd"] == 0.01 and summary["failed_calls"]["cost_cap"] > 0

        assert evaluate_on_dask(settings(dataset, tmp_path, server.url, max_cost_usd=1.0)).is_completed()
        stats = server.stats()
    assert (stats["ok"], stats["max_ok_per_body"]) == (CALLS, 1)
