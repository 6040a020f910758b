"""ThReadMed-QA's offline models, registered with the call layer (tasks/llm/offline.py) at import.

They go through exactly the call path of real models, so the demo and the tests run without keys or
network:

- `threadmed/retrieval`: answers with the physician answer of the most similar training-split question
  (rapidfuzz token-set similarity). A real, if weak, baseline. Needs the param `corpus_dir`: a dataset
  folder holding `threads.parquet` and `qa_pairs.parquet`; with `corpus_sha256` (the plan sets it, so the
  call key holds the corpus's content), a folder whose files hash otherwise is a bad request.
- `threadmed/deferral`: always the same generic "see a doctor" reply, which the rubric must not reward.
- `threadmed/overlap-judge`: a heuristic judge scoring word overlap (F1 of content words) between the
  physician answer and the model answer found in the rubric prompt. NOT comparable to an LLM judge; it
  says so in every reason it gives.
- `threadmed/coverage-judge`: a second heuristic judge, for re-judging demos: the share of the physician
  answer's content words the model answer covers (recall; 1.0 from 0.40, 0.5 from 0.20). At temperature
  T > 0 it samples as an LLM does: Gaussian noise of standard deviation 0.15 x T is added to the coverage
  before grading, drawn afresh on each call, so two epochs of a grading may disagree near a threshold; at
  temperature 0 it is deterministic. NOT comparable to an LLM judge either; its reasons say so.
"""

import json
import random
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from rapidfuzz import fuzz, process, utils

from tasks.benchmarks.threadmed.cases import folder_fingerprint
from tasks.llm.offline import OfflineBadRequest, register_offline_model

DEFERRAL_REPLY = (
    "I'm not able to give medical advice about this. Please see a doctor or another qualified health "
    "professional who can examine you and review your history."
)
OVERLAP_JUDGE_LABEL = "heuristic word-overlap judge, not comparable to an LLM judge"
# F1 of content words with the physician answer at or above which the overlap judge gives 1.0 / 0.5.
FULL_CREDIT_F1 = 0.30
HALF_CREDIT_F1 = 0.15
MIN_SHARED_WORDS = 2  # one shared word in a short answer is chance, not agreement

_STOPWORD_TEXT = """
a about after again all also am an and any are as at be because been before being but by can could
did do does doing for from had has have having he her here him his how i if in into is it its just
me more most my no not now of on or our out over own same she should so some such than that the
their them then there these they this those through to too under until up very was we were what when
where which while who why will with would you your yours
see doctor doctors physician professional qualified health healthcare medical advice consult please
"""
# Referral words ("see a doctor") are stop words too: the rubric gives generic deferral no credit.
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@dataclass(frozen=True)
class Corpus:
    """Training-split questions (preprocessed for rapidfuzz) and their physician answers."""

    questions: list[str]
    answers: list[str]


@lru_cache(maxsize=4)
def load_corpus(corpus_dir: str, sha256: str | None = None) -> Corpus:
    """The train split of a dataset folder, loaded once per process, folder and content: with `sha256`, only
    if its files hash so (cases.folder_fingerprint), else a bad request (the folder changed since the
    plan)."""
    folder = Path(corpus_dir)
    if sha256 is not None and (found := folder_fingerprint(folder)) != sha256:
        raise OfflineBadRequest(
            f"the corpus in {folder} changed since the run was planned "
            f"(sha256 {found[:12]}, not {sha256[:12]})"
        )
    train = {
        row["thread_id"]
        for row in pq.read_table(folder / "threads.parquet", columns=["thread_id", "split"]).to_pylist()
        if row["split"] == "train"
    }
    pairs = pq.read_table(
        folder / "qa_pairs.parquet", columns=["thread_id", "question", "answer"]
    ).to_pylist()
    kept = [p for p in pairs if p["thread_id"] in train and p["answer"]]
    if not kept:
        raise OfflineBadRequest(f"no answered training-split pairs in {folder}")
    return Corpus([utils.default_process(p["question"]) for p in kept], [p["answer"] for p in kept])


def retrieve_answer(question: str, corpus: Corpus) -> str:
    """The physician answer of the training question most similar to `question`."""
    match = process.extractOne(utils.default_process(question), corpus.questions, scorer=fuzz.token_set_ratio)
    return corpus.answers[match[2]]


def content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in _STOPWORDS and len(w) > 2}


