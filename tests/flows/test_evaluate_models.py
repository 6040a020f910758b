import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path

import prefect.settings
import pyarrow.parquet as pq
import pytest
import typer
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import (
    ArtifactCollectionFilter,
    ArtifactCollectionFilterKey,
    ArtifactFilter,
    ArtifactFilterKey,
    LogFilter,
    LogFilterFlowRunId,
)
from prefect.client.schemas.sorting import ArtifactSort
from prefect.logging.handlers import APILogWorker
from prefect.states import State
from rich.console import Console
from typer.testing import CliRunner

from flows.cli import evaluate as cli_evaluate
from flows.cli.evaluate import evaluate
from flows.evaluate_models import evaluate_models
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, RESPONSES
from tasks.core.files import write_text_atomic
from tasks.core.provenance import run_artifact_key
from tasks.evals.config import EvalConfig, EvaluationSettings, JudgeSpec, ModelSpec
from tasks.evals.receipts import ReceiptBook
from tasks.llm import call_store
from tasks.llm.ledger import CallLedger
from tasks.llm.request import Prices, ProviderLimits, RetryPolicy
from tasks.report.artifacts import report_prefix
from tests.eval_fixtures import full_disk_for, write_dataset
from tests.flows.cli.terminal import threadmed_here
from tests.llm_replies import JUDGE_REPLY, default_reply
from tests.llm_server import LLMServer
from tests.llm_server_state import Action

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

ROOT = Path(__file__).parents[2]
PRICES = Prices(input_per_token=1e-6, output_per_token=3e-6)
# 3 test threads of 3, 4 and 6 turns: 13 baseline and 10 oracle turns per model, each answered and judged.
CALLS_PER_MODEL = 2 * (13 + 10)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    return write_dataset(tmp_path_factory.mktemp("build"))


def settings(
    dataset: Path, run_dir: Path, url: str, models=("alpha", "beta"), **config
) -> EvaluationSettings:
    specs = [ModelSpec(name=m, model=f"openai/{m}", api_base=url, prices=PRICES) for m in models]
    return EvaluationSettings(
        dataset_dir=dataset,
        run_dir=run_dir,
        config=EvalConfig(
            models=specs,
            judge=JudgeSpec(name="judge", model="openai/judge", api_base=url, prices=PRICES, max_reasks=1),
            retry=RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02),
            **config,
        ),
    )


def parameters(run: EvaluationSettings) -> dict:
    """The flow's parameters for these settings (the report is tested on its own)."""
    return {"dataset_dir": str(run.dataset_dir), "run_dir": str(run.run_dir), "config": run.config,
            "report": False}  # fmt: skip


def summary_artifact(run_id: str, run_dir: Path) -> str:
    """The newest Markdown of the run's summary artifact, as the Prefect UI shows it."""
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(
                key=ArtifactFilterKey(any_=[run_artifact_key("evaluation-summary", run_id, run_dir)])
            ),
            sort=ArtifactSort.CREATED_DESC,
        )
    return artifacts[0].data


def read(run_dir: Path, name: str) -> list[dict]:
    return pq.read_table(run_dir / f"{name}.parquet").to_pylist()


