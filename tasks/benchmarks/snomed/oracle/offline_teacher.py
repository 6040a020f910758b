"""The offline teacher `threadmed/oracle-teacher`: writes a pair deterministically, for demos and tests.

Its question names the topic with a lay keyword of the lay lexicon (the one its symptom sentence uses, so
the question reads like one about that complaint) or, for a condition without lexicon words, the condition's
name; its answer is the offline patient's (patient.answer_question) from the record. It is no language model:
its pairs say only what the lexicon says, and every output made with it is labelled offline.
Registered with the call layer when this module is imported.
"""

import json
from typing import Any

from tasks.benchmarks.snomed.case import PatientRecord
from tasks.benchmarks.snomed.leak import normalise_display
from tasks.benchmarks.snomed.oracle.topics import PairTopic
from tasks.benchmarks.snomed.patient import Lexicon, answer_question, keyword_score, load_lexicon
from tasks.llm.offline import OfflineBadRequest, register_offline_model

OFFLINE_TEACHER_LABEL = "offline teacher: deterministic, from the lay lexicon"


def teacher_question(topic: PairTopic, lexicon: Lexicon) -> str:
    """The doctor's question about `topic`, in the lexicon's lay words where it has them."""
    if topic.subject == "observation":
        return f"Do you know your {topic.display}?"
    entry = lexicon.conditions.get(topic.topic)
    if entry is None:
        return f"Have you ever been told you have {normalise_display(topic.display)}?"
    keyword = next((kw for kw in entry.keywords if keyword_score([kw], entry.symptoms)), entry.keywords[0])
    return f"Have you had any problems with your {keyword}?"


def offline_teacher_reply(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """The pair as the teacher prompt asks for it: a JSON object with the question and the answer."""
    missing = sorted({"record", "topic"} - set(params))
    if missing:
        raise OfflineBadRequest(f"threadmed/oracle-teacher needs the params {missing}")
    record = PatientRecord.model_validate_json(params["record"])
    topic = PairTopic.model_validate_json(params["topic"])
    question = teacher_question(topic, load_lexicon())
    answer = answer_question(record, question, disclosure=params.get("disclosure", "symptoms"))
    return json.dumps({"question": question, "answer": answer})


OFFLINE_TEACHER = register_offline_model("oracle-teacher", offline_teacher_reply)
