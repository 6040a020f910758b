import pyarrow as pa
import pytest

from tasks.benchmarks.threadmed.cases import load_sample
from tasks.benchmarks.threadmed.contracts import RESPONSES
from tasks.benchmarks.threadmed.solver import InferenceJob, answer_thread
from tasks.evals.config import EvalConfig, ModelSpec, SampleSpec
from tasks.llm.request import RetryPolicy
from tests.eval_fixtures import THREAD_TEXTS, write_dataset
from tests.llm_server import LLMServer
from tests.llm_server_state import Action

FAST = RetryPolicy(max_attempts=2, base_delay_s=0.01, max_delay_s=0.02)


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


@pytest.fixture(scope="module")
def headache(tmp_path_factory):
    build = write_dataset(tmp_path_factory.mktemp("build"))
    return next(case for case in load_sample(build, SampleSpec()) if case.thread_id == "headache")


def job(server: LLMServer, thread, condition: str) -> InferenceJob:
    config = EvalConfig(models=[ModelSpec(name="m1", model="openai/m1", api_base=server.url)], retry=FAST)
    model = config.resolved(config.models[0])
    return InferenceJob(
        run_id="r1", model=model, options=config.call_options(model), condition=condition, thread=thread
    )


def conversation(*texts: str) -> list[dict[str, str]]:
    roles = ["user", "assistant"] * len(texts)
    return [{"role": role, "content": text} for role, text in zip(roles, texts, strict=False)]


def test_baseline_builds_each_turn_on_the_models_own_answers(server, headache, tmp_path):
    rows = answer_thread(job(server, headache, "baseline"), tmp_path)
    q, own = headache.questions, [row["response"] for row in rows]
    assert [r.messages for r in server.requests] == [
        conversation(q[0]),
        conversation(q[0], own[0], q[1]),
        conversation(q[0], own[0], q[1], own[1], q[2]),
        conversation(q[0], own[0], q[1], own[1], q[2], own[2], q[3]),
    ]
    assert [row["turn"] for row in rows] == [0, 1, 2, 3]
    assert all(row["status"] == "ok" for row in rows)
    assert all(r.params == {"temperature": 0} for r in server.requests)


def test_oracle_builds_turns_from_one_on_the_physicians_answers(server, headache, tmp_path):
    rows = answer_thread(job(server, headache, "oracle"), tmp_path)
    q, a = headache.questions, THREAD_TEXTS["headache"][1]
    doc = [answer for _, answer in a]
    assert [r.messages for r in server.requests] == [
        conversation(q[0], doc[0], q[1]),
        conversation(q[0], doc[0], q[1], doc[1], q[2]),
        conversation(q[0], doc[0], q[1], doc[1], q[2], doc[2], q[3]),
    ]
    assert [row["turn"] for row in rows] == [1, 2, 3]


def test_a_failed_baseline_turn_stops_its_thread(server, headache, tmp_path):
    server.script(Action(), Action(status=400))
    state = answer_thread(job(server, headache, "baseline"), tmp_path)
    # Its state says so (the rows ride in it): Prefect shows the task as CallsFailed, not Completed.
    assert (state.name, state.message, state.is_completed()) == (
        "CallsFailed",
        "1 of 2 calls failed (recorded; a re-run retries them)",
        True,
    )
    rows = state.data
    assert [(row["turn"], row["status"]) for row in rows] == [
        (0, "ok"),
        (1, "failed"),
        (2, "not_run"),
        (3, "not_run"),
    ]
    assert len(server.requests) == 2
    assert rows[1]["error_class"] == "bad_request" and rows[1]["response"] is None
    assert rows[2]["error"].startswith("not run: turn 1 failed")


def test_an_oracle_turn_failure_does_not_stop_later_turns(server, headache, tmp_path):
    server.script(Action(status=400))
    state = answer_thread(job(server, headache, "oracle"), tmp_path)
    assert state.message == "1 of 3 calls failed (recorded; a re-run retries them)"
    rows = state.data
    assert [(row["turn"], row["status"]) for row in rows] == [(1, "failed"), (2, "ok"), (3, "ok")]


def test_a_rerun_makes_only_the_missing_calls(server, headache, tmp_path):
    server.script(Action(), *[Action(status=503)] * 2)
    first = answer_thread(job(server, headache, "baseline"), tmp_path).data
    assert [row["status"] for row in first] == ["ok", "failed", "not_run", "not_run"]
    assert len(server.requests) == 3

    second = answer_thread(job(server, headache, "baseline"), tmp_path)
    assert [row["status"] for row in second] == ["ok"] * 4
    assert second[0] == first[0]
    assert second[1]["attempts"] == 3  # two failed attempts in the first run, one success now
    assert len(server.requests) == 3 + 3
    assert server.ok_counts().most_common(1)[0][1] == 1


def test_rows_follow_the_responses_contract(server, headache, tmp_path):
    server.script(Action(status=401))
    rows = answer_thread(job(server, headache, "baseline"), tmp_path).data
    table = pa.Table.from_pylist(rows, schema=RESPONSES.schema)
    assert table.num_rows == 4 and set(rows[0]) == set(RESPONSES.columns)
