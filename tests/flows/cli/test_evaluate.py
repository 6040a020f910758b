"""`threadmed evaluate`: a folder that is not a build, or an unknown split, is a usage error; a spending cap
stops a run with its own exit status, saying what the folder spent once its calls in flight ended; the
summary says what this invocation made and paid beside the run's totals; it says what it will do before its
flow starts (a dry run, before its estimate); a piped dry run's table names every model whole."""

import dataclasses
import json
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

import pytest
import typer

from tasks.benchmarks.threadmed import benchmark
from tasks.llm.ledger import CallLedger, CallRecord
from tests.eval_fixtures import write_dataset
from tests.flows.cli.terminal import (
    COMMAND_TIMEOUT_S,
    FLOW_STARTS,
    OFFLINE_MODELS,
    THREADMED,
    assert_usage_error,
    threadmed_before_any_flow,
    threadmed_here,
    threadmed_until_its_flow,
)
from tests.llm_server import LLMServer
from tests.llm_server_state import Action


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
        result = threadmed_here(
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
        stopped = threadmed_here(
            "evaluate", *arguments, "--api-base", server.url, "--max-cost", "0.001", cwd=tmp_path
        )
        assert server.requests == []
        finished = threadmed_here(
            "evaluate", *arguments, "--api-base", server.url, "--max-cost", "1", cwd=tmp_path
        )
        assert finished.returncode == 0, finished.stdout + finished.stderr
        assert len(server.requests) == len(server.ok_counts()) > 0  # each call made once
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    output = " ".join((stopped.stdout + stopped.stderr).split())
    assert re.search(
        r"stopped at the spending cap of USD 0\.0010: a call of about USD 0\.00[0-9]+ would have passed it "
        r"with the calls then in flight, so it was not made \(nor any after it\); the run folder has spent "
        r"USD 0\.0000 \(its ledger, every call in flight ended\)",
        output,
    ), output
    assert (
        "Raise --max-cost (max_cost_usd) and re-run the same command to go on: no call is paid twice"
        in output
    )
    assert "Traceback" not in output


def ledger_state(run_dir: Path) -> dict[str, tuple[int, float]]:
    """(attempts, cost) of every call in the run folder's ledger, by key."""
    return {r.key: (r.attempts, r.cost_usd) for r in CallLedger(run_dir / "ledger").records()}


def summary_lines(result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith("Calls ")]


def test_a_resume_says_what_it_made_and_paid_beside_the_run_s_totals_and_an_idle_one_that_it_made_none(
    tmp_path,
):
    write_dataset(tmp_path / "build")
    arguments = ["--dataset", "build", "--out", "run", "--models", "openai/gpt-4o", "--judge", "openai/judge",
                 "--conditions", "oracle", "--limit", "1", "--no-report"]  # fmt: skip
    with LLMServer() as server:
        server.script(Action(status=400), Action(status=400), model="gpt-4o")  # two answers fail for good
        first = threadmed_here("evaluate", *arguments, "--api-base", server.url, cwd=tmp_path)
        assert first.returncode == 1, first.stdout + first.stderr
        before, sent = ledger_state(tmp_path / "run"), len(server.requests)
        resumed = threadmed_here("evaluate", *arguments, "--api-base", server.url, cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        made, after = len(server.requests) - sent, ledger_state(tmp_path / "run")
        idle = threadmed_here("evaluate", *arguments, "--api-base", server.url, cwd=tmp_path)
        assert idle.returncode == 0 and len(server.requests) == sent + made
    assert made == 4  # the two answers again, and their two verdicts
    paid = sum(cost for _, cost in after.values()) - sum(cost for _, cost in before.values())
    assert paid > 0  # gpt-4o is priced: the invocation's dollars are its own, not the run's
    run_line = (
        f"Calls of the run, every invocation: {len(after)} single "
        f"(USD {sum(cost for _, cost in after.values()):,.4f})"
    )
    assert summary_lines(resumed) == [f"Calls made by this invocation: 4 single (USD {paid:,.4f})", run_line]
    assert summary_lines(idle) == ["Calls made by this invocation: none (USD 0.0000)", run_line]


def test_a_folder_that_spent_more_than_the_cap_is_one_line_and_exits_as_a_cap_stop_with_no_call(tmp_path):
    write_dataset(tmp_path / "build")
    ledger = CallLedger(tmp_path / "run" / "ledger")
    now = datetime.now(UTC)
    paid = CallRecord(
        key="aa01", model="openai/m", status="ok", input_cost_usd=0.38, started_at=now, finished_at=now
    )
    ledger.write(paid)
    with LLMServer() as server:
        result = threadmed_before_any_flow(
            "evaluate", "--dataset", "build", "--out", "run", "--models", "openai/gpt-4o", "--judge",
            "openai/judge", "--api-base", server.url, "--max-cost", "0", cwd=tmp_path,
        )  # fmt: skip
        assert server.requests == []
    assert result.returncode == 3
    assert (result.stdout + result.stderr).splitlines() == [
        "run has spent USD 0.3800 already, more than the spending cap of USD 0.0000: no call was made; raise "
        "--max-cost (max_cost_usd) above what it spent and re-run the same command to go on"
    ]


@pytest.mark.parametrize(
    ("cap", "message"),
    [
        ("inf", "the cap reads as infinite (so does any number too large for a float, e.g. 1e400), which is "
         "no cap: give a finite amount of USD, e.g. 5"),
        ("1e400", "the cap reads as infinite (so does any number too large for a float, e.g. 1e400), which "
         "is no cap: give a finite amount of USD, e.g. 5"),
        ("nan", "nan is not an amount of USD: give the cap as a finite number, e.g. 5"),
        ("-1", "-1 is below 0: give the cap as an amount of USD, 0 or more"),
    ],
)  # fmt: skip
def test_a_cap_that_is_not_a_finite_amount_is_a_usage_error_and_calls_nothing(tmp_path, cap, message):
    write_dataset(tmp_path / "build")
    with LLMServer() as server:
        result = threadmed_before_any_flow(
            "evaluate", "--dataset", "build", "--out", "run", "--models", "openai/gpt-4o", "--judge",
            "openai/judge", "--api-base", server.url, "--max-cost", cap, cwd=tmp_path,
        )  # fmt: skip
        assert server.requests == []
    assert_usage_error(result, f"Invalid value for '--max-cost': {message}")


def test_an_infinite_cap_in_a_config_file_is_refused_as_not_finite(tmp_path):
    write_dataset(tmp_path / "build")
    (tmp_path / "eval.yaml").write_text("models: [{model: threadmed/deferral}]\nmax_cost_usd: .inf\n")
    result = threadmed_before_any_flow(
        "evaluate", "--dataset", "build", "--out", "run", "--config", "eval.yaml", cwd=tmp_path
    )
    assert_usage_error(
        result, "Invalid value for '--config': eval.yaml: max_cost_usd: Input should be a finite number"
    )


PRICED_CONFIG = """\
models: [{name: m, model: openai/m, prices: {input_per_token: 0.0, output_per_token: 0.00001}}]
judge: {model: openai/judge, prices: {input_per_token: 0.0, output_per_token: 0.00001}}
conditions: [oracle]
"""


def test_the_spend_a_cap_stop_records_and_prints_is_the_ledger_s_once_the_calls_in_flight_have_ended(
    tmp_path,
):
    """Each call reserves 400 reply tokens (USD 0.004); the cap fits two. The first turns of the 3 threads go
    out together: two are held at the server in flight while the third is refused, then answered and paid."""
    write_dataset(tmp_path / "build")
    (tmp_path / "eval.yaml").write_text(PRICED_CONFIG)
    with LLMServer() as server:
        server.answer_in_groups(3, timeout_s=20)  # the third never comes: the two are answered after 20 s
        stopped = threadmed_here(
            "evaluate", "--dataset", "build", "--out", "run", "--config", "eval.yaml", "--split", "test",
            "--no-report", "--api-base", server.url, "--max-cost", "0.01", cwd=tmp_path,
        )  # fmt: skip
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    spent = CallLedger(tmp_path / "run" / "ledger").total_cost_usd()
    assert spent > 0  # the calls in flight at the refusal were paid
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["summary"]["cost_cap"] == {"cap_usd": 0.01, "spent_usd": spent, "refused_usd": 0.004}
    output = " ".join(stopped.stdout.split())
    assert (
        f"Run {manifest['run_id']} stopped at the spending cap of USD 0.0100: a call of about USD 0.0040 "
        "would have passed it with the calls then in flight, so it was not made (nor any after it); the run "
        f"folder has spent USD {spent:,.4f} (its ledger, every call in flight ended)."
    ) in output


THREADMED_TITLE = (
    "ThReadMed-QA: multi-turn medical questions from r/AskDocs, judged against physician answers"
)
RUN_FIRST_LINE = (
    f"{THREADMED_TITLE}. Run of threadmed/deferral into run: planning its jobs (calls its ledger holds are "
    "not made again)"
)


def test_a_run_says_what_it_will_do_before_its_flow_and_prefect_s_server_start(tmp_path):
    write_dataset(tmp_path / "build")
    arguments = ["--dataset", "build", "--out", "run", *OFFLINE_MODELS, "--conditions", "oracle"]
    lines = threadmed_until_its_flow("evaluate", *arguments, cwd=tmp_path)
    assert lines[0] == RUN_FIRST_LINE, lines
    planned = re.fullmatch(r"Run (\S+): (\d+) jobs", lines[1])
    assert planned is not None, lines
    assert int(planned[2]) > 0
    assert FLOW_STARTS in lines[2:]


DRY_RUN = ["--dataset", "build", "--out", "run", *OFFLINE_MODELS, "--dry-run"]
DRY_RUN_FIRST_LINE = (
    f"{THREADMED_TITLE}. Dry run of threadmed/deferral into run: planning the calls still to make and "
    "estimating them (none is made)"
)
PLAN_WALKED = "<the plan is walked here>"


@pytest.mark.parametrize(
    ("arguments", "first_line"), [(DRY_RUN, DRY_RUN_FIRST_LINE), (DRY_RUN[:-1], RUN_FIRST_LINE)]
)
def test_a_run_and_a_dry_run_say_what_they_will_do_before_the_plan_is_walked(tmp_path, arguments, first_line):
    write_dataset(tmp_path / "build")

    def plan_stops(settings):
        print(PLAN_WALKED)
        raise typer.Exit(0)

    planless = dataclasses.replace(benchmark.THREADMED, plan=plan_stops)
    with mock.patch.object(benchmark, "THREADMED", planless):
        result = threadmed_here("evaluate", *arguments, cwd=tmp_path)
    assert (result.returncode, result.stdout.splitlines(), result.stderr) == (
        0,
        [first_line, PLAN_WALKED],
        "",
    )


LONG_NAMES = ["openai/a-model-under-test-with-a-long-name", "openai/a-judge-with-a-long-name-too"]


def test_a_piped_dry_run_names_every_model_whole(tmp_path):
    """Rich gives a pipe 80 columns: a table of eight columns cut names to "openai..." and "unpri..."."""
    write_dataset(tmp_path / "build")
    environment = {name: value for name, value in os.environ.items() if name not in ("COLUMNS", "LINES")}
    piped = subprocess.run(
        [THREADMED, "evaluate", "--dataset", "build", "--out", "run",
         "--models", f"{LONG_NAMES[0]},threadmed/deferral", "--judge", LONG_NAMES[1], "--dry-run"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, cwd=tmp_path, env=environment,
        timeout=COMMAND_TIMEOUT_S,
    )  # fmt: skip
    assert (piped.returncode, piped.stderr) == (0, "")
    assert piped.stdout.splitlines()[0] == (
        f"{THREADMED_TITLE}. Dry run of {LONG_NAMES[0]}, threadmed/deferral into run: planning the calls "
        "still to make and estimating them (none is made)"
    )  # before its estimate
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in piped.stdout.splitlines()
        if "single" in line
    ]
    assert sorted((row[0], row[1], row[-1]) for row in rows) == [
        (LONG_NAMES[1], "judge", "unpriced"),
        (LONG_NAMES[0], "inference", "unpriced"),
        ("threadmed/deferral", "inference", "0.00"),
    ]
