"""The test server's named replies: the SNOMED roles interview to an answer after a varied number of
questions, the consultation agent takes a history of varied length then gives a differential the metrics
read, and a server started as a subprocess serves them (`--reply snomed`). Its injected faults: the same
requests fail whatever their order, about the given share of them, a retry may succeed, and
`--fail-rate` sets them from the command line. Its OpenAI Files and Batches
APIs, driven through litellm's own calls: a batch answers each line as a single call would, scripted lines
fail, a batch expires with some lines answered, fails, is cancelled, is listed, and unknown ids are 404s."""

import hashlib
import json
import time
from pathlib import Path

import httpx
import litellm
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.consult.config import AGENT_PROMPT
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.metrics import is_ready, parse_differential
from tasks.benchmarks.consult.treatment import parse_plan
from tasks.benchmarks.snomed.interview import InterviewPrompts, InterviewSettings, Reply, run_interview
from tasks.llm.prompts import load_prompt
from tests.llm_batches import BATCH_EXPIRED
from tests.llm_replies import (
    CONSULT_ANSWER,
    CONSULT_DIFFERENTIAL,
    CONSULT_JUDGE_NOTES,
    CONSULT_JUDGE_VERDICT,
    SNOMED_FINAL,
    SNOMED_PATIENT,
    consult_questions,
    consult_reply,
    snomed_questions,
    snomed_reply,
)
from tests.llm_server import LLMServer
from tests.llm_server_state import Action, BatchScript, Faults
from tests.perf.calls import served
from tests.snomed_fixtures import CASES

CLINICIAN_PROMPT = load_prompt(Path("tasks/benchmarks/snomed/prompts/clinician_v1.txt"))
CONSULT_PROMPT = load_prompt(AGENT_PROMPT)


def prompts(patient_system: str) -> InterviewPrompts:
    return InterviewPrompts(
        clinician_system=CLINICIAN_PROMPT.render("system"),
        opening=CLINICIAN_PROMPT.render("opening"),
        final=CLINICIAN_PROMPT.render("final"),
        reask=CLINICIAN_PROMPT.render("reask"),
        patient_system=patient_system,
    )


def interview(clinician: str, patient_system: str, max_turns: int = 20):
    def ask(role, messages):
        return Reply(snomed_reply(clinician if role == "clinician" else SNOMED_PATIENT, messages), "key")

    return run_interview(CASES[0], prompts(patient_system), ask, InterviewSettings(max_turns=max_turns))


def case_tag(patient_system: str) -> str:
    return hashlib.sha256(patient_system.encode()).hexdigest()[:8]


def test_the_snomed_clinician_asks_as_many_questions_as_its_hash_of_the_case_says_then_answers():
    records = [f"Record {i}" for i in range(6)]
    outcomes = {
        (clinician, record): interview(clinician, record) for clinician in ("c1", "c2") for record in records
    }
    expected = {key: snomed_questions(key[0], case_tag(key[1])) for key in outcomes}
    asked = {key: (result.status, result.questions_asked) for key, result in outcomes.items()}
    assert asked == {key: ("answered", questions) for key, questions in expected.items()}
    assert {result.final_reply for result in outcomes.values()} == {SNOMED_FINAL}
    assert all(5 <= questions <= 20 for questions in expected.values())
    assert len(set(expected.values())) > 3  # varied, not one length for all


def test_the_snomed_clinician_answers_when_asked_for_its_final_answer_before_it_is_done():
    record = next(f"Record {i}" for i in range(100) if snomed_questions("c1", case_tag(f"Record {i}")) > 2)
    result = interview("c1", record, max_turns=2)
    assert (result.status, result.questions_asked, result.final_reply) == ("answered", 2, SNOMED_FINAL)


def test_two_snomed_clinicians_ask_differently_so_the_patient_gets_different_requests():
    opening = [{"role": "system", "content": "Clinician"}, {"role": "user", "content": "Hello, doctor."}]
    assert snomed_reply("c1", opening) != snomed_reply("c2", opening)


