"""The SNOMED benchmark end to end through litellm's real HTTP path: a local OpenAI-compatible server
plays both the clinician and the patient, scripted per role."""

import json
from functools import partial
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flows.snomed_evaluate import snomed_evaluate
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.benchmarks.snomed.contracts import CONVERSATIONS, PREDICTIONS, SCORES
from tasks.benchmarks.snomed.interview import DISCLOSURE_RULES, record_text
from tasks.benchmarks.snomed.report import ReportSettings, compute_metrics
from tasks.benchmarks.snomed.run_data import load_runs
from tasks.core.runners import RunnerSettings
from tasks.evals.config import ModelSpec, RunOverrides
from tasks.llm.prompts import load_prompt
from tasks.llm.request import RetryPolicy
from tests.eval_fixtures import full_disk_for, outcomes, run_single_then_batch
from tests.llm_server import LLMServer
from tests.llm_server_state import Action
from tests.snomed_fixtures import CASES, replay_calls, write_case_set

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

CLINICIAN_PROMPT = load_prompt(Path("tasks/benchmarks/snomed/prompts/clinician_v1.txt"))
PATIENT_PROMPT = load_prompt(Path("tasks/benchmarks/snomed/prompts/patient_lay_v1.txt"))
QUESTIONS = ("Do you get headaches?", "Any dizziness?")
FINAL = '<Final Answer>: ["59621000", "123456789"]'


def role_reply(model: str, messages: list[dict]) -> str:
    """The clinician `doc` asks its questions then answers; the `stubborn` one never answers; the patient
    `pat` answers each question with a numbered line."""
    if model == "pat":
        return f"Answer to: {messages[-1]['content']}"
    asked = sum(m["role"] == "assistant" for m in messages)
    if model == "doc" and asked >= len(QUESTIONS):
        return FINAL
    return QUESTIONS[asked % len(QUESTIONS)] if model == "doc" else f"Let me think ({asked})."


def config(url: str, clinicians=("doc",), **settings) -> SnomedConfig:
    return SnomedConfig(
        models=[ModelSpec(name=name, model=f"openai/{name}", api_base=url) for name in clinicians],
        patient=ModelSpec(name="pat", model="openai/pat", api_base=url),
        retry=RetryPolicy(max_attempts=1),
        **settings,
    )


def run(cases_dir: Path, run_dir: Path, snomed_config: SnomedConfig, limit: int | None = None, **options):
    return snomed_evaluate(
        cases_dir=str(cases_dir),
        run_dir=str(run_dir),
        config=snomed_config,
        overrides=RunOverrides(limit=limit),
        report=False,
        **options,
    )


def read(run_dir: Path, name: str) -> list[dict]:
    return pq.read_table(run_dir / f"{name}.parquet").to_pylist()


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory) -> Path:
    return write_case_set(tmp_path_factory.mktemp("cases") / "cases")