def test_every_model_condition_and_turn_is_answered_judged_and_written(dataset, tmp_path):
    with LLMServer(latency_s=0.02) as server:
        run = settings(dataset, tmp_path, server.url, providers={"openai": ProviderLimits(max_concurrency=3)})
        summary = evaluate_models(**parameters(run))
        assert len(server.requests) == 2 * CALLS_PER_MODEL
        # The limit is held (reaching it is tested apart, without timing: tests/tasks/llm/test_call.py).
        assert server.state.max_in_flight <= 3

        assert pq.read_schema(tmp_path / "responses.parquet").equals(RESPONSES.schema)
        assert pq.read_schema(tmp_path / "judgments.parquet").equals(JUDGMENTS.schema)
        responses, judgments = read(tmp_path, "responses"), read(tmp_path, "judgments")
        assert {(r["model"], r["condition"]) for r in responses} == {
            (m, c) for m in ("alpha", "beta") for c in ("baseline", "oracle")
        }
        assert len(responses) == len(judgments) == CALLS_PER_MODEL
        assert all(r["status"] == "ok" and r["attempts"] == 1 for r in responses)
        assert all(j["score"] == 1.0 and j["parse_status"] == "ok" for j in judgments)
        assert {r["turn"] for r in responses if r["condition"] == "oracle"} == {1, 2, 3, 4, 5}
        assert summary.failed_calls == {}

        # Costs add up: every token the server counted, at the configured prices.
        billed = sum(
            len(" ".join(m["content"] for m in req.messages).split()) * 1e-6
            + len(default_reply(req.model, req.messages).split()) * 3e-6
            for req in server.requests
        )
        recorded = sum(r["cost_usd"] for r in responses) + sum(j["cost_usd"] for j in judgments)
        assert recorded == pytest.approx(billed)
        assert sum(r["input_cost_usd"] + r["output_cost_usd"] for r in responses) == pytest.approx(
            sum(r["cost_usd"] for r in responses)
        )

        manifest = json.loads((tmp_path / "manifest.json").read_text())
        assert manifest["run_id"] == responses[0]["run_id"] == summary.run_id
        assert manifest["prompts"].keys() == {"judge_rubric_v1", "judge_reask_v1"}
        assert manifest["sent"]["models"]["alpha"]["params"] == {"temperature": 0}
        assert {"litellm", "prefect"} <= manifest["packages"].keys() and "commit" in manifest["git"]
        assert len(manifest["dataset"]["fingerprint"]) == 64

        evaluate_models(**parameters(run))  # the same command again: nothing left to call, same outputs
        assert len(server.requests) == 2 * CALLS_PER_MODEL
        assert read(tmp_path, "responses") == responses and read(tmp_path, "judgments") == judgments


def test_failed_calls_fail_the_run_after_writing_everything_and_a_rerun_finishes(dataset, tmp_path):
    with LLMServer() as server:
        server.script(Action(status=400), model="beta")  # beta's first call: turn 0 of some thread
        server.script(Action(status=401), model="judge")
        run = settings(dataset, tmp_path, server.url, conditions=["baseline"])
        state = evaluate_models(**parameters(run), return_state=True)
        assert state.is_failed()
        assert state.message.startswith(
            "2 calls failed: authentication 1, bad request 1. A re-run alone will not help; fix first:"
            " [authentication] set the provider's key"
        )
        responses, judgments = read(tmp_path, "responses"), read(tmp_path, "judgments")
        assert len(responses) == len(judgments) == 2 * 13
        statuses = [r["status"] for r in responses]
        assert statuses.count("failed") == 1 and statuses.count("not_run") >= 2
        assert [j["parse_status"] for j in judgments].count("failed") == 1
        first_run_ok = server.stats()["ok"]
        assert len(server.requests) == first_run_ok + 2
        run_id = json.loads((tmp_path / "manifest.json").read_text())["run_id"]
        assert summary_artifact(run_id, tmp_path).startswith(
            f"# Evaluation run {run_id}\n\n**2 calls failed: authentication 1"
        )

        assert evaluate_models(**parameters(run)).failed_calls == {}
        assert all(r["status"] == "ok" for r in read(tmp_path, "responses"))
        assert all(j["parse_status"] == "ok" for j in read(tmp_path, "judgments"))
        # The re-run made only what was missing: the failed calls, the turns they blocked, their judgments.
        assert server.stats()["ok"] == 2 * 13 * 2
        assert len(server.requests) == first_run_ok + 2 + (2 * 13 * 2 - first_run_ok)
        assert max(server.ok_counts().values()) == 1