def consult_history(agent: str, opening: str) -> list[str]:
    """The agent's replies in the history stage, each question answered by a fixed patient line."""
    messages = [
        {"role": "system", "content": CONSULT_PROMPT.render("system")},
        {"role": "user", "content": opening},
    ]
    replies: list[str] = []
    while not replies or not is_ready(replies[-1]):
        replies.append(consult_reply(agent, messages))
        messages += [
            {"role": "assistant", "content": replies[-1]},
            {"role": "user", "content": "Not really."},
        ]
    return replies


def test_the_consult_agent_asks_as_many_questions_as_its_hash_of_the_opening_says_then_is_ready():
    openings = [f"Doctor, I have had a headache for {i} days." for i in range(8)]
    histories = {
        (agent, opening): consult_history(agent, opening) for agent in ("a1", "a2") for opening in openings
    }
    expected = {key: consult_questions(*key) for key in histories}
    assert {key: len(replies) - 1 for key, replies in histories.items()} == expected
    assert {replies[-1] for replies in histories.values()} == {"<Ready to diagnose>"}
    assert all(3 <= questions <= 12 for questions in expected.values())
    assert len(set(expected.values())) > 3  # varied, not one length for all


def test_two_consult_agents_word_their_questions_differently():
    opening = "Doctor, I have had a headache for 3 days."
    first, second = consult_history("a1", opening)[0], consult_history("a2", opening)[0]
    assert (first, second) == ("When did it start? (a1, question 1)", "When did it start? (a2, question 1)")


@pytest.mark.parametrize("ask", ["diagnosis", "reask"])
def test_the_consult_agent_gives_a_differential_the_metrics_read_when_asked_for_one(ask):
    messages = [
        {"role": "system", "content": CONSULT_PROMPT.render("system")},
        {"role": "user", "content": "Doctor, my face hurts."},
        {"role": "assistant", "content": "<Ready to diagnose>"},
        {"role": "user", "content": CONSULT_PROMPT.render(ask)},
    ]
    reply = consult_reply("a1", messages)
    assert reply == CONSULT_DIFFERENTIAL
    assert [item.diagnosis for item in parse_differential(reply, load_kb())] == ["Acute sinusitis"]


def test_the_consult_agent_plans_then_revises_for_an_allergy_and_answers_questions_with_advice():
    messages = [
        {"role": "system", "content": CONSULT_PROMPT.render("system")},
        {"role": "user", "content": "Doctor, my face hurts."},
        {"role": "assistant", "content": CONSULT_DIFFERENTIAL},
        {"role": "user", "content": CONSULT_PROMPT.render("treatment")},
    ]
    plan = consult_reply("a1", messages)
    messages.append({"role": "assistant", "content": plan})
    allergy = consult_reply("a1", [*messages, {"role": "user", "content": "I'm allergic to NSAIDs."}])
    question = consult_reply("a1", [*messages, {"role": "user", "content": "How should I take it?"}])
    assert parse_plan(plan, load_kb()).generics == ("ibuprofen",)
    assert parse_plan(allergy, load_kb()).generics == ("paracetamol",)
    assert question == CONSULT_ANSWER


def test_the_consult_judge_gives_a_verdict_for_a_new_fact_and_needs_a_reask_for_a_question():
    def judged(follow_up, *earlier):
        rubric = {"role": "user", "content": f"<follow_up>\n{follow_up}\n</follow_up>"}
        return consult_reply("judge", [{"role": "system", "content": "Judge."}, rubric, *earlier])

    assert judged("I'm allergic to penicillins.") == f"Verdict: {CONSULT_JUDGE_VERDICT}"
    assert judged("How should I take it?") == CONSULT_JUDGE_NOTES
    reask = ({"role": "assistant", "content": CONSULT_JUDGE_NOTES}, {"role": "user", "content": "Again."})
    assert judged("How should I take it?", *reask) == CONSULT_JUDGE_VERDICT


@pytest.mark.slow
def test_a_server_started_as_a_subprocess_serves_the_named_reply():
    messages = [{"role": "system", "content": "Record 0"}, {"role": "user", "content": "Any cough?"}]
    with served(0.0, reply="snomed") as url:
        response = httpx.post(f"{url}/chat/completions", json={"model": SNOMED_PATIENT, "messages": messages})
    assert response.json()["choices"][0]["message"]["content"] == snomed_reply(SNOMED_PATIENT, messages)