def test_each_role_sees_its_own_messages_with_real_roles_and_the_codes_are_scored(cases_dir, tmp_path):
    with LLMServer(reply=role_reply) as server:
        summary = run(cases_dir, tmp_path, config(server.url))
        requests = server.requests
    p1 = next(c for c in CASES if c.case_id == "p1")
    clinician_system = CLINICIAN_PROMPT.render("system")
    patient_system = PATIENT_PROMPT.render(
        "system", disclosure_rule=DISCLOSURE_RULES["symptoms"], record=record_text(p1, "lay", "symptoms")
    )
    p1_requests = [
        (r.model, r.messages)
        for r in requests
        if r.messages[0]["content"] in (clinician_system, patient_system)
        and (r.model == "doc" or r.messages[0]["content"] == patient_system)
    ]
    # Two test cases, each: 3 clinician calls (2 questions, the answer) and 2 patient calls.
    assert len(requests) == 2 * 5
    opening = {"role": "user", "content": "Hello, doctor."}
    q1, q2 = ({"role": "assistant", "content": q} for q in QUESTIONS)
    a1, a2 = ({"role": "user", "content": f"Answer to: {q}"} for q in QUESTIONS)
    p1_patient = [m for model, m in p1_requests if model == "pat"]
    assert p1_patient == [
        [{"role": "system", "content": patient_system}, {"role": "user", "content": QUESTIONS[0]}],
        [
            {"role": "system", "content": patient_system},
            {"role": "user", "content": QUESTIONS[0]},
            {"role": "assistant", "content": f"Answer to: {QUESTIONS[0]}"},
            {"role": "user", "content": QUESTIONS[1]},
        ],
    ]
    last_clinician = max((m for model, m in p1_requests if model == "doc"), key=len)
    assert last_clinician == [{"role": "system", "content": clinician_system}, opening, q1, a1, q2, a2]

    assert pq.read_schema(tmp_path / "conversations.parquet").equals(CONVERSATIONS.schema)
    conversation = [
        (r["turn"], r["role"], r["speaker"], r["status"], r["text"])
        for r in read(tmp_path, "conversations")
        if r["case_id"] == "p1"
    ]
    assert conversation == [
        (0, "system", None, "scripted", clinician_system),
        (0, "system", None, "scripted", patient_system),
        (0, "patient", None, "scripted", "Hello, doctor."),
        (1, "clinician", "doc", "ok", QUESTIONS[0]),
        (1, "patient", "pat", "ok", f"Answer to: {QUESTIONS[0]}"),
        (2, "clinician", "doc", "ok", QUESTIONS[1]),
        (2, "patient", "pat", "ok", f"Answer to: {QUESTIONS[1]}"),
        (3, "clinician", "doc", "ok", FINAL),
    ]
    assert pq.read_schema(tmp_path / "predictions.parquet").equals(PREDICTIONS.schema)
    assert pq.read_schema(tmp_path / "scores.parquet").equals(SCORES.schema)
    predictions = {r["case_id"]: r for r in read(tmp_path, "predictions")}
    assert {
        k: predictions["p1"][k] for k in ("status", "predicted_codes", "invalid_codes", "questions_asked")
    } == {
        "status": "answered",
        "predicted_codes": ["59621000", "123456789"],
        "invalid_codes": ["123456789"],
        "questions_asked": 2,
    }
    scores = {r["case_id"]: r for r in read(tmp_path, "scores")}
    assert (scores["p1"]["precision"], scores["p1"]["recall"], scores["p1"]["exact_match"]) == (0.5, 1.0, 0.0)
    assert (scores["p2"]["precision"], scores["p2"]["recall"], scores["p2"]["f1"]) == (0.0, 0.0, 0.0)
    assert scores["p2"]["missed_codes"] == ["444814009", "714628002"]
    [group] = summary.groups
    assert (group.model, group.counts, group.score) == (
        "doc",
        {"answered": 2, "no\nanswer": 0, "un-\nparseable": 0, "failed": 0, "cut": 0},
        pytest.approx(100 * (2 / 3 + 0) / 2),
    )
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["prompts"].keys() == {"snomed_clinician_v1", "snomed_patient_lay_v1"}
    assert manifest["config"]["patient_prompt_form"] == "lay"
    assert manifest["patient_prompt"] == {
        "form": "lay",
        "version": "snomed_patient_lay_v1",
        "lexicon_version": 1,
        "condition_codes": 3,
        "condition_codes_left_out": 1,  # p2's prediabetes code 714628002 has no lexicon sentence
    }
    assert manifest["config"]["patient"]["model"] == "openai/pat"
    assert manifest["case_set"]["counts"]["cases"] == 3


