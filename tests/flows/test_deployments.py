"""prefect.yaml end to end, the way users run it: a real server, `prefect deploy`, a process worker, the CLI.

One test, because the server, the deployments and the worker take most of its time: it builds the
dataset from a generated dump, then evaluates three models on it against the fault-injecting LLM
server. Two models' first calls exhaust their retries, so the run must end Failed with its counts;
retrying the flow run and running the deployment again must finish it without repeating a single call
that had succeeded.
"""

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tasks.synth.generator import generate_dumps
from tests.llm_server import LLMServer
from tests.llm_server_state import Action
from tests.prefect_server import PrefectStack

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parents[2]
POOL = "threadmed-process"
SAMPLE = 2  # threads evaluated
RETRIES = {"max_attempts": 2, "base_delay_s": 0.01, "max_delay_s": 0.02}


def evaluation(dataset_dir: Path, run_dir: Path, api_base: str, split: str) -> dict[str, Any]:
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


def test_deploy_worker_and_cli_runs(tmp_path):
    dumps = generate_dumps(tmp_path / "dumps", posts=2000, seed=3)
    build_dir, run_dir = tmp_path / "build", tmp_path / "run"
    with PrefectStack(tmp_path / "prefect", PROJECT_ROOT) as stack, LLMServer() as llm:
        stack.create_process_pool(POOL)
        stack.start_worker(POOL)  # it starts up while the deployments are registered
        stack.deploy()
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
        settings = evaluation(build_dir, run_dir, llm.url, split=splits.most_common(1)[0][0])

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