def chat_body(question: str) -> dict:
    return {"model": "m1", "messages": [{"role": "user", "content": question}]}


SHARES = st.floats(min_value=0.0, max_value=1.0)


@given(SHARES, SHARES, st.text(), st.integers(min_value=0), st.integers())
def test_a_request_failing_at_a_rate_fails_at_every_higher_rate(low, high, body_hash, asked_before, seed):
    low, high = sorted((low, high))
    if Faults(low, seed=seed).fails(body_hash, asked_before):
        assert Faults(high, seed=seed).fails(body_hash, asked_before)


@given(st.text(), st.integers(min_value=0), st.integers())
def test_at_rate_0_no_request_fails_and_at_rate_1_every_one(body_hash, asked_before, seed):
    assert not Faults(0.0, seed=seed).fails(body_hash, asked_before)
    assert Faults(1.0, seed=seed).fails(body_hash, asked_before)


@pytest.mark.parametrize("rate", [0.1, 0.3, 0.9])
def test_about_the_rate_of_requests_fail_first_time_and_on_a_retry(rate):
    faults = Faults(rate)
    for asked_before in (0, 1):
        share = sum(faults.fails(f"body {i}", asked_before) for i in range(10_000)) / 10_000
        assert abs(share - rate) < 0.02, (asked_before, share)


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan")])
def test_a_fail_rate_outside_0_to_1_is_refused(rate):
    with pytest.raises(ValueError, match="give a share from 0 to 1"):
        Faults(rate)


def faulty_posts(url: str, bodies: list[bytes]) -> list[int]:
    """The status of each chat request, sent one after the other with these raw bodies."""
    headers = {"Content-Type": "application/json"}
    return [
        httpx.post(f"{url}/chat/completions", content=body, headers=headers).status_code for body in bodies
    ]


def predicted(faults: Faults, bodies: list[bytes], asked_before: int) -> list[int]:
    chosen = [faults.fails(hashlib.sha256(body).hexdigest(), asked_before) for body in bodies]
    return [faults.status if fails else 200 for fails in chosen]


QUESTIONS = [json.dumps(chat_body(f"Question {i}?")).encode() for i in range(40)]


def test_the_server_fails_the_requests_its_faults_choose_and_a_retry_is_asked_afresh():
    faults = Faults(0.5, status=503, seed=7)
    with LLMServer(faults=faults) as server:
        server.script(Action(status=429), model="m2")  # a scripted action comes before a fault
        scripted = json.dumps({**chat_body("Q"), "model": "m2"}).encode()
        first = faulty_posts(server.url, [*QUESTIONS, scripted])
        failed = [body for body, status in zip(QUESTIONS, first, strict=False) if status != 200]
        again = faulty_posts(server.url, failed)
        stats = server.stats()
    assert first == [*predicted(faults, QUESTIONS, 0), 429]
    assert again == predicted(faults, failed, 1)
    assert 0 < len(failed) < len(QUESTIONS) and 200 in again
    assert (stats["requests"], stats["ok"]) == (len(first) + len(again), first.count(200) + again.count(200))


@pytest.mark.slow
def test_a_server_started_with_a_fail_rate_fails_those_requests_with_that_status():
    options = ("--fail-rate", "0.5", "--fail-status", "502", "--seed", "3")
    with served(0.0, options=options) as url:
        statuses = faulty_posts(url, QUESTIONS)
        stats = httpx.get(url.removesuffix("/v1") + "/stats").json()
    assert statuses == predicted(Faults(0.5, status=502, seed=3), QUESTIONS, 0)
    assert (stats["requests"], stats["ok"]) == (len(QUESTIONS), statuses.count(200))


BATCH_LINES = [
    {
        "custom_id": f"q{i}",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": chat_body(f"Question {i}?"),
    }
    for i in range(3)
]
TIMESTAMPS = (
    "in_progress_at",
    "finalizing_at",
    "completed_at",
    "failed_at",
    "expired_at",
    "cancelling_at",
    "cancelled_at",
)