def test_a_job_that_raises_fails_alone_with_its_error_and_the_other_jobs_are_written(
    dataset, tmp_path, monkeypatch
):
    with LLMServer() as server:
        run = settings(dataset, tmp_path, server.url, conditions=["baseline"])
        with monkeypatch.context() as patched:
            full_disk_for("openai/beta", patched)
            state = evaluate_models(**parameters(run), return_state=True)
        assert state.is_failed()
        manifest = json.loads((tmp_path / "manifest.json").read_text())
        failures = manifest["summary"]["failed_jobs"]
        assert [(f["job"].split("/")[:2], f["stage"], f["error"]) for f in failures] == [
            (["beta", "baseline"], "solve", "OSError: [Errno 28] No space left on device")
        ] * 3
        assert state.message == (
            f"3 jobs failed and are missing from the tables: solve {failures[0]['job']} failed: OSError: "
            "[Errno 28] No space left on device (and others). Fix the cause, then re-run the same command "
            "(completed calls are kept)."
        )
        responses, judgments = read(tmp_path, "responses"), read(tmp_path, "judgments")
        assert {r["model"] for r in responses} == {j["model"] for j in judgments} == {"alpha"}
        assert len(responses) == len(judgments) == 13

        assert evaluate_models(**parameters(run)).failed_jobs == []  # disk freed: the re-run finishes
        assert len(read(tmp_path, "responses")) == len(read(tmp_path, "judgments")) == 2 * 13


def judge_breaks_on_beta(model: str, messages: list[dict]) -> str:
    if model == "judge":
        return "SCORE: who knows" if "beta answer" in messages[1]["content"] else JUDGE_REPLY
    return default_reply(model, messages)


def test_unparseable_judgments_are_counted_and_excluded_never_zero(dataset, tmp_path):
    with LLMServer(reply=judge_breaks_on_beta) as server:
        summary = evaluate_models(
            **parameters(settings(dataset, tmp_path, server.url, conditions=["baseline"]))
        )
    judgments = read(tmp_path, "judgments")
    beta = [j for j in judgments if j["model"] == "beta"]
    assert {(j["parse_status"], j["score"], j["attempts"]) for j in beta} == {("unparseable", None, 2)}
    groups = {g.model: g for g in summary.groups}
    assert (groups["beta"].counts["judged"], groups["beta"].counts["no\ngrade"]) == (0, 13)
    assert groups["beta"].score is None
    assert (groups["alpha"].counts["judged"], groups["alpha"].counts["no\ngrade"]) == (13, 0)
    assert groups["alpha"].score == 100.0
    assert summary.failed_calls == {}


@pytest.mark.parametrize(
    ("truncated", "judged", "judge_calls"), [("judge", ("ok", 1.0), 13), ("mark", ("truncated", None), 12)]
)
def test_an_answer_cut_at_max_tokens_is_counted_and_judged_or_marked_as_configured(
    dataset, tmp_path, truncated, judged, judge_calls
):
    with LLMServer() as server:
        server.script(Action(content="Rest, fluids, and", finish_reason="length"), model="alpha")
        run = settings(
            dataset, tmp_path, server.url, models=("alpha",), conditions=["baseline"], truncated=truncated
        )
        summary = evaluate_models(**parameters(run))
        assert sum(r.model == "judge" for r in server.requests) == judge_calls
    [cut] = [r for r in read(tmp_path, "responses") if r["finish_reason"] == "length"]
    [judgment] = [
        j
        for j in read(tmp_path, "judgments")
        if (j["thread_id"], j["turn"]) == (cut["thread_id"], cut["turn"])
    ]
    assert (judgment["parse_status"], judgment["score"]) == judged
    [group] = summary.groups
    assert (group.counts["cut"], group.counts["judged"]) == (1, judge_calls)
    assert summary.failed_calls == {}


RUN_IN_CHILD = """
import sys
from flows.evaluate_models import evaluate_models
from tasks.evals.config import EvaluationSettings
run = EvaluationSettings.model_validate_json(sys.argv[1])
evaluate_models(dataset_dir=str(run.dataset_dir), run_dir=str(run.run_dir), config=run.config, report=False)
"""