def test_at_the_turn_limit_the_final_answer_is_forced_then_reasked_once_then_no_answer(cases_dir, tmp_path):
    with LLMServer(reply=role_reply) as server:
        run(cases_dir, tmp_path, config(server.url, clinicians=("stubborn",), max_turns=2), limit=1)
        server_requests = server.requests
        clinician_requests = [r.messages for r in server_requests if r.model == "stubborn"]
    final, reask = CLINICIAN_PROMPT.render("final"), CLINICIAN_PROMPT.render("reask")
    assert len(clinician_requests) == 2 + 1 + 1
    forced, reasked = clinician_requests[2], clinician_requests[3]
    assert forced[-1] == {"role": "user", "content": final}
    assert reasked[-3:] == [
        {"role": "user", "content": final},
        {"role": "assistant", "content": "Let me think (2)."},
        {"role": "user", "content": reask},
    ]
    [prediction] = read(tmp_path, "predictions")
    assert (prediction["status"], prediction["predicted_codes"], prediction["questions_asked"]) == (
        "no_answer",
        [],
        2,
    )
    [score] = read(tmp_path, "scores")
    assert (score["precision"], score["recall"], score["f1"]) == (0.0, 0.0, 0.0)
    conversation = read(tmp_path, "conversations")
    turns = [(r["turn"], r["role"]) for r in conversation]
    assert turns[-4:] == [(3, "instruction"), (3, "clinician"), (4, "instruction"), (4, "clinician")]
    # Every call the server saw, rebuilt from conversations.parquet alone.
    assert replay_calls(conversation) == [
        ("clinician" if r.model == "stubborn" else "patient", r.messages) for r in server_requests
    ]


def test_a_provider_failure_is_not_scored_and_a_rerun_finishes_without_repeating_a_call(cases_dir, tmp_path):
    with LLMServer(reply=role_reply) as server:
        server.script(Action(status=200), Action(status=503), model="pat")  # the second patient call fails
        # One worker: the first case's interview (the one failing) runs before the second's.
        state = run(cases_dir, tmp_path, config(server.url, max_workers=1), return_state=True)
        assert state.is_failed()
        assert state.message.startswith("1 call failed: server error 1; re-run the same command")
        predictions = {r["case_id"]: r for r in read(tmp_path, "predictions")}
        assert sorted(r["status"] for r in predictions.values()) == ["answered", "failed"]
        failed = next(r for r in predictions.values() if r["status"] == "failed")
        [failed_score] = [s for s in read(tmp_path, "scores") if s["case_id"] == failed["case_id"]]
        assert (failed_score["f1"], failed_score["precision"]) == (None, None)
        [failed_message] = [r for r in read(tmp_path, "conversations") if r["status"] == "failed"]
        assert (failed_message["role"], failed_message["turn"], failed_message["error_class"]) == (
            "patient",
            2,
            "server_error",
        )
        ok_before = server.stats()["ok"]

        summary = run(cases_dir, tmp_path, config(server.url))
        assert summary.failed_calls == {}
        assert all(r["status"] == "answered" for r in read(tmp_path, "predictions"))
        # 3 + 5 calls had succeeded; the re-run made only the failed one and the final answer after it.
        assert (ok_before, server.stats()["ok"]) == (8, 10)
        # Each successful call was made once: as many as the interviews' distinct call keys.
        assert len({r["call_key"] for r in read(tmp_path, "conversations") if r["status"] == "ok"}) == 10


def test_an_interview_that_raises_fails_alone_with_its_error_and_the_others_are_written(
    cases_dir, tmp_path, monkeypatch
):
    with LLMServer(reply=role_reply) as server:
        with monkeypatch.context() as patched:
            full_disk_for("openai/stubborn", patched)
            state = run(
                cases_dir, tmp_path, config(server.url, clinicians=("doc", "stubborn")), return_state=True
            )
        assert state.is_failed()
        failures = json.loads((tmp_path / "manifest.json").read_text())["summary"]["failed_jobs"]
        scores = read(tmp_path, "scores")  # one per sampled case: doc's
        assert [(f["job"].split("/")[0], f["stage"], f["error"]) for f in failures] == [
            ("stubborn", "solve", "OSError: [Errno 28] No space left on device")
        ] * len(scores)
        assert state.message.startswith(
            f"{len(scores)} jobs failed and are missing from the tables: solve stubborn/"
        )
        assert {r["model"] for r in read(tmp_path, "predictions")} == {r["model"] for r in scores} == {"doc"}


