"""The consultation benchmark end to end through litellm's real HTTP path: the local server plays the agent
under test; the simulator answers locally and deterministically."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.consult_evaluate import consult_evaluate
from tasks.benchmarks.consult.cases.case_set import write_case_set
from tasks.benchmarks.consult.cases.generate import CaseGenerationSettings, generate_cases
from tasks.benchmarks.consult.config import AGENT_PROMPT, ConsultConfig
from tasks.benchmarks.consult.contracts import MESSAGES, SCORES
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.simulator import replay
from tasks.evals.config import ModelSpec
from tasks.llm.prompts import load_prompt
from tasks.llm.request import RetryPolicy
from tests.llm_server import Action, LLMServer

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

PROMPT = load_prompt(AGENT_PROMPT)
QUESTIONS = ("When did it start?", "Do you have a fever?")
INFLUENZA = '[{"diagnosis": "Influenza", "icd11": null, "core": true, "rationale": "fever and aches"}]'
SETTINGS = CaseGenerationSettings(n=2, seed=0, difficulty={"easy": 1})


def agent_reply(model: str, messages: list[dict]) -> str:
    """`doc` asks two questions, says it is ready, then names influenza; `vague` never gives a list."""
    if "ranked differential" in messages[-1]["content"] or "JSON list" in messages[-1]["content"]:
        return INFLUENZA if model == "doc" else "Probably a virus, I would say."
    asked = sum(m["role"] == "assistant" for m in messages)
    return QUESTIONS[asked] if asked < len(QUESTIONS) else "<Ready to diagnose>"


def config(url: str, agents=("doc",), **settings) -> ConsultConfig:
    return ConsultConfig(
        models=[ModelSpec(name=name, model=f"openai/{name}", api_base=url) for name in agents],
        retry=RetryPolicy(max_attempts=1),
        **settings,
    )


def run(cases_dir: Path, run_dir: Path, consult_config: ConsultConfig, **options):
    return consult_evaluate(
        cases_dir=str(cases_dir), run_dir=str(run_dir), config=consult_config, report=False, **options
    )


def read(run_dir: Path, name: str) -> list[dict]:
    return pq.read_table(run_dir / f"{name}.parquet").to_pylist()


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("consult") / "cases"
    return write_case_set(generate_cases(load_kb(), SETTINGS), folder, SETTINGS)


@pytest.fixture(scope="module")
def flu_case(cases_dir):
    return next(c for c in generate_cases(load_kb(), SETTINGS) if c.gold[0].title.startswith("Influenza"))


def test_the_agent_sees_the_simulators_answers_and_its_differential_is_scored(cases_dir, flu_case, tmp_path):
    with LLMServer(reply=agent_reply) as server:
        summary = run(cases_dir, tmp_path, config(server.url))
        requests = [r.messages for r in server.requests if r.messages[1]["content"] == flu_case.opening]
    answers = [reply.text for reply in replay(flu_case, QUESTIONS)]
    history = [
        {"role": "system", "content": PROMPT.render("system")},
        {"role": "user", "content": flu_case.opening},
        {"role": "assistant", "content": QUESTIONS[0]},
        {"role": "user", "content": answers[0]},
        {"role": "assistant", "content": QUESTIONS[1]},
        {"role": "user", "content": answers[1]},
        {"role": "assistant", "content": "<Ready to diagnose>"},
    ]
    # Three history calls (two questions, the ready line) and the differential: 4 per case, 2 cases.
    assert len(server.requests) == 8
    assert requests[-1] == [*history, {"role": "user", "content": PROMPT.render("diagnosis")}]

    assert pq.read_schema(tmp_path / "messages.parquet").equals(MESSAGES.schema)
    messages = [m for m in read(tmp_path, "messages") if m["case_id"] == flu_case.case_id]
    expected_replies = replay(flu_case, QUESTIONS)
    assert [(m["turn"], m["role"], m["stage"], m["status"], m["template"]) for m in messages] == [
        (0, "patient", "history", "simulated", None),
        (1, "agent", "history", "ok", None),
        (1, "patient", "history", "simulated", expected_replies[0].template),
        (2, "agent", "history", "ok", None),
        (2, "patient", "history", "simulated", expected_replies[1].template),
        (3, "agent", "history", "ok", None),
        (4, "agent", "diagnosis", "ok", None),
    ]
    assert pq.read_schema(tmp_path / "scores.parquet").equals(SCORES.schema)
    [score] = [s for s in read(tmp_path, "scores") if s["case_id"] == flu_case.case_id]
    assert (score["status"], score["questions"], score["diagnosis_parse"]) == ("completed", 2, "ok")
    assert [(d["condition_id"], d["core"], d["rank"]) for d in score["differential"]] == [
        (flu_case.gold[0].condition_id, True, 1)
    ]
    assert (score["core_dx_recall"], score["core_dx_f1"], score["top1_accuracy"]) == (1.0, 1.0, 1.0)
    assert [g.counts["completed"] for g in summary.groups] == [2]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["prompts"].keys() == {"consult_agent_v1"}


def test_a_differential_that_never_parses_is_reasked_once_then_scored_empty(cases_dir, tmp_path):
    with LLMServer(reply=agent_reply) as server:
        run(cases_dir, tmp_path, config(server.url, agents=("vague",)), limit=1)
        last = server.requests[-1].messages
    assert last[-3:] == [
        {"role": "user", "content": PROMPT.render("diagnosis")},
        {"role": "assistant", "content": "Probably a virus, I would say."},
        {"role": "user", "content": PROMPT.render("reask")},
    ]
    [score] = read(tmp_path, "scores")
    assert (score["diagnosis_parse"], score["differential"], score["core_dx_recall"]) == (
        "unparseable",
        [],
        0.0,
    )


def test_a_provider_failure_is_not_scored_and_a_rerun_finishes_without_repeating_a_call(cases_dir, tmp_path):
    with LLMServer(reply=agent_reply) as server:
        server.script(Action(status=200), Action(status=503))  # the first episode's second question fails
        state = run(cases_dir, tmp_path, config(server.url, max_workers=1), return_state=True)
        assert state.is_failed()
        assert state.message.startswith("1 call failed: server error 1; re-run the same command")
        statuses = sorted(s["status"] for s in read(tmp_path, "scores"))
        assert statuses == ["completed", "failed"]
        [failed] = [s for s in read(tmp_path, "scores") if s["status"] == "failed"]
        assert (failed["mni_comp"], failed["core_dx_f1"], failed["error_class"]) == (
            None,
            None,
            "server_error",
        )

        summary = run(cases_dir, tmp_path, config(server.url))
        assert summary.failed_calls == {}
        assert [s["status"] for s in read(tmp_path, "scores")] == ["completed", "completed"]
        # 1 + 4 calls had succeeded; the re-run made the 3 the failed episode still needed.
        assert server.stats()["ok"] == 8
        assert len({m["call_key"] for m in read(tmp_path, "messages") if m["status"] == "ok"}) == 8
