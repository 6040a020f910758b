"""The bench's question set, versioned: what each patient is asked about each case, and what a right answer
must hold.

Version `patient_questions_v1`, a deterministic generator over the case and the lay lexicon v1:
- positive questions, about what the record holds: one per condition with a lay sentence (every condition
  under `history`) and one per lexicon observation kind with a value, worded as the offline teacher words
  them (oracle/offline_teacher.py), at most `MAX_POSITIVES` per case, conditions first, in record order;
- negative questions, about what it lacks: the lexicon's conditions that are not in the record and share
  no keyword with anything it holds (oracle/topics.py), the first `MAX_NEGATIVES` in a seeded order.
With an oracle data folder, its held-out pairs (the test split) of the bench's cases are asked too.
"""

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.oracle.offline_teacher import teacher_question
from tasks.benchmarks.snomed.oracle.topics import (
    PairKind,
    PairTopic,
    Subject,
    case_rng,
    negative_candidates,
    positive_topics,
)
from tasks.benchmarks.snomed.patient import Disclosure, Lexicon
from tasks.benchmarks.snomed.vocabulary import VocabularyEntry

QUESTION_SET_VERSION = "patient_questions_v1"
MAX_POSITIVES = 6
MAX_NEGATIVES = 3
QUESTION_SEED = 0
QuestionSource = Literal["generated", "oracle_test"]


class BenchQuestion(BaseModel, frozen=True):
    """One question to put to every patient about one case: what it is about and where it comes from."""

    question_id: str
    source: QuestionSource
    kind: PairKind
    subject: Subject
    topic: str
    display: str
    question: str


def lexicon_vocabulary(lexicon: Lexicon) -> dict[str, VocabularyEntry]:
    """The lexicon's conditions as vocabulary entries: negative questions are asked in lay words."""
    return {
        code: VocabularyEntry(code=code, display=entry.display, semantic_tag="disorder", sources=("lexicon",))
        for code, entry in lexicon.conditions.items()
    }


def _question(source: QuestionSource, index: int, topic: PairTopic, text: str) -> BenchQuestion:
    return BenchQuestion(
        question_id=f"{source}-{index}",
        source=source,
        kind=topic.kind,
        subject=topic.subject,
        topic=topic.topic,
        display=topic.display,
        question=text,
    )


def generated_questions(case: Case, disclosure: Disclosure, lexicon: Lexicon) -> list[BenchQuestion]:
    """The case's questions of version v1 (module docstring)."""
    positives = positive_topics(case, disclosure, lexicon, MAX_POSITIVES, None)
    rng = case_rng(QUESTION_SEED, case.case_id)
    candidates = negative_candidates(case, lexicon_vocabulary(lexicon), lexicon)
    negatives = [
        PairTopic(kind="negative", subject="condition", topic=entry.code, display=entry.display)
        for entry in rng.sample(candidates, min(MAX_NEGATIVES, len(candidates)))
    ]
    return [
        _question("generated", index, topic, teacher_question(topic, lexicon))
        for index, topic in enumerate(positives + negatives)
    ]


def oracle_test_questions(oracle_dir: Path, case: Case, lexicon: Lexicon) -> list[BenchQuestion]:
    """The held-out pairs (chat/test.jsonl) of the case in an oracle data folder, as questions."""
    questions = []
    for line in (Path(oracle_dir) / "chat" / "test.jsonl").read_text(encoding="utf-8").splitlines():
        pair = json.loads(line)
        if pair["case_id"] != case.case_id:
            continue
        question = next(m["content"] for m in pair["messages"] if m["role"] == "user")
        subject: Subject = "observation" if pair["topic"] in lexicon.observations else "condition"
        display = next((c.display for c in case.conditions if c.code == pair["topic"]), pair["topic"])
        topic = PairTopic(kind=pair["kind"], subject=subject, topic=pair["topic"], display=display)
        questions.append(_question("oracle_test", len(questions), topic, question))
    return questions


def oracle_test_case_ids(oracle_dir: Path) -> list[str]:
    """The patients of an oracle data folder's test split, in file order."""
    lines = (Path(oracle_dir) / "chat" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    return list(dict.fromkeys(json.loads(line)["case_id"] for line in lines))
