"""The SNOMED offline models answer through the real call layer (call key, ledger, litellm)."""

from tasks.benchmarks.snomed import offline_models
from tasks.benchmarks.snomed.interview import offline_patient_params
from tasks.llm import offline
from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger
from tasks.llm.request import CallOptions, ChatRequest
from tests.tasks.benchmarks.snomed.test_interview import CASE

OPTIONS = CallOptions(provider=offline.PROVIDER)


def ask(model: str, tmp_path, question: str, **params):
    request = ChatRequest(model=model, messages=({"role": "user", "content": question},), params=params)
    return complete(request, OPTIONS, CallLedger(tmp_path / "ledger"))


def test_the_prevalence_clinician_names_the_k_most_frequent_codes_at_once(tmp_path):
    table = [["444814009", 30], ["59621000", 20], ["10509002", 10]]
    record = ask(offline_models.PREVALENCE, tmp_path, "Hello, doctor.", prevalence=table, k=2)
    assert (record.status, record.text) == ("ok", '<Final Answer>: ["444814009", "59621000"]')


def test_the_offline_patient_answers_from_the_case_in_its_params(tmp_path):
    params = offline_patient_params(CASE, "symptoms")
    record = ask(offline_models.PATIENT, tmp_path, "Has your blood pressure been high?", **params)
    assert (record.status, record.text) == (
        "ok",
        "They keep telling me my pressure readings are on the high side.",
    )


def test_a_missing_param_is_a_permanent_bad_request(tmp_path):
    record = ask(offline_models.PATIENT, tmp_path, "How are you?")
    assert (record.status, record.error_kind, record.attempts) == ("failed", "bad_request", 1)
