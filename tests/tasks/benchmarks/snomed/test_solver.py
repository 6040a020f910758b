from datetime import UTC, datetime
from typing import Any

import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.snomed.contracts import CONVERSATIONS
from tasks.benchmarks.snomed.interview import InterviewPrompts, InterviewSettings
from tasks.benchmarks.snomed.solver import InterviewJob, RoleSetup, interview_rows, interview_turns
from tasks.evals.config import ModelSpec
from tasks.evals.outputs import write_table
from tasks.llm.ledger import CallRecord
from tasks.llm.request import CallOptions, ChatRequest
from tests.snomed_fixtures import replay_calls
from tests.tasks.benchmarks.snomed.test_loading import CASES

AT = datetime(2025, 1, 1, tzinfo=UTC)
FINAL = '<Final Answer>: ["59621000"]'
PROMPTS = InterviewPrompts("CLINICIAN", "Hello, doctor.", "FINAL NOW", "REASK", "PATIENT")


def job(epoch: int = 0, max_turns: int = 20) -> InterviewJob:
    """The clinician `doc` interviews the LLM patient `sim` about case t1 (hypertension, sinusitis)."""
    return InterviewJob(
        run_id="run1",
        clinician=RoleSetup(
            spec=ModelSpec(name="doc", model="openai/doc", params={"temperature": 1}),
            options=CallOptions(provider="openai"),
            prompt_version="snomed_clinician_v1",
        ),
        patient=RoleSetup(
            spec=ModelSpec(name="sim", model="openai/sim"),
            options=CallOptions(provider="openai"),
            prompt_version="snomed_patient_v1",
            params={"seed": 3},
        ),
        prompts=PROMPTS,
        settings=InterviewSettings(max_turns=max_turns),
        case=CASES[0],
        epoch=epoch,
    )


class Provider:
    """Canned replies per role in order (None: the call failed for good); every request it was sent."""

    def __init__(self, clinician: list[str | None], patient: list[str | None]) -> None:
        self.replies = {"clinician": list(clinician), "patient": list(patient)}
        self.requests: list[tuple[str, ChatRequest]] = []

    def __call__(self, role: str, request: ChatRequest) -> CallRecord:
        self.requests.append((role, request))
        text = self.replies[role].pop(0)
        if text is None:
            return CallRecord(key=request.key(), model=request.model, status="failed", attempts=6,
                              error_kind="rate_limit", error="429 Too Many Requests", started_at=AT,
                              finished_at=AT)  # fmt: skip
        return CallRecord(key=request.key(), model=request.model, status="ok", text=text, prompt_tokens=20,
                          completion_tokens=5, input_cost_usd=0.002, output_cost_usd=0.001, latency_s=0.5,
                          attempts=1, started_at=AT, finished_at=AT)  # fmt: skip


KEY = {"run_id": "run1", "model": "doc", "case_id": "t1", "epoch": 0}
OK_CALL = {"status": "ok", "prompt_tokens": 20, "completion_tokens": 5, "cost_usd": 0.003, "latency_s": 0.5,
           "finish_reason": None, "attempts": 1, "error": None, "error_class": None}  # fmt: skip
FAILED_CALL = {"status": "failed", "prompt_tokens": 0, "completion_tokens": 0, "cost_usd": 0.0,
               "latency_s": None, "finish_reason": None, "attempts": 6, "error": "429 Too Many Requests",
               "error_class": "rate_limit"}  # fmt: skip


def rows_of(interview_job: InterviewJob, provider: Provider) -> list[dict[str, Any]]:
    """The CONVERSATIONS rows of an interview, as the solve step makes them."""
    return interview_rows(interview_job, *interview_turns(interview_job, provider))


def scripted(message: int, role: str, sent_to: str, text: str) -> dict[str, Any]:
    return {**KEY, "message": message, "turn": 0, "role": role, "sent_to": sent_to, "text": text,
            "leaked_codes": [], "status": "scripted"}  # fmt: skip


# Each role's system prompt, then the opening line (the clinician's alone).
OPENING = [
    scripted(0, "system", "clinician", "CLINICIAN"),
    scripted(1, "system", "patient", "PATIENT"),
    scripted(2, "patient", "clinician", "Hello, doctor."),
]


def test_requests_carry_the_role_and_case_as_scope_and_the_epoch_in_their_key():
    first, second = Provider(["Any headaches?", FINAL], ["No."]), Provider(["Any headaches?", FINAL], ["No."])
    interview, calls = interview_turns(job(epoch=0), first)
    interview_turns(job(epoch=1), second)
    assert [(role, r.model, r.scope, r.epoch, r.prompt_version, r.params) for role, r in first.requests] == [
        ("clinician", "openai/doc", "snomed/clinician/t1", 0, "snomed_clinician_v1", {"temperature": 1}),
        ("patient", "openai/sim", "snomed/patient/t1", 0, "snomed_patient_v1", {"seed": 3}),
        ("clinician", "openai/doc", "snomed/clinician/t1", 0, "snomed_clinician_v1", {"temperature": 1}),
    ]
    assert [(role, record.key) for role, record in calls] == [(role, r.key()) for role, r in first.requests]
    assert (interview.status, interview.predicted_codes) == ("answered", ("59621000",))
    assert [r.model_copy(update={"epoch": 0}) for _, r in second.requests] == [r for _, r in first.requests]
    assert {r.key() for _, r in first.requests}.isdisjoint(r.key() for _, r in second.requests)


