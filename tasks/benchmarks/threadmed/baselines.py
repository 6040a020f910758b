"""ThReadMed-QA's offline models, registered with the call layer (tasks/llm/offline.py) at import.

They go through exactly the call path of real models, so the demo and the tests run without keys or
network:

- `threadmed/retrieval`: answers with the physician answer of the most similar training-split question
  (rapidfuzz token-set similarity). A real, if weak, baseline. Needs the param `corpus_dir`: a dataset
  folder holding `threads.parquet` and `qa_pairs.parquet`.
- `threadmed/deferral`: always the same generic "see a doctor" reply, which the rubric must not reward.
- `threadmed/overlap-judge`: a heuristic judge scoring word overlap (F1 of content words) between the
  physician answer and the model answer found in the rubric prompt. NOT comparable to an LLM judge; it
  says so in every reason it gives.
"""

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from rapidfuzz import fuzz, process, utils

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
def load_corpus(corpus_dir: str) -> Corpus:
    """The train split of a dataset folder, loaded once per process and folder."""
    folder = Path(corpus_dir)
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


def _tagged(text: str, tag: str) -> str | None:
    found = re.search(rf"<{tag}>\s*(.*?)\s*</{tag}>", text, flags=re.DOTALL)
    return found.group(1) if found else None


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    return next(str(m["content"]) for m in reversed(messages) if m["role"] == "user")


def _retrieval(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    if "corpus_dir" not in params:
        raise OfflineBadRequest("threadmed/retrieval needs the param corpus_dir")
    return retrieve_answer(_last_user_text(messages), load_corpus(str(params["corpus_dir"])))


def _deferral(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    return DEFERRAL_REPLY


def _overlap_judge(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    prompt = "\n".join(str(m["content"]) for m in messages if m["role"] == "user")
    physician, answer = _tagged(prompt, "physician_answer"), _tagged(prompt, "ai_answer")
    if physician is None or answer is None:
        raise OfflineBadRequest(
            "overlap-judge needs <physician_answer> and <ai_answer> sections in the prompt"
        )
    return json.dumps(overlap_verdict(physician, answer))


RETRIEVAL = register_offline_model("retrieval", _retrieval)
DEFERRAL = register_offline_model("deferral", _deferral)
OVERLAP_JUDGE = register_offline_model("overlap-judge", _overlap_judge)
