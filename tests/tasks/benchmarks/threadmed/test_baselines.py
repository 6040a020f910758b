import json

import litellm
import pytest

from tasks.benchmarks.threadmed import baselines
from tasks.benchmarks.threadmed.baselines import (
    DEFERRAL_REPLY,
    OVERLAP_JUDGE_LABEL,
    load_corpus,
    overlap_verdict,
    retrieve_answer,
)
from tasks.benchmarks.threadmed.cases import answered_dir
from tasks.llm.call import CallOptions, ChatRequest, complete
from tasks.llm.ledger import CallLedger
from tests.eval_fixtures import THREAD_TEXTS, write_dataset

OPTIONS = CallOptions(provider=baselines.PROVIDER)


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    return answered_dir(write_dataset(tmp_path_factory.mktemp("build")))


def ask(model: str, messages: list[dict[str, str]], ledger_dir, **params):
    request = ChatRequest(model=f"threadmed/{model}", messages=tuple(messages), params=params)
    return complete(request, OPTIONS, CallLedger(ledger_dir))


def test_retrieval_answers_with_the_closest_training_question(corpus_dir, tmp_path):
    question = "I twisted my ankle, it is swollen but I can walk on it. Do I need an x-ray?"
    outcome = ask("retrieval", [{"role": "user", "content": question}], tmp_path, corpus_dir=str(corpus_dir))
    sprain = THREAD_TEXTS["sprain"][1]
    assert outcome.status == "ok"
    assert outcome.text == sprain[0][1]
    assert (outcome.cost_usd, outcome.attempts) == (0.0, 1)


def test_retrieval_answers_the_last_question_of_the_conversation(corpus_dir):
    corpus = load_corpus(str(corpus_dir))
    assert retrieve_answer("Will honey help my cough?", corpus) == THREAD_TEXTS["cough"][1][1][1]


def test_retrieval_only_knows_the_training_split(corpus_dir):
    corpus = load_corpus(str(corpus_dir))
    train_answers = {a for split, turns in THREAD_TEXTS.values() if split == "train" for _, a in turns}
    assert set(corpus.answers) == train_answers


def test_retrieval_without_a_corpus_is_a_bad_request(tmp_path):
    outcome = ask("retrieval", [{"role": "user", "content": "hi"}], tmp_path)
    assert (outcome.status, outcome.error_kind, outcome.retryable) == ("failed", "bad_request", False)
    assert "corpus_dir" in outcome.error


def test_deferral_always_says_see_a_doctor(tmp_path):
    for question in ("Is this mole cancer?", "My chest hurts when I run."):
        outcome = ask("deferral", [{"role": "user", "content": question}], tmp_path)
        assert outcome.text == DEFERRAL_REPLY


def test_overlap_judge_rewards_the_physician_answer_and_not_generic_deferral():
    for _, turns in THREAD_TEXTS.values():
        for _, answer in turns:
            assert overlap_verdict(answer, answer)["SCORE"] == 1.0
            assert overlap_verdict(answer, DEFERRAL_REPLY)["SCORE"] == 0.0


def test_overlap_judge_reads_the_rubric_sections_and_labels_itself(tmp_path):
    prompt = (
        "<physician_answer>Rest, ice and ibuprofen; x-ray if you cannot walk.</physician_answer>\n"
        "<ai_answer>Ice it, rest, ibuprofen helps, and get an x-ray if you cannot walk.</ai_answer>"
    )
    messages = [{"role": "system", "content": "rubric"}, {"role": "user", "content": prompt}]
    verdict = json.loads(ask("overlap-judge", messages, tmp_path).text)
    assert verdict["SCORE"] == 1.0
    assert OVERLAP_JUDGE_LABEL in verdict["REASON"]


def test_overlap_judge_without_the_sections_is_a_bad_request(tmp_path):
    outcome = ask("overlap-judge", [{"role": "user", "content": "grade this"}], tmp_path)
    assert (outcome.error_kind, outcome.retryable) == ("bad_request", False)


def test_offline_models_are_a_litellm_provider():
    baselines.register()
    baselines.register()
    assert [p["provider"] for p in litellm.custom_provider_map].count("threadmed") == 1
    reply = litellm.completion(model="threadmed/deferral", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == DEFERRAL_REPLY
