"""The offline consultation patient answers through the real call layer (call key, ledger, litellm)."""

from tasks.benchmarks.consult import offline_models
from tasks.llm import offline
from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger
from tasks.llm.request import CallOptions, ChatRequest
from tests.tasks.benchmarks.consult.test_simulator import CASE, FEVER, RESPIRATORY

OPTIONS = CallOptions(provider=offline.PROVIDER)


def ask(tmp_path, messages, **params):
    request = ChatRequest(model=offline_models.CONSULT_PATIENT, messages=tuple(messages), params=params)
    return complete(request, OPTIONS, CallLedger(tmp_path / "ledger"))


def test_the_patient_replays_the_earlier_questions_and_answers_the_last(tmp_path):
    messages = [
        {"role": "assistant", "content": CASE.opening},
        {"role": "user", "content": RESPIRATORY},
        {"role": "assistant", "content": "I've had a cough for 3 days."},
        {"role": "user", "content": RESPIRATORY},
    ]
    record = ask(tmp_path, messages, case=CASE.model_dump_json(), per_turn=1)
    assert (record.status, record.text) == ("ok", "I'm bringing up yellow phlegm.")


def test_the_patient_answers_as_the_simulator_does(tmp_path):
    record = ask(tmp_path, [{"role": "user", "content": FEVER}], case=CASE.model_dump_json())
    assert (record.status, record.text) == ("ok", "No, no fever.")


def test_a_missing_case_is_a_permanent_bad_request(tmp_path):
    record = ask(tmp_path, [{"role": "user", "content": FEVER}])
    assert (record.status, record.error_kind, record.attempts) == ("failed", "bad_request", 1)
