"""Batch mode end to end: the evaluate flows and the resume-batch-runs poller, through litellm's real HTTP
calls to the local server's files and batches API."""

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import prefect.settings
import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import ArtifactCollectionFilter, ArtifactCollectionFilterKey

from flows.evaluate_models import evaluate_models
from flows.resume_batch_runs import resume_batch_runs
from tasks.core.provenance import run_artifact_key
from tasks.evals.config import BatchSettings, EvalConfig, JudgeSpec, ModelSpec
from tasks.llm.request import Prices, RetryPolicy
from tests.eval_fixtures import outcomes, write_dataset
from tests.flows.cli.terminal import THREADMED, threadmed_here
from tests.llm_server import LLMServer
from tests.llm_server_state import BatchScript

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

PRICES = Prices(input_per_token=1e-6, output_per_token=3e-6)
# 3 test threads of 3, 4 and 6 turns: 13 baseline and 10 oracle turns, each answered and judged.
CALLS = 2 * (13 + 10)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("build"))


def config(
    url: str,
    *,
    model_mode: str = "batch",
    judge_mode: str = "batch",
    conditions=("baseline", "oracle"),
    **batch,
) -> EvalConfig:
    return EvalConfig(
        models=[ModelSpec(name="alpha", model="openai/alpha", api_base=url, prices=PRICES, mode=model_mode)],
        judge=JudgeSpec(name="judge", model="openai/judge", api_base=url, prices=PRICES, mode=judge_mode),
        retry=RetryPolicy(max_attempts=3, base_delay_s=0.01, max_delay_s=0.02),
        batch=BatchSettings(poll_interval_s=0.02, **batch),
        conditions=list(conditions),
    )


def evaluate(dataset: Path, run_dir: Path, run_config: EvalConfig):
    return evaluate_models(
        dataset_dir=str(dataset), run_dir=str(run_dir), config=run_config, report=False, return_state=True
    )


def test_a_batch_run_writes_what_the_single_call_run_writes_at_half_the_price(dataset, tmp_path):
    with LLMServer() as server:
        single = evaluate(
            dataset, tmp_path / "single", config(server.url, model_mode="single", judge_mode="single")
        )
        assert (server.stats()["requests"], server.stats()["batch_requests"]) == (CALLS, 0)
        batched = evaluate(dataset, tmp_path / "batch", config(server.url))
        assert (server.stats()["requests"], server.stats()["batch_requests"]) == (CALLS, CALLS)
    assert single.is_completed() and batched.is_completed()
    for table in ("responses", "judgments"):
        assert outcomes(tmp_path / "batch", table) == outcomes(tmp_path / "single", table)
    single_summary, batch_summary = (
        json.loads((tmp_path / run / "manifest.json").read_text())["summary"] for run in ("single", "batch")
    )
    assert [g["counts"] for g in batch_summary["groups"]] == [g["counts"] for g in single_summary["groups"]]
    assert [g["score"] for g in batch_summary["groups"]] == [g["score"] for g in single_summary["groups"]]
    single_cost, batch_cost = (
        single_summary["calls_by_mode"]["single"],
        batch_summary["calls_by_mode"]["batch"],
    )
    assert (batch_summary["calls_by_mode"].keys(), batch_cost["calls"]) == ({"batch"}, CALLS)
    assert batch_cost["cost_usd"] == pytest.approx(single_cost["cost_usd"] / 2)
    # 7 waves: the longest thread's 6 turns, then the judge call of its last answer.
    records = (tmp_path / "batch" / "batches").glob("*.batch.json")
    assert max(json.loads(path.read_text())["wave"] for path in records) == 7


