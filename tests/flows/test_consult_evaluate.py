"""The consultation benchmark end to end through litellm's real HTTP path: the local server plays the agent
under test and the FQR judge; the simulator answers locally and deterministically. Four stages: history,
diagnosis, a plan, then follow-ups, one of which (an NSAID allergy) makes the plan unsafe."""

import json
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.consult_evaluate import consult_evaluate
from tasks.benchmarks.consult.case import FollowUp
from tasks.benchmarks.consult.cases.case_set import write_case_set
from tasks.benchmarks.consult.cases.generate import CaseGenerationSettings, generate_cases
from tasks.benchmarks.consult.composite import composite
from tasks.benchmarks.consult.config import AGENT_PROMPT, JUDGE_RUBRIC, ConsultConfig
from tasks.benchmarks.consult.contracts import MESSAGES, SCORES
from tasks.benchmarks.consult.critic import constraint_satisfied, critique, patient_facts, with_constraint
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.reading import read_plan
from tasks.benchmarks.consult.report import build_report
from tasks.benchmarks.consult.report_metrics import ReportSettings
from tasks.benchmarks.consult.scorer import episode_from_messages
from tasks.benchmarks.consult.simulator import replay
from tasks.evals.config import JudgeSpec, ModelSpec, RunOverrides
from tasks.llm.prompts import load_prompt
from tasks.llm.request import RetryPolicy
from tests.eval_fixtures import full_disk_for, outcomes, run_single_then_batch
from tests.llm_replies import CONSULT_JUDGE_NOTES, consult_reply
from tests.llm_server import LLMServer
from tests.llm_server_state import Action

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

PROMPT = load_prompt(AGENT_PROMPT)
RUBRIC = load_prompt(JUDGE_RUBRIC)
QUESTIONS = ("When did it start?", "Do you have a fever?")
INFLUENZA = '[{"diagnosis": "Influenza", "icd11": null, "core": true, "rationale": "fever and aches"}]'
IBUPROFEN = (
    '[{"drug": "ibuprofen", "dose": 400, "unit": "mg", "frequency_per_day": 3, "days": 5, "route": "oral"}]'
)
PARACETAMOL = '[{"drug": "paracetamol", "dose": 1000, "unit": "mg", "frequency_per_day": 4, "route": "oral"}]'
ALLERGY = FollowUp(
    kind="constraint", text="I've just remembered I'm allergic to non-steroidal anti-inflammatory drugs.",
    constraint="allergy:nsaids", core=True,
)  # fmt: skip
QUESTION = FollowUp(kind="question", text="How exactly should I take it?", core=True)
SWITCH = 'I see. Then stop it: [{"drug": "paracetamol", "dose": 1000'  # a revision cut short: re-asked
ANSWER = "Take it with food, three times a day."
SETTINGS = CaseGenerationSettings(n=2, seed=0, difficulty={"easy": 1})


def agent_reply(model: str, messages: list[dict]) -> str:
    """`doc` asks two questions, says it is ready, names influenza, plans ibuprofen, answers the allergy
    with a revision that needs the re-ask, then paracetamol; `vague` never gives a list. `judge` is the
    test server's FQR judge."""
    last = messages[-1]["content"]
    if model == "judge":
        return consult_reply(model, messages)
    if last == PROMPT.render("revision_reask"):
        return PARACETAMOL
    if "treatment plan" in last:
        return f"{IBUPROFEN}\nRest and fluids." if model == "doc" else "Rest, I would say."
    if "ranked differential" in last or "JSON list" in last:
        return INFLUENZA if model == "doc" else "Probably a virus, I would say."
    if last == ALLERGY.text:
        return SWITCH if model == "doc" else ANSWER
    if last == QUESTION.text:
        return ANSWER
    asked = sum(m["role"] == "assistant" for m in messages)
    return QUESTIONS[asked] if asked < len(QUESTIONS) else "<Ready to diagnose>"


def config(url: str, agents=("doc",), **settings) -> ConsultConfig:
    return ConsultConfig(
        models=[ModelSpec(name=name, model=f"openai/{name}", api_base=url) for name in agents],
        judge=JudgeSpec(name="judge", model="openai/judge", api_base=url, max_reasks=1),
        retry=RetryPolicy(max_attempts=1),
        **settings,
    )


def run(cases_dir: Path, run_dir: Path, consult_config: ConsultConfig, limit: int | None = None, **options):
    return consult_evaluate(
        cases_dir=str(cases_dir),
        run_dir=str(run_dir),
        config=consult_config,
        overrides=RunOverrides(limit=limit),
        report=False,
        **options,
    )


def read(run_dir: Path, name: str) -> list[dict]:
    return pq.read_table(run_dir / f"{name}.parquet").to_pylist()