def test_a_kill_9_mid_run_then_a_rerun_repeats_no_successful_call(dataset, tmp_path):
    def recorded() -> int:
        return CallLedger(tmp_path / "ledger").count_succeeded()  # what the child has written so far

    def only_held_requests_in_flight() -> bool:
        state = server.state
        return state.held > 0 and state.in_flight == state.held and recorded() == server.stats()["ok"]

    with LLMServer() as server:
        run = settings(dataset, tmp_path, server.url, models=("alpha",))
        server.hold_after(ok_replies=10)  # later requests hang in flight until the process is killed
        env = {**os.environ, "PREFECT_API_URL": prefect.settings.PREFECT_API_URL.value()}
        child = subprocess.Popen(
            [sys.executable, "-c", RUN_IN_CHILD, run.model_dump_json()], cwd=ROOT, env=env
        )
        try:
            deadline = time.monotonic() + 600  # a liveness bound only: at a load of 14 it took over 90 s
            while not only_held_requests_in_flight():
                assert time.monotonic() < deadline and child.poll() is None
                time.sleep(0.05)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
        assert 10 <= recorded() < CALLS_PER_MODEL
        server.drop_held()

        evaluate_models(**parameters(run))
        assert server.stats()["ok"] == CALLS_PER_MODEL
        assert max(server.ok_counts().values()) == 1
    assert all(r["status"] == "ok" for r in read(tmp_path, "responses"))


@pytest.fixture
def cli(monkeypatch) -> typer.Typer:
    monkeypatch.setattr(cli_evaluate, "console", Console(width=200))
    app = typer.Typer()
    app.command()(evaluate)
    return app


LONG_NAMES = ("openai/gpt-4o-mini-2024-07-18", "openai/claude-3-5-sonnet-20241022-via-the-gateway")


def test_the_cli_summary_shows_whole_names_at_80_columns_the_provider_message_and_the_fix(dataset, tmp_path):
    with LLMServer() as server:
        server.script(Action(error={"message": "Incorrect API key provided", "code": 401}), model="judge")
        arguments = ["--dataset", str(dataset), "--out", str(tmp_path), "--models", ",".join(LONG_NAMES)]
        arguments += ["--judge", "openai/judge", "--api-base", server.url, "--conditions", "baseline"]
        arguments += ["--limit", "1", "--no-report"]
        done = threadmed_here("evaluate", *arguments, cwd=ROOT, columns=80)
    print(done.stdout)
    assert done.returncode == 1, done.stderr
    # The first line (what the run will do) and the progress lines are log lines when the output is not a
    # terminal: each one line, as long as it needs (a terminal wraps them itself).
    first, planned, *rest = done.stdout.splitlines()
    assert first.startswith("ThReadMed-QA: multi-turn medical questions") and " planning its jobs " in first
    assert re.fullmatch(r"Run \S+: 2 jobs", planned), planned
    lines = [line for line in rest if not re.match(r"\[\d+:\d\d\] ", line)]
    assert max(len(line) for line in lines) <= 80 and "…" not in "\n".join(lines)
    assert [line.strip() for line in lines if line.strip() in LONG_NAMES] == sorted(LONG_NAMES)
    headers = [line.split() for line in lines if line.lstrip().startswith("condition")]
    last_header_line = [
        "condition",
        "ok",
        "failed",
        "run",
        "cut",
        "judged",
        "grade",
        "cut",
        "failed",
        "mean",
        "USD",
    ]
    assert headers == [last_header_line] * 2
    rows = [line.split() for line in lines if line.startswith("baseline")]
    assert len(rows) == 2 and sum(int(row[8]) for row in rows) == 1  # the judge call that failed
    output = " ".join(done.stdout.split())
    assert (
        "1 call failed: authentication 1. A re-run alone will not help; fix first: [authentication] set the"
        " provider's key variable (e.g. OPENAI_API_KEY) or `api_key_env` in the config. Then re-run the"
        " same command (completed calls are kept)"
    ) in output
    assert (
        "authentication (1), e.g. openai/judge: error in an HTTP 200 reply: Incorrect API key provided. Fix:"
    ) in output