def test_epochs_are_separate_calls_and_a_rerun_of_all_epochs_calls_nothing(cases_dir, tmp_path):
    with LLMServer(reply=role_reply) as server:
        summary = run(cases_dir, tmp_path, config(server.url, epochs=2, default_params={"temperature": 0.7}))
        assert server.stats()["ok"] == 2 * 2 * 5
        run(cases_dir, tmp_path, config(server.url, epochs=2, default_params={"temperature": 0.7}))
        assert server.stats()["requests"] == 2 * 2 * 5
    assert [(g.group, g.counts["answered"]) for g in summary.groups] == [("0", 2), ("1", 2)]
    # The score over both epochs that the leaderboard ranks by is the report's mean F1.
    metrics, _ = compute_metrics(load_runs([tmp_path]), ReportSettings(n_resamples=10))
    assert summary.overall == {model: 100 * m["f1"]["mean"] for model, m in metrics["models"].items()}
    keys = {
        (r["case_id"], r["epoch"], r["turn"], r["role"]): r["call_key"]
        for r in read(tmp_path, "conversations")
    }
    assert keys[("p1", 0, 1, "clinician")] != keys[("p1", 1, 1, "clinician")]


@pytest.mark.usefixtures("one_dask_cluster_at_a_time")
def test_a_dask_cluster_writes_the_interviews_the_thread_runner_writes(cases_dir, tmp_path):
    """The offline clinicians and patient are registered in the Dask workers too (the solver imports them)."""
    offline = SnomedConfig(
        models=[ModelSpec(model="threadmed/prevalence"), ModelSpec(model="threadmed/checklist")]
    )
    run(cases_dir, tmp_path / "threads", offline)
    run(cases_dir, tmp_path / "dask", offline, runner=RunnerSettings(kind="dask", dask_workers=1))
    timing = {"latency_s", "started_at", "finished_at"}
    for table in ("conversations", "predictions", "scores"):
        threads, dask = (
            [{k: v for k, v in row.items() if k not in timing} for row in read(tmp_path / name, table)]
            for name in ("threads", "dask")
        )
        assert dask == threads and threads


def test_in_batch_mode_each_interview_turn_goes_in_its_own_wave_and_the_outputs_are_the_same(
    cases_dir, tmp_path
):
    with LLMServer(reply=role_reply) as server:
        run_single_then_batch(partial(run, cases_dir), config(server.url), ["model", "patient"], tmp_path)
        stats, batches = server.stats(), server.batches
    # Both cases at once, turn by turn: clinician, patient, clinician, patient, clinician (the answer).
    assert [(b["request_counts"]["total"], b["status"]) for b in batches] == [(2, "completed")] * 5
    assert (stats["requests"], stats["batch_requests"], stats["max_submissions_per_custom_id"]) == (10, 10, 1)
    for table in ("conversations", "predictions", "scores"):
        assert outcomes(tmp_path / "batch", table) == outcomes(tmp_path / "single", table)


def test_overrides_choose_the_patient_settings_and_cases_of_a_run_of_bare_models(cases_dir, tmp_path):
    """As a deployment runs it: no config, the models by name and the rest as one overrides object."""
    overrides = RunOverrides(
        roles={"patient": "threadmed/patient"}, settings={"max_turns": 1, "epochs": 2}, limit=1, split="test"
    )
    snomed_evaluate(
        cases_dir=str(cases_dir),
        run_dir=str(tmp_path),
        models=["threadmed/checklist"],
        overrides=overrides,
        report=False,
    )
    config = json.loads((tmp_path / "manifest.json").read_text())["config"]
    chosen = (config["models"][0]["model"], config["patient"]["model"], config["max_turns"], config["epochs"])
    assert chosen == ("threadmed/checklist", "threadmed/patient", 1, 2)
    interviews = {(row["case_id"], row["epoch"]) for row in read(tmp_path, "predictions")}
    assert len(interviews) == 2 and {epoch for _, epoch in interviews} == {0, 1}