@pytest.fixture
def server():
    with LLMServer() as running:
        yield running


def openai_at(server: LLMServer) -> dict:
    return {"custom_llm_provider": "openai", "api_base": server.url, "api_key": "no-key"}


def submit(server: LLMServer, lines: list[dict] = BATCH_LINES, metadata: dict | None = None):
    content = "".join(json.dumps(line) + "\n" for line in lines).encode()
    file = litellm.create_file(file=("batch.jsonl", content), purpose="batch", **openai_at(server))
    return litellm.create_batch(
        completion_window="24h",
        endpoint="/v1/chat/completions",
        input_file_id=file.id,
        metadata=metadata,
        **openai_at(server),
    )


def finished(server: LLMServer, batch_id: str):
    deadline = time.monotonic() + 600  # a liveness bound only: an unheld batch finishes when next seen
    while (batch := litellm.retrieve_batch(batch_id, **openai_at(server))).status in (
        "validating",
        "in_progress",
    ):
        assert time.monotonic() < deadline, "the batch never finished"
        time.sleep(0.05)
    return batch


def jsonl(server: LLMServer, file_id: str) -> list[dict]:
    content = litellm.file_content(file_id, **openai_at(server)).content
    return [json.loads(line) for line in content.decode().splitlines()]


def outcome(batch) -> tuple:
    """What a batch came to, without the values of its clock."""
    counts = batch.request_counts
    stamped = {name for name in TIMESTAMPS if getattr(batch, name) is not None}
    return batch.status, (counts.total, counts.completed, counts.failed), stamped


def without_id(body: dict) -> dict:
    """A chat completion without what differs between two replies to one request: its id and time."""
    return {key: value for key, value in body.items() if key not in ("id", "created")}


def test_a_batch_answers_each_line_as_a_single_call_would_and_is_counted_apart_from_single_calls(server):
    server.hold_batches()
    created = submit(server, metadata={"run": "r1"})
    early = litellm.retrieve_batch(created.id, **openai_at(server))
    server.release_batches()
    batch = finished(server, created.id)
    output = jsonl(server, batch.output_file_id)
    singles = [httpx.post(f"{server.url}/chat/completions", json=line["body"]).json() for line in BATCH_LINES]
    assert (created.status, early.status, created.metadata) == ("validating", "in_progress", {"run": "r1"})
    assert outcome(batch) == ("completed", (3, 3, 0), {"in_progress_at", "finalizing_at", "completed_at"})
    assert batch.error_file_id is None
    assert [(line["custom_id"], line["response"]["status_code"], line["error"]) for line in output] == [
        ("q0", 200, None),
        ("q1", 200, None),
        ("q2", 200, None),
    ]
    assert [without_id(line["response"]["body"]) for line in output] == [without_id(s) for s in singles]
    stats = server.stats()
    assert {key: stats[key] for key in ("requests", "batches", "batch_requests")} == {
        "requests": 3,  # the single calls only
        "batches": 1,
        "batch_requests": 3,
    }


def test_every_submission_of_a_custom_id_is_counted_whichever_batch_holds_it(server):
    submit(server)
    submit(server, BATCH_LINES[:1])
    assert server.batch_submissions() == {"q0": 2, "q1": 1, "q2": 1}
    assert [batch["id"] for batch in server.batches] == ["batch_1", "batch_2"]
    assert (server.stats()["batch_requests"], server.stats()["max_submissions_per_custom_id"]) == (4, 2)


def test_scripted_lines_fail_into_the_error_file_and_the_rest_are_answered(server):
    server.script_batch(BatchScript(failed_lines={1: 500}))
    batch = finished(server, submit(server).id)
    errors = jsonl(server, batch.error_file_id)
    assert outcome(batch) == ("completed", (3, 2, 1), {"in_progress_at", "finalizing_at", "completed_at"})
    assert [line["custom_id"] for line in jsonl(server, batch.output_file_id)] == ["q0", "q2"]
    assert errors == [
        {
            "id": "batch_1_req_1",
            "custom_id": "q1",
            "response": {
                "status_code": 500,
                "request_id": "batch_1_request_1",
                "body": {"error": {"message": "scripted 500", "type": "test"}},
            },
            "error": None,
        }
    ]