def test_dry_run_estimates_without_calling(cli, dataset, tmp_path):
    with LLMServer() as server:
        args = ["--dataset", str(dataset), "--out", str(tmp_path), "--models", "openai/gpt-4o,openai/alpha"]
        result = CliRunner().invoke(cli, [*args, "--api-base", server.url, "--limit", "2", "--dry-run"])
        assert result.exit_code == 0, result.output
        assert server.requests == []
    assert "openai/gpt-4o" in result.output and "unpriced" in result.output
    assert not (tmp_path / "responses.parquet").exists()


def test_dry_run_warns_when_its_estimate_passes_the_spending_cap(cli, dataset, tmp_path):
    args = ["--dataset", str(dataset), "--out", str(tmp_path), "--models", "openai/gpt-4o", "--limit", "1"]
    with LLMServer() as server:
        result = CliRunner().invoke(
            cli, [*args, "--api-base", server.url, "--max-cost", "0.001", "--dry-run"]
        )
        roomy = CliRunner().invoke(cli, [*args, "--api-base", server.url, "--max-cost", "100", "--dry-run"])
        assert server.requests == []
    assert result.exit_code == roomy.exit_code == 0, result.output
    warning = " ".join(result.output.split())
    assert re.search(
        r"Warning: the estimate \(USD [0-9.]+ still to spend at most, USD 0\.0000 spent\) exceeds the "
        r"spending cap of USD 0\.0010: the run stops at the cap if it needs that much; raise --max-cost to "
        r"be sure it finishes",
        warning,
    ), warning
    assert "Warning" not in roomy.output


