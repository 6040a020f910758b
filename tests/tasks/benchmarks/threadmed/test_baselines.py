import json
import pickle
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.benchmarks.threadmed.baselines import (
    COVERAGE_JUDGE,
    COVERAGE_JUDGE_LABEL,
    DEFERRAL,
    DEFERRAL_REPLY,
    OVERLAP_JUDGE,
    OVERLAP_JUDGE_LABEL,
    RETRIEVAL,
    _tagged,
    coverage_verdict,
    load_corpus,
    overlap_verdict,
    retrieve_answer,
)
from tasks.benchmarks.threadmed.cases import ThreadCase, answered_dir, folder_fingerprint
from tasks.benchmarks.threadmed.solver import InferenceJob
from tasks.evals.config import ModelSpec
from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger
from tasks.llm.offline import PROVIDER
from tasks.llm.request import CallOptions, ChatRequest
from tests.eval_fixtures import THREAD_TEXTS, write_dataset

OPTIONS = CallOptions(provider=PROVIDER)


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


def test_retrieval_from_a_corpus_whose_content_is_not_the_planned_one_is_a_bad_request(corpus_dir, tmp_path):
    """The plan keys the answers by the corpus's sha256: a folder rebuilt since then answers nothing."""
    question = [{"role": "user", "content": "Will honey help my cough?"}]
    planned = ask("retrieval", question, tmp_path, corpus_dir=str(corpus_dir), corpus_sha256="0" * 64)
    assert (planned.status, planned.error_kind, planned.retryable) == ("failed", "bad_request", False)
    assert f"the corpus in {corpus_dir} changed since the run was planned" in planned.error
    same = ask(
        "retrieval",
        question,
        tmp_path,
        corpus_dir=str(corpus_dir),
        corpus_sha256=folder_fingerprint(corpus_dir),
    )
    assert (same.status, same.text) == ("ok", THREAD_TEXTS["cough"][1][1][1])


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


# Content words: rest, ice, ibuprofen, ray (of x-ray), cannot, walk.
PHYSICIAN = "Rest, ice and ibuprofen; x-ray if you cannot walk."
LONG_AND_COMPLETE = (  # every point of the physician's, among 55 content words: F1 0.20, recall 1.0
    "Rest the ankle, put ice on it, take ibuprofen with food, and get an x-ray if you cannot walk four "
    "steps; elevation, compression, gentle movement after two days and a brace help many sprains heal. "
    "Most ligament injuries recover fully within six weeks, although athletes sometimes need physiotherapy, "
    "balance training, taping, supportive footwear, stretching exercises, strengthening routines and "
    "patience before returning safely to running, jumping, dancing or climbing stairs without discomfort."
)


@pytest.mark.parametrize(
    ("answer", "coverage", "score"),
    [
        ("Rest and ice it, take ibuprofen.", "0.50", 1.0),  # 3 of 6
        ("Ice helps, and walk gently.", "0.33", 0.5),  # 2 of 6
        ("Rest.", "0.17", 0.0),  # one shared word is chance
        (DEFERRAL_REPLY, "0.00", 0.0),
        (LONG_AND_COMPLETE, "1.00", 1.0),  # recall: what the answer adds costs nothing
    ],
)
def test_coverage_judge_grades_the_share_of_the_physician_answer_covered(answer, coverage, score):
    assert coverage_verdict(PHYSICIAN, answer) == {
        "SCORE": score,
        "REASON": f"covers {coverage} of the physician answer's content words ({COVERAGE_JUDGE_LABEL})",
    }


def test_coverage_and_overlap_judges_disagree_on_a_long_complete_answer():
    assert (
        coverage_verdict(PHYSICIAN, LONG_AND_COMPLETE)["SCORE"],
        overlap_verdict(PHYSICIAN, LONG_AND_COMPLETE)["SCORE"],
    ) == (1.0, 0.5)