def test_an_expired_batch_answers_its_first_lines_and_returns_the_rest_as_expired(server):
    server.script_batch(BatchScript(expire=True, expire_completed=1))
    batch = finished(server, submit(server).id)
    assert outcome(batch) == ("expired", (3, 1, 2), {"in_progress_at", "finalizing_at", "expired_at"})
    assert [line["custom_id"] for line in jsonl(server, batch.output_file_id)] == ["q0"]
    assert jsonl(server, batch.error_file_id) == [
        {"id": "batch_1_req_1", "custom_id": "q1", "response": None, "error": BATCH_EXPIRED},
        {"id": "batch_1_req_2", "custom_id": "q2", "response": None, "error": BATCH_EXPIRED},
    ]


def test_a_failed_batch_says_why_and_answers_nothing(server):
    server.script_batch(BatchScript(fail=True))
    batch = finished(server, submit(server).id)
    assert outcome(batch) == ("failed", (3, 0, 0), {"in_progress_at", "failed_at"})
    assert (batch.output_file_id, batch.error_file_id) == (None, None)
    assert [(error.code, error.line, error.param) for error in batch.errors.data] == [
        ("invalid_request", None, None)
    ]


def test_a_cancelled_batch_never_answers_while_a_finished_one_stays_as_it_was(server):
    server.hold_batches()
    cancelled = litellm.cancel_batch(submit(server).id, **openai_at(server))
    server.release_batches()  # held, it would finish now, had it not been cancelled
    done = finished(server, submit(server).id)
    later = litellm.retrieve_batch(cancelled.id, **openai_at(server))
    stamps = {"in_progress_at", "cancelling_at", "cancelled_at"}
    assert (outcome(cancelled), outcome(later)) == (("cancelled", (3, 0, 0), stamps),) * 2
    assert (later.output_file_id, later.error_file_id) == (None, None)
    assert litellm.cancel_batch(done.id, **openai_at(server)).model_dump() == done.model_dump()


def test_batches_are_listed_newest_first_a_page_at_a_time(server):
    for _ in range(3):
        submit(server)
    first = litellm.list_batches(limit=2, **openai_at(server))
    rest = litellm.list_batches(after=first.last_id, limit=2, **openai_at(server))
    pages = [
        ([batch.id for batch in page.data], page.first_id, page.last_id, page.has_more)
        for page in (first, rest)
    ]
    assert pages == [
        (["batch_3", "batch_2"], "batch_3", "batch_2", True),
        (["batch_1"], "batch_1", "batch_1", False),
    ]


def test_a_batch_finishes_when_told_and_a_forgotten_one_is_a_404_its_id_never_given_again(server):
    server.script_batch(BatchScript(delay_s=3600))
    waiting = submit(server)
    server.finish_batches()
    assert litellm.retrieve_batch(waiting.id, **openai_at(server)).status == "completed"
    server.forget_batch(waiting.id)
    with pytest.raises(openai.NotFoundError):
        litellm.retrieve_batch(waiting.id, **openai_at(server))
    assert (submit(server).id, server.stats()["batches"]) == ("batch_2", 2)


@pytest.mark.parametrize(
    "call",
    [
        lambda kwargs: litellm.retrieve_batch("batch_9", **kwargs),
        lambda kwargs: litellm.cancel_batch("batch_9", **kwargs),
        lambda kwargs: litellm.file_content("file-9", **kwargs),
        lambda kwargs: litellm.create_batch(
            completion_window="24h", endpoint="/v1/chat/completions", input_file_id="file-9", **kwargs
        ),
    ],
    ids=["retrieve", "cancel", "content", "create"],
)
def test_an_unknown_batch_or_file_is_a_404_that_litellm_raises(server, call):
    with pytest.raises(openai.NotFoundError):
        call(openai_at(server))