def test_the_demo_config_runs_offline_from_the_command_line(cli, dataset, tmp_path):
    config = ROOT / "deployments" / "eval.demo.yaml"
    args = ["--dataset", str(dataset), "--out", str(tmp_path), "--config", str(config)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "not comparable to an LLM judge" in result.output
    responses = read(tmp_path, "responses")
    assert {r["model"] for r in responses} == {"retrieval", "deferral"}
    scores = {j["model"]: j["score"] for j in read(tmp_path, "judgments") if j["model"] == "deferral"}
    assert scores == {"deferral": 0.0}
    # Every job ended with all its calls made: each has a receipt, so the dry run below walks none.
    jobs = {(r["model"], r["condition"], r["thread_id"]) for r in responses}
    assert len(ReceiptBook(CallLedger(tmp_path / "ledger"))) == len(jobs)

    again = CliRunner().invoke(cli, [*args, "--dry-run"])
    assert again.exit_code == 0 and "total: 0 calls at most" in again.output


def test_a_run_stops_at_its_spending_cap_and_a_rerun_with_a_higher_cap_finishes_paying_no_call_twice(
    dataset, tmp_path
):
    with LLMServer() as server:
        capped = settings(dataset, tmp_path, server.url, models=("alpha",), max_cost_usd=0.01)
        state = evaluate_models(**parameters(capped), return_state=True)
        made, ledger = len(server.requests), CallLedger(tmp_path / "ledger")
        # Every call reserves its estimate (400 reply tokens) while in flight: the cap is never passed.
        assert 0 < made == ledger.count_succeeded() < CALLS_PER_MODEL
        assert ledger.total_cost_usd() <= 0.01
        assert state.is_failed() and "cost cap" in state.message
        summary = json.loads((tmp_path / "manifest.json").read_text())["summary"]
        assert summary["cost_cap"]["cap_usd"] == 0.01 and summary["failed_calls"]["cost_cap"] > 0
        # A call the cap kept back (an answer or a verdict, whichever came first) is recorded as not made,
        # and nothing of it is scored.
        responses, judgments = read(tmp_path, "responses"), read(tmp_path, "judgments")
        capped_answers = [r for r in responses if r["error_class"] == "cost_cap"]
        capped_verdicts = [j for j in judgments if (j["error"] or "").startswith("cost_cap: ")]
        assert capped_answers or capped_verdicts
        assert all(
            (r["status"], r["response"], r["attempts"], r["cost_usd"]) == ("failed", None, 0, 0.0)
            and r["error"].startswith("openai/alpha: not made: stopped at the spending cap of USD 0.0100")
            for r in capped_answers
        )
        assert {(j["parse_status"], j["score"], j["attempts"]) for j in capped_verdicts} <= {
            ("failed", None, 0)
        }
        capped_turns = {(r["condition"], r["thread_id"], r["turn"]) for r in capped_answers}
        unjudged = [j for j in judgments if (j["condition"], j["thread_id"], j["turn"]) in capped_turns]
        assert {(j["parse_status"], j["score"]) for j in unjudged} <= {("not_run", None)}

        raised = settings(dataset, tmp_path, server.url, models=("alpha",), max_cost_usd=1.0)
        assert evaluate_models(**parameters(raised), return_state=True).is_completed()
        assert len(server.requests) == CALLS_PER_MODEL
        assert set(server.ok_counts().values()) == {1}  # no call paid twice
        assert json.loads((tmp_path / "manifest.json").read_text())["summary"]["cost_cap"] is None


OFFLINE_CONFIG = {
    "models": [{"model": "threadmed/deferral"}],
    "judge": {"model": "threadmed/overlap-judge"},
    "conditions": ["baseline"],
    "sample": {"limit": 1},
}


def flow_run_logs(state: State) -> list[str]:
    """The messages of a flow run's logs in the API (what the UI and `prefect flow-run logs` show)."""
    APILogWorker.drain_all()  # the logs are sent in the background
    with get_client(sync_client=True) as client:
        logs = client.read_logs(
            LogFilter(flow_run_id=LogFilterFlowRunId(any_=[state.state_details.flow_run_id]))
        )
    return [log.message for log in logs]


def test_a_missing_dataset_folder_is_refused_before_anything_is_written_naming_the_parameter(
    tmp_path, monkeypatch
):
    missing, run_dir = tmp_path / "build", tmp_path / "run"
    parameters = {"dataset_dir": str(missing), "run_dir": str(run_dir), "config": OFFLINE_CONFIG}
    state = evaluate_models(**parameters, return_state=True)
    assert state.is_failed()
    assert state.message == (
        f"dataset_dir: {missing} is not a dataset build (no dataset/answered/threads.parquet); "
        "pass the --out folder of `threadmed build`"
    )
    # Started from a deployment, the fix is told as its parameters, not a command-line option.
    monkeypatch.setenv("PREFECT__RUNTIME__DEPLOYMENT__ID", "00000000-0000-0000-0000-000000000001")
    state = evaluate_models(**parameters, return_state=True)
    assert state.message.endswith(
        "(no dataset/answered/threads.parquet); pass the out_dir of a build-dataset run"
    )
    assert not run_dir.exists()  # no benchmark.json, no lock, no ledger


def test_a_sample_of_a_split_without_threads_is_refused_before_anything_is_written(dataset, tmp_path):
    """A deployment's run on a small build whose test split was empty ended Completed, having done nothing."""
    run_dir = tmp_path / "run"
    config = {**OFFLINE_CONFIG, "sample": {"split": "holdout"}}
    state = evaluate_models(dataset_dir=str(dataset), run_dir=str(run_dir), config=config, return_state=True)
    assert state.is_failed()
    assert state.message == (
        f"dataset_dir: {dataset} has no thread in split 'holdout'; "
        "choose one of: test (3 threads), train (2 threads), val (1 thread)"
    )
    assert not run_dir.exists()


def test_a_run_whose_every_call_failed_names_the_providers_error_and_writes_no_report(dataset, tmp_path):
    """litellm's own words were in the ledger alone; the report showed the failed calls as a run's results."""
    parameters = {"dataset_dir": str(dataset), "run_dir": str(tmp_path), "models": ["nosuchprovider/model-x"],
                  "judge": "threadmed/overlap-judge", "conditions": ["baseline"], "limit": 1}  # fmt: skip
    state = evaluate_models(**parameters, return_state=True)
    assert state.is_failed()
    provider_error = (
        "[bad request] nosuchprovider/model-x: litellm.BadRequestError: LLM Provider NOT provided."
    )
    assert state.message.startswith("1 call failed: bad request 1. A re-run alone will not help; fix first:")
    assert f"(completed calls are kept). First error of each kind: {provider_error}" in state.message
    assert state.message.endswith("No report was written: no call succeeded.")
    logs = flow_run_logs(state)
    assert [
        m for m in logs if m.startswith("bad request (1), e.g. nosuchprovider/model-x: litellm.BadRequest")
    ]
    assert "No report was written: no call succeeded." in logs
    assert (tmp_path / "manifest.json").is_file() and not (tmp_path / "report").exists()


def test_two_run_folders_of_the_same_settings_keep_their_own_artifacts(dataset, tmp_path):
    """One run id (the ledger's keys unchanged), two folders: neither's artifacts overwrite the other's."""
    run_dirs = [tmp_path / "a", tmp_path / "b"]
    for run_dir in run_dirs:
        evaluate_models(dataset_dir=str(dataset), run_dir=str(run_dir), config=OFFLINE_CONFIG)
    run_ids = {json.loads((run_dir / "manifest.json").read_text())["run_id"] for run_dir in run_dirs}
    [run_id] = run_ids
    keys = [run_artifact_key("evaluation-summary", run_id, run_dir) for run_dir in run_dirs]
    keys += [f"{report_prefix('report', [run_id], run_dir / 'report')}-summary" for run_dir in run_dirs]
    assert len(set(keys)) == 4
    with get_client(sync_client=True) as client:
        found = client.read_latest_artifacts(
            artifact_filter=ArtifactCollectionFilter(key=ArtifactCollectionFilterKey(any_=keys))
        )
    assert sorted(artifact.key for artifact in found) == sorted(keys)


def write_one_file_per_call(ledger_dir: Path) -> tuple[int, str]:
    """Lay the ledger out as the first ledger wrote it (`ok/<k[:2]>/<key>.json` and `failed/...`: one record
    per file, written as it wrote them), the segment store's files gone, with a stray temporary file a kill
    left behind: (the record files, the stray file's path in the ledger)."""
    records = list(CallLedger(ledger_dir).records())
    for name in ("segments", "compacted", "index"):
        shutil.rmtree(ledger_dir / name, ignore_errors=True)
    for record in records:
        path = ledger_dir / record.status / record.key[:2] / f"{record.key}.json"
        write_text_atomic(path, record.model_dump_json())
    stray = f"ok/{records[0].key[:2]}/{records[0].key}.json.1.2.tmp"
    (ledger_dir / stray).write_text('{"key": "')
    return len(records), stray


def test_a_run_folder_of_the_one_file_per_call_ledger_resumes_with_no_call_made(
    dataset, tmp_path, caplog, monkeypatch
):
    with LLMServer() as server:
        run = settings(dataset, tmp_path, server.url)
        evaluate_models(**parameters(run))
        responses, judgments = read(tmp_path, "responses"), read(tmp_path, "judgments")
        made = len(server.requests)
        files, stray = write_one_file_per_call(tmp_path / "ledger")
        assert files == made == 2 * CALLS_PER_MODEL
        monkeypatch.setattr(call_store, "_stores", OrderedDict())  # as a new process: no store read yet

        with caplog.at_level(logging.WARNING, logger="tasks.llm.legacy_ledger"):
            evaluate_models(**parameters(run))  # migrated once, then every call found by its key
        assert len(server.requests) == made
        assert read(tmp_path, "responses") == responses and read(tmp_path, "judgments") == judgments
    (line,) = [record.getMessage() for record in caplog.records if record.name == "tasks.llm.legacy_ledger"]
    (compacted,) = (tmp_path / "ledger" / "compacted").glob("*.parquet")
    assert line == (
        f"ledger {tmp_path / 'ledger'}: {made} calls ({made} succeeded) read from the old layout (one JSON "
        f"file per call) into compacted/{compacted.name}; 1 files were not whole records and read as calls "
        f"not made: {stray}"
    )
    assert sorted(path.name for path in (tmp_path / "ledger").iterdir()) == [
        ".compaction.lock",
        "compacted",
        "receipts",
    ]
