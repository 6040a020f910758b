"""`threadmed evaluate`: a folder that is not a build, or an unknown split, is a usage error; a spending cap
stops a run with its own exit status."""

from tests.eval_fixtures import write_dataset
from tests.flows.cli.terminal import OFFLINE_MODELS, assert_usage_error, threadmed, threadmed_here
from tests.llm_server import LLMServer


def test_evaluate_on_a_folder_that_is_not_a_build(tmp_path):
    (tmp_path / "dumps").mkdir()
    result = threadmed_here("evaluate", "--dataset", "dumps", "--out", "run", *OFFLINE_MODELS, cwd=tmp_path)
    assert_usage_error(
        result,
        "Invalid value for '--dataset': dumps is not a dataset build (no dataset/answered/threads.parquet); "
        "pass the --out folder of `threadmed build`",
    )
    assert not (tmp_path / "run").exists()


def test_an_unknown_split_lists_the_splits_of_the_dataset(tmp_path):
    write_dataset(tmp_path / "build")
    arguments = ["--dataset", "build", "--out", "run", *OFFLINE_MODELS, "--split", "tset"]
    assert_usage_error(
        threadmed_here("evaluate", *arguments, cwd=tmp_path),
        "Invalid value for '--split': build has no thread in split 'tset'; "
        "choose one of: test (3 threads), train (2 threads), val (1 thread)",
    )
    assert not (tmp_path / "run").exists()


def test_a_server_answering_one_request_at_a_time_gets_one_call_at_a_time_and_only_its_own_key(
    tmp_path, monkeypatch
):
    write_dataset(tmp_path / "build")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("LOCAL_SERVER_KEY", "local-key")
    with LLMServer(parallel=1) as server:
        result = threadmed(
            "evaluate", "--dataset", "build", "--out", "run", "--models", "openai/m",
            "--judge", "openai/judge", "--conditions", "oracle", "--limit", "1", "--no-report",
            "--api-base", server.url,
            "--api-key-env", "LOCAL_SERVER_KEY", "--max-concurrency", "1", "--max-tokens", "64",
            "--timeout", "60", cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        requests = server.requests
    assert server.state.max_in_flight == 1
    assert len(requests) == len({r.body_hash for r in requests}) > 0  # every call answered once: no retry
    assert {(r.status, r.params.get("max_tokens"), r.authorization) for r in requests} == {
        (200, 64, "Bearer local-key")
    }


def test_a_key_variable_without_an_endpoint_is_a_usage_error(tmp_path):
    write_dataset(tmp_path / "build")
    arguments = ["--dataset", "build", "--out", "run", *OFFLINE_MODELS, "--api-key-env", "LOCAL_SERVER_KEY"]
    assert_usage_error(
        threadmed_here("evaluate", *arguments, cwd=tmp_path),
        "Invalid value: the key in LOCAL_SERVER_KEY is sent only to an api_base: name the endpoint",
    )


def test_a_run_stopped_by_its_spending_cap_exits_3_saying_so_and_a_higher_cap_finishes_it(tmp_path):
    write_dataset(tmp_path / "build")
    arguments = ["--dataset", "build", "--out", "run", "--models", "openai/gpt-4o", "--judge", "openai/judge",
                 "--conditions", "oracle", "--limit", "1", "--no-report"]  # fmt: skip
    with LLMServer() as server:
        # gpt-4o at litellm's prices: a call's estimate (400 reply tokens) alone passes USD 0.001.
        stopped = threadmed(
            "evaluate", *arguments, "--api-base", server.url, "--max-cost", "0.001", cwd=tmp_path
        )
        assert server.requests == []
        finished = threadmed(
            "evaluate", *arguments, "--api-base", server.url, "--max-cost", "1", cwd=tmp_path
        )
        assert finished.returncode == 0, finished.stdout + finished.stderr
        assert len(server.requests) == len(server.ok_counts()) > 0  # each call made once
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    output = " ".join((stopped.stdout + stopped.stderr).split())
    assert "stopped at the spending cap of USD 0.0010: USD 0.0000 spent and USD 0.0000 reserved" in output
    assert (
        "Raise --max-cost (max_cost_usd) and re-run the same command to go on: no call is paid twice"
        in output
    )
    assert "Traceback" not in output