def cases():
    return [
        case.model_copy(update={"follow_ups": (ALLERGY, QUESTION)})
        for case in generate_cases(load_kb(), SETTINGS)
    ]


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory) -> Path:
    return write_case_set(cases(), tmp_path_factory.mktemp("consult") / "cases", SETTINGS)


@pytest.fixture(scope="module")
def flu_case():
    return next(c for c in cases() if c.gold[0].title.startswith("Influenza"))


def test_the_full_episode_runs_four_stages_and_the_judge_sees_every_follow_up(cases_dir, flu_case, tmp_path):
    with LLMServer(reply=agent_reply) as server:
        summary = run(cases_dir, tmp_path, config(server.url))
        flu = [r.messages for r in server.requests if r.messages[1]["content"] == flu_case.opening]
        judged = [r.messages for r in server.requests if r.model == "judge"]
    answers = [reply.text for reply in replay(flu_case, QUESTIONS)]
    conversation = [
        {"role": "system", "content": PROMPT.render("system")},
        {"role": "user", "content": flu_case.opening},
        {"role": "assistant", "content": QUESTIONS[0]},
        {"role": "user", "content": answers[0]},
        {"role": "assistant", "content": QUESTIONS[1]},
        {"role": "user", "content": answers[1]},
        {"role": "assistant", "content": "<Ready to diagnose>"},
        {"role": "user", "content": PROMPT.render("diagnosis")},
        {"role": "assistant", "content": INFLUENZA},
        {"role": "user", "content": PROMPT.render("treatment")},
        {"role": "assistant", "content": f"{IBUPROFEN}\nRest and fluids."},
        {"role": "user", "content": ALLERGY.text},
        {"role": "assistant", "content": SWITCH},
        {"role": "user", "content": PROMPT.render("revision_reask")},
        {"role": "assistant", "content": PARACETAMOL},
        {"role": "user", "content": QUESTION.text},
    ]
    # Per case: 3 history calls, the differential, the plan, the allergy's answer and its re-ask, the
    # question's answer (8), and the judge: 1 for the allergy, 2 for the question (its notes re-asked).
    assert (len(server.requests), len(judged)) == (22, 6)
    assert flu[-1] == conversation
    reasked = [messages[-2:] for messages in judged if len(messages) > 2]
    reask = [
        {"role": "assistant", "content": CONSULT_JUDGE_NOTES},
        {"role": "user", "content": RUBRIC.render("reask")},
    ]
    assert reasked == [reask, reask]

    assert pq.read_schema(tmp_path / "messages.parquet").equals(MESSAGES.schema)
    messages = [m for m in read(tmp_path, "messages") if m["case_id"] == flu_case.case_id]
    templates = [reply.template for reply in replay(flu_case, QUESTIONS)]
    assert [
        (m["turn"], m["role"], m["stage"], m["follow_up"], m["status"], m["template"]) for m in messages
    ] == [
        (0, "patient", "history", None, "simulated", None),
        (1, "agent", "history", None, "ok", None),
        (1, "patient", "history", None, "simulated", templates[0]),
        (2, "agent", "history", None, "ok", None),
        (2, "patient", "history", None, "simulated", templates[1]),
        (3, "agent", "history", None, "ok", None),
        (4, "agent", "diagnosis", None, "ok", None),
        (5, "agent", "treatment", None, "ok", None),
        (6, "agent", "follow_up", 0, "ok", None),  # the table is in key order: agent before patient
        (6, "patient", "follow_up", 0, "simulated", None),
        (7, "agent", "follow_up", 0, "ok", None),
        (8, "agent", "follow_up", 1, "ok", None),
        (8, "patient", "follow_up", 1, "simulated", None),
    ]
    # The allergy makes the first plan unsafe; the revision satisfies it and passes the critic.
    kb = load_kb()
    episode = episode_from_messages(flu_case, messages, kb, 90.0)
    facts = with_constraint(patient_facts(flu_case), ALLERGY.constraint, kb)
    revised = episode.follow_ups[0].revised_plan
    assert (episode.plan.generics, revised.generics, episode.follow_ups[1].revised_plan) == (
        ("ibuprofen",), ("paracetamol",), None
    )  # fmt: skip
    assert critique(episode.plan, facts, kb).hard and not critique(revised, facts, kb).hard
    assert constraint_satisfied(revised, ALLERGY.constraint, facts, kb)

    assert pq.read_schema(tmp_path / "scores.parquet").equals(SCORES.schema)
    [score] = [s for s in read(tmp_path, "scores") if s["case_id"] == flu_case.case_id]
    assert (score["status"], score["questions"], score["diagnosis_parse"]) == ("completed", 2, "ok")
    assert (score["core_dx_recall"], score["core_dx_f1"], score["top1_accuracy"]) == (1.0, 1.0, 1.0)
    assert [g.counts["completed"] for g in summary.groups] == [2]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["prompts"].keys() == {"consult_agent_v3", "judge_fqr_v1"}
    assert manifest["judge_rubric"]["version"] == "judge_fqr_v1"