def test_modes_mix_per_role_single_answers_and_batched_judgments(dataset, tmp_path):
    with LLMServer() as server:
        state = evaluate(dataset, tmp_path, config(server.url, model_mode="single"))
        assert state.is_completed()
        assert {r.model for r in server.requests} == {"alpha"}
        assert (server.stats()["requests"], server.stats()["batch_requests"]) == (CALLS // 2, CALLS // 2)
    summary = json.loads((tmp_path / "manifest.json").read_text())["summary"]
    assert {mode: totals["calls"] for mode, totals in summary["calls_by_mode"].items()} == {
        "single": CALLS // 2,
        "batch": CALLS // 2,
    }


def test_only_the_failed_calls_of_a_partly_failed_batch_are_sent_again(dataset, tmp_path):
    with LLMServer() as server:
        server.script_batch(BatchScript(failed_lines={0: 500, 2: 503}))
        state = evaluate(dataset, tmp_path, config(server.url))
        submissions = server.batch_submissions()
    assert state.is_completed()
    assert sorted(submissions.values()) == [1] * (CALLS - 2) + [2, 2]
    assert all(row["status"] == "ok" for row in outcomes(tmp_path, "responses"))


def test_the_unanswered_calls_of_an_expired_batch_are_sent_again(dataset, tmp_path, caplog):
    with LLMServer() as server:
        server.script_batch(BatchScript(expire=True, expire_completed=2))
        state = evaluate(dataset, tmp_path, config(server.url))
        first = server.batches[0]
        submissions = server.batch_submissions()
    assert state.is_completed()
    assert (first["status"], first["request_counts"]["completed"]) == ("expired", 2)
    resubmitted = first["request_counts"]["total"] - 2
    assert sorted(submissions.values()) == [1] * (CALLS - resubmitted) + [2] * resubmitted
    assert (
        f"expired before all its calls were answered: the {resubmitted} unanswered are submitted again"
        in (caplog.text)
    )


def test_a_run_that_stops_waiting_is_finished_by_the_poller_submitting_nothing_twice(dataset, tmp_path):
    run_dir = tmp_path / "runs" / "paper"
    with LLMServer(batch_delay_s=3600) as server:
        # The oracle condition alone: every answer in wave 1, every judge call in wave 2.
        waiting = evaluate(dataset, run_dir, config(server.url, conditions=["oracle"], wait_s=0))
        assert (waiting.name, waiting.is_completed()) == ("AwaitingBatches", True)
        assert waiting.message.startswith(
            "1 batch (10 calls) still in flight at the provider (batch_1); re-run"
        )
        assert not (run_dir / "responses.parquet").exists()
        polls = []
        while polls[-1:] != [{}] and len(polls) < 5:  # a wave per poll, until no run waits
            server.finish_batches()
            polls.append(resume_batch_runs(runs_dir=str(tmp_path / "runs"), report=False))
        assert [{run: outcome.split(":")[0] for run, outcome in poll.items()} for poll in polls] == [
            {str(run_dir): "AwaitingBatches"},
            {str(run_dir): "finished"},
            {},
        ]
        assert server.stats()["max_submissions_per_custom_id"] == 1
        assert server.stats()["requests"] == 0
    assert (run_dir / "manifest.json").exists() and len(outcomes(run_dir, "judgments")) == 10
    run_id = json.loads((run_dir / "manifest.json").read_text())["run_id"]
    with get_client(sync_client=True) as client:
        # Each flow run that sees the wave adds a version of its artifact; the latest one is the wave now.
        (latest,) = client.read_latest_artifacts(
            artifact_filter=ArtifactCollectionFilter(
                key=ArtifactCollectionFilterKey(any_=[run_artifact_key("batch-wave", run_id, run_dir, "1")])
            )
        )
    assert latest.data == 100.0
    assert latest.description.endswith("wave 1: 10 calls submitted, 0 in progress, 10 completed, 0 failed")


def test_a_run_folder_moved_while_waiting_is_finished_where_it_is_now_submitting_nothing_twice(
    dataset, tmp_path, monkeypatch
):
    """The dataset named by a relative path, from another working folder than the poller's."""
    monkeypatch.chdir(dataset.parent)
    runs = tmp_path / "runs"
    with LLMServer(batch_delay_s=3600) as server:
        waiting = evaluate(
            Path(dataset.name), runs / "draft", config(server.url, conditions=["oracle"], wait_s=0)
        )
        assert waiting.name == "AwaitingBatches"
        (runs / "draft").rename(runs / "paper")
        monkeypatch.chdir(tmp_path)
        polls = []
        while polls[-1:] != [{}] and len(polls) < 5:  # each poll sees the batches before it finished
            server.finish_batches()
            polls.append(resume_batch_runs(runs_dir=str(runs), report=False))
        stats = server.stats()
    paper = str(runs / "paper")
    assert [{run: outcome.split(";")[0] for run, outcome in poll.items()} for poll in polls] == [
        {paper: "AwaitingBatches: 1 batch (10 calls) still in flight at the provider (batch_2)"},
        {paper: "finished"},
        {},
    ]
    assert not (runs / "draft").exists()
    assert (stats["max_submissions_per_custom_id"], stats["batch_requests"], stats["requests"]) == (1, 20, 0)
    assert len(outcomes(runs / "paper", "judgments")) == 10


def test_a_run_the_poller_cannot_go_on_with_is_named_and_the_others_are_polled(dataset, tmp_path, caplog):
    """Run a's dataset is gone; run b's batch is unknown to the provider, so its calls go out again."""
    runs, gone = tmp_path / "runs", tmp_path / "gone"
    shutil.copytree(dataset, gone)
    with LLMServer(batch_delay_s=3600) as server:
        run_config = config(server.url, conditions=["oracle"], wait_s=0)
        assert evaluate(gone, runs / "a", run_config).name == "AwaitingBatches"  # batch_1
        assert evaluate(dataset, runs / "b", run_config).name == "AwaitingBatches"  # batch_2
        shutil.rmtree(gone)
        server.forget_batch("batch_2")
        polls = []
        while not (runs / "b" / "manifest.json").exists() and len(polls) < 5:
            server.finish_batches()
            polls.append(resume_batch_runs(runs_dir=str(runs), report=False, return_state=True))
        batches = server.batches
    refusal = (
        f"its dataset folder {gone} (recorded in batches/run.json) is not there: re-run its evaluation by "
        "hand with the dataset where it is now"
    )
    assert [(poll.is_failed(), poll.message) for poll in polls] == [
        (True, f"1 of 2 waiting runs could not go on: {runs / 'a'}: {refusal}")
    ] * 3
    assert (
        "batch batch_2 (wave 1) is no longer known to the provider (404): the 10 unanswered are submitted "
        "again" in caplog.text
    )
    # b's answers again in batch_3, then its judge calls; a's batch is left as it was.
    assert [(batch["id"], batch["request_counts"]["total"]) for batch in batches] == [
        ("batch_1", 10),
        ("batch_3", 10),
        ("batch_4", 10),
    ]
    assert len(outcomes(runs / "b", "judgments")) == 10


def test_a_run_that_would_call_one_by_one_what_is_in_flight_in_batches_is_refused(dataset, tmp_path):
    with LLMServer() as server:
        server.hold_batches()
        evaluate(dataset, tmp_path, config(server.url, judge_mode="single", wait_s=0))
        refused = evaluate(dataset, tmp_path, config(server.url, model_mode="single", judge_mode="single"))
        assert (server.stats()["requests"], server.stats()["batch_requests"]) == (0, 13)
    assert refused.is_failed()
    assert refused.message == (
        f"{tmp_path} has 1 batch in flight for openai/alpha at {server.url}, which this run would call "
        "one by one (paying twice): re-run in batch mode for those roles (--batch), at that endpoint, to "
        "collect them first"
    )


def batch_command(dataset: Path, run_dir: Path, api_base: str) -> list[str]:
    """`threadmed evaluate`'s arguments: the oracle condition, model and judge in batch mode."""
    return [
        "evaluate", "--dataset", str(dataset), "--out", str(run_dir), "--models", "openai/m",
        "--judge", "openai/judge", "--api-base", api_base, "--split", "test", "--conditions", "oracle",
        "--no-report", "--batch", "model,judge", "--batch-poll", "0.05",
    ]  # fmt: skip


def test_batches_left_in_flight_by_exit_75_and_by_kill_9_are_collected_never_submitted_twice(
    dataset, tmp_path
):
    """`threadmed evaluate` (on the tests' Prefect server) stops waiting with exit 75, a re-run in a process
    of its own is killed with kill -9 while its wave is at the provider, and a last run finishes."""
    env = {**os.environ, "PREFECT_API_URL": prefect.settings.PREFECT_API_URL.value()}
    with LLMServer(batch_delay_s=3600) as llm:  # a batch finishes when the test says so
        command = batch_command(dataset, tmp_path, llm.url)
        waiting = threadmed_here(*command, "--batch-wait", "0", cwd=tmp_path)
        assert waiting.returncode == 75, waiting.stdout + waiting.stderr
        assert (
            "1 batch (10 calls) still in flight at the provider (batch_1); re-run the same command later"
            in (" ".join(waiting.stdout.split()))
        )
        assert not (tmp_path / "manifest.json").exists()
        llm.finish_batches()  # wave 1 only: wave 2 stays at the provider while the re-run is killed
        killed = subprocess.Popen(
            [THREADMED, *command], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 600  # a liveness bound only
            while llm.stats()["batches"] < 2:  # the re-run collected wave 1 (answers) and sent wave 2
                assert killed.poll() is None and time.monotonic() < deadline
                time.sleep(0.02)
        finally:
            killed.kill()
            killed.wait()
        llm.finish_batches()
        finished = threadmed_here(*command, cwd=tmp_path)
        assert finished.returncode == 0, finished.stdout + finished.stderr
        stats = llm.stats()
    assert (stats["max_submissions_per_custom_id"], stats["batch_requests"], stats["requests"]) == (1, 20, 0)
    # Wave 2, submitted by the killed run, is collected (recorded) by this one.
    assert [line for line in finished.stdout.splitlines() if line.startswith("Calls ")] == [
        "Calls made by this invocation: 10 batch (USD 0.0000)",
        "Calls of the run, every invocation: 20 batch (USD 0.0000)",
    ]


def test_an_endpoint_with_a_trailing_slash_is_the_same_endpoint_to_a_batch_run(dataset, tmp_path):
    """`--api-base URL/` leaves a batch in flight; `--api-base URL` collects it (the command's options)."""
    with LLMServer() as llm:
        llm.script_batch(BatchScript(delay_s=3600))
        waiting = threadmed_here(
            *batch_command(dataset, tmp_path, f"{llm.url}/"), "--batch-wait", "0", cwd=tmp_path
        )
        assert waiting.returncode == 75, waiting.stdout + waiting.stderr
        llm.finish_batches()
        finished = threadmed_here(*batch_command(dataset, tmp_path, llm.url), cwd=tmp_path)
        assert finished.returncode == 0, finished.stdout + finished.stderr
        stats = llm.stats()
    assert (stats["max_submissions_per_custom_id"], stats["batch_requests"], stats["requests"]) == (1, 20, 0)


def test_under_a_cap_a_batch_run_submits_what_fits_and_a_higher_cap_submits_the_rest_once(dataset, tmp_path):
    with LLMServer() as server:
        capped = config(server.url, judge_mode="single").model_copy(update={"max_cost_usd": 0.005})
        state = evaluate(dataset, tmp_path, capped)
        submitted = server.stats()["batch_requests"]
        # The answers each reserve 400 reply tokens at the batch price until their batch is collected.
        assert state.is_failed() and "cost cap" in state.message
        assert 0 < submitted < CALLS // 2
        assert json.loads((tmp_path / "manifest.json").read_text())["summary"]["cost_cap"]["cap_usd"] == 0.005
        raised = capped.model_copy(update={"max_cost_usd": 1.0})
        assert evaluate(dataset, tmp_path, raised).is_completed()
        stats = server.stats()
    assert (stats["batch_requests"], stats["requests"], stats["max_submissions_per_custom_id"]) == (
        CALLS // 2,
        CALLS // 2,
        1,
    )