def overlap_verdict(physician_answer: str, model_answer: str) -> dict[str, Any]:
    """The overlap judge's verdict, in the rubric's JSON shape."""
    reference, candidate = content_words(physician_answer), content_words(model_answer)
    shared = len(reference & candidate)
    f1 = 2 * shared / (len(reference) + len(candidate)) if shared else 0.0
    score = 1.0 if f1 >= FULL_CREDIT_F1 else 0.5 if f1 >= HALF_CREDIT_F1 else 0.0
    if shared < MIN_SHARED_WORDS:
        score = 0.0
    return {
        "SCORE": score,
        "REASON": f"content-word F1 {f1:.2f} with the physician answer ({OVERLAP_JUDGE_LABEL})",
    }


COVERAGE_JUDGE_LABEL = "heuristic word-coverage judge, not comparable to an LLM judge"
# Share of the physician answer's content words the model answer covers for 1.0 / 0.5.
FULL_CREDIT_COVERAGE = 0.40
HALF_CREDIT_COVERAGE = 0.20
# Standard deviation of the noise added to the coverage per unit of temperature (0.105 at T = 0.7).
COVERAGE_NOISE_PER_TEMPERATURE = 0.15


def coverage_verdict(
    physician_answer: str, model_answer: str, temperature: float = 0.0, rng: random.Random | None = None
) -> dict[str, Any]:
    """The coverage judge's verdict, in the rubric's JSON shape; `rng` draws the noise at temperature > 0."""
    reference, candidate = content_words(physician_answer), content_words(model_answer)
    shared = len(reference & candidate)
    coverage = shared / len(reference) if reference else 0.0
    sampled = coverage
    if temperature > 0:
        sampled += (rng or random.Random()).gauss(0.0, COVERAGE_NOISE_PER_TEMPERATURE * temperature)
    score = 1.0 if sampled >= FULL_CREDIT_COVERAGE else 0.5 if sampled >= HALF_CREDIT_COVERAGE else 0.0
    if shared < MIN_SHARED_WORDS:
        score = 0.0
    noise = f", sampled as {sampled:.2f} at temperature {temperature:g}" if temperature > 0 else ""
    return {
        "SCORE": score,
        "REASON": f"covers {coverage:.2f} of the physician answer's content words{noise} "
        f"({COVERAGE_JUDGE_LABEL})",
    }


def _tagged(text: str, tag: str) -> str | None:
    """The text between the first `<tag>` and the `</tag>` after it, stripped; None without both. Found by
    `str.find` in linear time (a lazy regex rescanned a run of blanks at each of its characters)."""
    start = text.find(f"<{tag}>")
    end = text.find(f"</{tag}>", start) if start >= 0 else -1
    return text[start + len(tag) + 2 : end].strip() if end >= 0 else None


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    return next(str(m["content"]) for m in reversed(messages) if m["role"] == "user")


def _retrieval(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    if "corpus_dir" not in params:
        raise OfflineBadRequest("threadmed/retrieval needs the param corpus_dir")
    corpus = load_corpus(str(params["corpus_dir"]), params.get("corpus_sha256"))
    return retrieve_answer(_last_user_text(messages), corpus)


def _deferral(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    return DEFERRAL_REPLY


def _graded_texts(messages: list[dict[str, Any]], judge: str) -> tuple[str, str]:
    """The physician answer and the model answer a judge's rubric prompt holds."""
    prompt = "\n".join(str(m["content"]) for m in messages if m["role"] == "user")
    physician, answer = _tagged(prompt, "physician_answer"), _tagged(prompt, "ai_answer")
    if physician is None or answer is None:
        raise OfflineBadRequest(f"{judge} needs <physician_answer> and <ai_answer> sections in the prompt")
    return physician, answer


def _overlap_judge(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    return json.dumps(overlap_verdict(*_graded_texts(messages, "overlap-judge")))


def _coverage_judge(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    temperature = float(params.get("temperature") or 0.0)
    return json.dumps(coverage_verdict(*_graded_texts(messages, "coverage-judge"), temperature))


RETRIEVAL = register_offline_model("retrieval", _retrieval)
DEFERRAL = register_offline_model("deferral", _deferral)
OVERLAP_JUDGE = register_offline_model("overlap-judge", _overlap_judge)
COVERAGE_JUDGE = register_offline_model("coverage-judge", _coverage_judge)