def test_rows_hold_each_message_with_its_call_and_speaker_and_the_patients_leaks():
    provider = Provider(["Any headaches?", FINAL], ["My essential hypertension, they say."])
    keys = lambda: [r.key() for _, r in provider.requests]  # noqa: E731
    rows = rows_of(job(), provider)
    assert rows == [
        *OPENING,
        {**KEY, "message": 3, "turn": 1, "role": "clinician", "sent_to": None, "text": "Any headaches?",
         "leaked_codes": [], **OK_CALL, "call_key": keys()[0], "speaker": "doc"},
        {**KEY, "message": 4, "turn": 1, "role": "patient", "sent_to": None,
         "text": "My essential hypertension, they say.", "leaked_codes": ["59621000"], **OK_CALL,
         "call_key": keys()[1], "speaker": "sim"},
        {**KEY, "message": 5, "turn": 2, "role": "clinician", "sent_to": None, "text": FINAL,
         "leaked_codes": [], **OK_CALL, "call_key": keys()[2], "speaker": "doc"},
    ]  # fmt: skip


def test_a_failed_patient_call_is_numbered_in_its_questions_turn():
    provider = Provider(["Any headaches?", "Any fever?"], ["No.", None])
    rows = rows_of(job(), provider)
    assert [(r["turn"], r["role"], r["status"]) for r in rows[3:]] == [
        (1, "clinician", "ok"),
        (1, "patient", "ok"),
        (2, "clinician", "ok"),
        (2, "patient", "failed"),
    ]
    assert rows[-1] == {**KEY, "message": 6, "turn": 2, "role": "patient", "speaker": "sim", "text": None,
                        "leaked_codes": [], **FAILED_CALL,
                        "call_key": provider.requests[-1][1].key()}  # fmt: skip


def test_a_failed_clinician_call_is_numbered_in_the_next_turn_also_at_the_final_answer():
    asking = rows_of(job(), Provider(["Any headaches?", None], ["No."]))
    forced = rows_of(job(max_turns=1), Provider(["Any headaches?", None], ["No."]))
    reasked = rows_of(job(max_turns=1), Provider(["Any headaches?", "Not sure yet.", None], ["No."]))
    assert [(r["turn"], r["role"], r["status"]) for r in asking[3:]] == [
        (1, "clinician", "ok"),
        (1, "patient", "ok"),
        (2, "clinician", "failed"),
    ]
    assert asking[-1] == {**KEY, "message": 5, "turn": 2, "role": "clinician", "speaker": "doc", "text": None,
                          "leaked_codes": [], **FAILED_CALL, "call_key": asking[-1]["call_key"]}  # fmt: skip
    # The request for the final answer is a message too, in the turn of the answer it asks for.
    assert forced[:-2] == asking[:-1]
    assert [(r["message"], r["turn"], r["role"], r["status"], r["text"]) for r in forced[-2:]] == [
        (5, 2, "instruction", "scripted", "FINAL NOW"),
        (6, 2, "clinician", "failed", None),
    ]
    assert [(r["turn"], r["role"], r["status"], r["text"]) for r in reasked[5:]] == [
        (2, "instruction", "scripted", "FINAL NOW"),
        (2, "clinician", "ok", "Not sure yet."),
        (3, "instruction", "scripted", "REASK"),
        (3, "clinician", "failed", None),
    ]


@pytest.mark.parametrize(
    ("clinician", "patient"),
    [
        (["Any headaches?", "Not sure yet.", FINAL], ["No."]),  # forced final answer, re-asked once
        (["Any headaches?", "Not sure yet.", "Still thinking."], ["No."]),  # no answer after the re-ask
        (["Any headaches?", "Not sure yet.", None], ["No."]),  # the re-ask's call failed
        (["Any headaches?"], [None]),  # the patient's call failed
    ],
)
def test_the_stored_conversation_replays_every_call_exactly(tmp_path, clinician, patient):
    provider = Provider(clinician, patient)
    write_table(rows_of(job(max_turns=1), provider), CONVERSATIONS, tmp_path / "conversations.parquet")
    replayed = replay_calls(pq.read_table(tmp_path / "conversations.parquet").to_pylist())
    assert replayed == [(role, list(request.messages)) for role, request in provider.requests]


def test_the_rows_fit_the_conversations_contract(tmp_path):
    rows = [
        *rows_of(job(), Provider(["Any headaches?", FINAL], ["No."])),
        *rows_of(job(epoch=1), Provider(["Any headaches?", None], ["No."])),
    ]
    assert {name for row in rows for name in row} <= set(CONVERSATIONS.columns)
    write_table(rows, CONVERSATIONS, tmp_path / "conversations.parquet")
    table = pq.read_table(tmp_path / "conversations.parquet")
    assert table.schema.equals(CONVERSATIONS.schema)
    assert table.to_pylist() == [{name: row.get(name) for name in CONVERSATIONS.columns} for row in rows]