def test_a_differential_and_a_plan_that_never_parse_are_reasked_once_then_scored_empty(cases_dir, tmp_path):
    with LLMServer(reply=agent_reply) as server:
        run(cases_dir, tmp_path, config(server.url, agents=("vague",)), limit=1)
        agent = [r.messages for r in server.requests if r.model == "vague"]
    diagnosis = agent[-5]  # then the plan, its re-ask and the two follow-ups
    assert diagnosis[-3:] == [
        {"role": "user", "content": PROMPT.render("diagnosis")},
        {"role": "assistant", "content": "Probably a virus, I would say."},
        {"role": "user", "content": PROMPT.render("reask")},
    ]
    assert agent[-3][-2:] == [
        {"role": "assistant", "content": "Rest, I would say."},
        {"role": "user", "content": PROMPT.render("treatment_reask")},
    ]
    [score] = read(tmp_path, "scores")
    assert (score["status"], score["diagnosis_parse"], score["differential"], score["core_dx_recall"]) == (
        "completed", "unparseable", [], 0.0
    )  # fmt: skip


def test_agent_and_judge_failures_are_not_scored_and_a_rerun_finishes_without_repeating_a_call(
    cases_dir, tmp_path
):
    with LLMServer(reply=agent_reply) as server:
        server.script(Action(status=200), Action(status=503), model="doc")  # the first episode's 2nd question
        server.script(Action(status=503), model="judge")  # the other episode's first judge call
        state = run(cases_dir, tmp_path, config(server.url, max_workers=1), return_state=True)
        assert state.is_failed()
        assert state.message.startswith("2 calls failed: server error 2; re-run the same command")
        failed = [s for s in read(tmp_path, "scores") if s["status"] == "failed"]
        assert [(s["mni_comp"], s["core_dx_f1"], s["error_class"]) for s in failed] == [
            (None, None, "server_error"),
            (None, None, "server_error"),
        ]

        summary = run(cases_dir, tmp_path, config(server.url))
        assert summary.failed_calls == {}
        assert [s["status"] for s in read(tmp_path, "scores")] == ["completed", "completed"]
        # Every request answered successfully once: nothing that had succeeded was asked again.
        assert max(server.ok_counts().values()) == 1
        assert server.stats()["ok"] == 22
        assert len({m["call_key"] for m in read(tmp_path, "messages") if m["status"] == "ok"}) == 16


def test_a_scoring_that_raises_fails_alone_with_its_error_and_the_episodes_are_written(
    cases_dir, tmp_path, monkeypatch
):
    with LLMServer(reply=agent_reply) as server:
        with monkeypatch.context() as patched:
            full_disk_for("openai/judge", patched)
            state = run(cases_dir, tmp_path, config(server.url), return_state=True)
        assert state.is_failed()
        failures = json.loads((tmp_path / "manifest.json").read_text())["summary"]["failed_jobs"]
        assert [(f["job"].split("/")[0], f["stage"], f["error"]) for f in failures] == [
            ("doc", "score", "OSError: [Errno 28] No space left on device")
        ] * 2
        assert read(tmp_path, "scores") == []
        assert {m["model"] for m in read(tmp_path, "messages")} == {"doc"}

        assert (
            run(cases_dir, tmp_path, config(server.url)).failed_jobs == []
        )  # disk freed: the re-run finishes
        assert [s["status"] for s in read(tmp_path, "scores")] == ["completed", "completed"]


def test_in_batch_mode_the_agent_and_judge_calls_go_in_waves_and_the_outputs_are_the_same(
    cases_dir, tmp_path
):
    with LLMServer(reply=agent_reply) as server:
        run_single_then_batch(partial(run, cases_dir), config(server.url), ["model", "judge"], tmp_path)
        stats = server.stats()
    # 22 calls each way (see the test above): the two cases' agent turns side by side, then the judge's.
    assert (stats["requests"], stats["batch_requests"], stats["max_submissions_per_custom_id"]) == (22, 22, 1)
    for table in ("messages", "scores"):
        assert outcomes(tmp_path / "batch", table) == outcomes(tmp_path / "single", table)