class OneDeviation:
    """An rng whose every Gaussian draw is one standard deviation above the mean."""

    def gauss(self, mu: float, sigma: float) -> float:
        return mu + sigma


def test_coverage_judge_at_a_temperature_adds_noise_scaled_by_it():
    half = "Ice helps, and walk gently."  # coverage 0.33: + 0.15 x 0.5 = 0.41, over the full-credit line
    assert coverage_verdict(PHYSICIAN, half, 0.5, OneDeviation()) == {
        "SCORE": 1.0,
        "REASON": "covers 0.33 of the physician answer's content words, sampled as 0.41 at temperature 0.5 "
        f"({COVERAGE_JUDGE_LABEL})",
    }
    assert coverage_verdict(PHYSICIAN, half, 0.0, OneDeviation())["SCORE"] == 0.5
    grades = {coverage_verdict(PHYSICIAN, half, 1.0, random.Random(seed))["SCORE"] for seed in range(40)}
    assert grades == {0.0, 0.5, 1.0}


def test_coverage_judge_through_the_call_layer_reads_the_rubric_and_is_deterministic_at_temperature_0(
    tmp_path,
):
    answer = "Ice helps, and walk gently."
    prompt = f"<physician_answer>{PHYSICIAN}</physician_answer>\n<ai_answer>{answer}</ai_answer>"
    messages = [{"role": "system", "content": "rubric"}, {"role": "user", "content": prompt}]
    verdicts = {
        ask("coverage-judge", messages, tmp_path / str(epoch), temperature=0).text for epoch in range(3)
    }
    assert [json.loads(verdict)["SCORE"] for verdict in verdicts] == [0.5]


def test_the_baselines_keep_their_model_strings():
    assert COVERAGE_JUDGE == "threadmed/coverage-judge"
    assert (RETRIEVAL, DEFERRAL, OVERLAP_JUDGE) == (
        "threadmed/retrieval",
        "threadmed/deferral",
        "threadmed/overlap-judge",
    )


# What a Dask worker does with a job: a fresh process unpickles it (importing the benchmark's modules)
# and calls; the call layer itself imports no benchmark.
WORKER = """
import pickle, sys
from pathlib import Path
from tasks.llm.call import complete
from tasks.llm.ledger import CallLedger
job = pickle.loads(Path(sys.argv[1]).read_bytes())
request = job.model.request([{"role": "user", "content": job.thread.questions[0]}])
print(complete(request, job.options, CallLedger(Path(sys.argv[2]))).text)
"""


def test_a_process_that_unpickles_a_job_can_call_the_offline_models(tmp_path):
    thread = ThreadCase(thread_id="t1", stratum="skin", questions=("Is this mole cancer?",), answers=("No.",))
    job = InferenceJob(
        run_id="r1", model=ModelSpec(model=DEFERRAL), options=OPTIONS, condition="baseline", thread=thread
    )
    (tmp_path / "job.pickle").write_bytes(pickle.dumps(job))
    worker = subprocess.run(
        [sys.executable, "-c", WORKER, str(tmp_path / "job.pickle"), str(tmp_path / "ledger")],
        cwd=Path(__file__).parents[4],
        capture_output=True,
        text=True,
        check=True,
    )
    assert worker.stdout.strip() == DEFERRAL_REPLY


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("<ai_answer>\n  Rest it.  \n</ai_answer>", "Rest it."),
        # the first tag and the closing tag after it; blanks inside kept (a lazy regex rescanned them)
        ("<ai_answer>a" + " " * 5000 + "b</ai_answer> <ai_answer>c</ai_answer>", "a" + " " * 5000 + "b"),
        ("<ai_answer>never closed", None),
        ("</ai_answer> before <ai_answer>", None),
    ],
)
def test_an_offline_judge_reads_the_tagged_answer_from_its_prompt(prompt, expected):
    assert _tagged(prompt, "ai_answer") == expected