@pytest.mark.parametrize(
    ("truncated", "status", "judge_calls"), [("judge", "ok", 3), ("mark", "truncated", 1)]
)
def test_a_follow_up_answer_cut_at_max_tokens_is_counted_and_judged_or_marked_as_configured(
    cases_dir, tmp_path, truncated, status, judge_calls
):
    with LLMServer(reply=agent_reply) as server:
        # One episode, so the agent's 8th call is its answer to the question (see agent_reply).
        server.script(
            *[Action()] * 7, Action(content="Take it with food, three", finish_reason="length"), model="doc"
        )
        summary = run(
            cases_dir,
            tmp_path / "run",
            config(server.url, truncated=truncated),
            limit=1,
        )
        assert sum(r.model == "judge" for r in server.requests) == judge_calls
    [score] = read(tmp_path / "run", "scores")
    assert [(f["answer"], f["judge_status"]) for f in score["follow_ups"]] == [
        (PARACETAMOL, "ok"),
        ("Take it with food, three", status),
    ]
    assert summary.groups[0].counts["cut"] == 1
    report_dir = build_report.fn(
        run_dirs=[str(tmp_path / "run")], out_dir=str(tmp_path / "report"), settings=ReportSettings()
    )
    metrics = json.loads((Path(report_dir) / "metrics.json").read_text())["models"]["doc"]
    assert (metrics["replies_cut"], metrics["fqr_truncated"]) == ({"follow_up": 1}, int(truncated == "mark"))
    assert (
        "1 agent repl(ies) were cut at max_tokens (doc: follow-up 1)"
        in (Path(report_dir) / "report.md").read_text()
    )


BRACKETS = "[" * 3000  # raised RecursionError in the plan reader, which failed the episode's job
REVISION = '[{"drug": "paracetamol", "dose": ' + BRACKETS  # tries to revise the plan, and never parses


def garbage_reply(model: str, messages: list[dict]) -> str:
    """`garbage` never writes anything that can be read: brackets for questions and plans, prose for the
    differential, a revision that never parses for every follow-up. The judge grades its answers wrong."""
    last = messages[-1]["content"]
    if model == "judge":
        return '{"correct": false, "reason": "No usable answer."}'
    if last in (PROMPT.render("diagnosis"), PROMPT.render("reask")):
        return "It is hard to say what this is."
    if last in (ALLERGY.text, QUESTION.text, PROMPT.render("revision_reask")):
        return REVISION
    return BRACKETS


def test_an_agent_whose_every_output_is_unreadable_is_scored_zero_on_every_stage_and_counted(
    cases_dir, tmp_path
):
    with LLMServer(reply=garbage_reply) as server:
        summary = run(cases_dir, tmp_path, config(server.url, agents=("garbage",), max_questions=3))
    # Nothing failed and nothing was dropped: both episodes are scored.
    assert (summary.failed_calls, summary.failed_jobs) == ({}, [])
    [group] = summary.groups
    assert (group.counts, group.score) == (
        {
            "completed": 2,
            "failed": 0,
            "dx\nunparsed": 2,
            "plan\nunparsed": 2,
            "revision\nunparsed": 4,
            "cut": 0,
            "judge\ncut": 0,
        },
        0.0,
    )
    kb = load_kb()
    # What a reader raised, whether or not the plan reader raises today: the error is kept, named.
    errors = [
        f"{stage}: {error}"
        for stage, text in (("treatment", BRACKETS), ("follow-up 0", REVISION), ("follow-up 1", REVISION))
        if (error := read_plan(text, kb).error) is not None
    ]
    scores = read(tmp_path, "scores")
    stages = [composite(score)._asdict() for score in scores]
    assert (
        stages == [{"history": 0.0, "diagnosis": 0.0, "treatment": 0.0, "follow_up": 0.0, "score": 0.0}] * 2
    )
    assert [
        (s["status"], s["diagnosis_parse"], s["plan_parse"], s["revisions_unparseable"], s["parse_errors"])
        for s in scores
    ] == [("completed", "unparseable", "unparseable", 2, errors)] * 2
    assert [(s["psc"], s["ddiv"], s["pcr"], s["fqr"], s["dcsr"], s["composite"]) for s in scores] == [
        (0.0, 1.0, 1.0, 0.0, 0.0, 0.0)
    ] * 2

    report_dir = build_report.fn(
        run_dirs=[str(tmp_path)], out_dir=str(tmp_path / "report"), settings=ReportSettings(n_resamples=50)
    )
    metrics = json.loads((Path(report_dir) / "metrics.json").read_text())
    garbage = metrics["models"]["garbage"]
    assert {name: garbage[name] for name in ("n_episodes", "n_failed", "composite")} == {
        "n_episodes": 2,
        "n_failed": 0,
        "composite": {"history": 0.0, "diagnosis": 0.0, "treatment": 0.0, "follow_up": 0.0, "score": 0.0},
    }
    assert [garbage[f"n_{stage}_unparseable"] for stage in ("diagnosis", "plan", "revisions")] == [2, 2, 4]
    markdown = (Path(report_dir) / "report.md").read_text()
    assert "| 1 | garbage | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 |" in markdown
    assert "- 4 revised plan(s) did not parse after the re-ask" in markdown
