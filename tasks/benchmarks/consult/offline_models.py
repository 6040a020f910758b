"""The consultation benchmark's offline models, registered with the call layer when this module is imported.

- `threadmed/consult-patient`: the simulator as a patient model. Params: `case` (the ConsultCase as JSON),
  optional `per_turn` and `threshold`. The agent's questions are the `user` messages; the simulator is
  rebuilt from the earlier ones (it is deterministic) and answers the last. No question yet: the opening.
- `threadmed/consult-judge`: the demo's FQR judge, an offline stand-in and not a clinical judgement (the
  report names it as such). It reads the tagged blocks of the FQR rubric (prompts/judge_fqr_v1.txt) and
  calls an answer correct when it is non-empty and addresses the follow-up: it gives a revised plan, or
  repeats a word the patient used, or (to a question, not a new fact such as an allergy) gives dosing,
  safety-net or side-effect content with words of the regimen advice. Deterministic.
"""

import json
import re
from typing import Any

from pydantic import ValidationError

from tasks.benchmarks.consult.case import ConsultCase
from tasks.benchmarks.consult.simulator import replay
from tasks.llm.offline import OfflineBadRequest, register_offline_model


def patient_reply(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    if "case" not in params:
        raise OfflineBadRequest("threadmed/consult-patient needs the param case (the ConsultCase as JSON)")
    try:
        case = ConsultCase.model_validate_json(params["case"])
    except ValidationError as error:
        raise OfflineBadRequest(
            f"threadmed/consult-patient: the case param is not a ConsultCase: {error}"
        ) from None
    questions = [str(m.get("content") or "") for m in messages if m["role"] == "user"]
    if not questions:
        return case.opening
    per_turn = params.get("per_turn")
    threshold = params.get("threshold")
    replies = replay(
        case,
        questions,
        threshold=None if threshold is None else float(threshold),
        per_turn=None if per_turn is None else int(per_turn),
    )
    return replies[-1].text


CONSULT_PATIENT = register_offline_model("consult-patient", patient_reply)


_TAG = re.compile(r"<(\w+)>\n(.*?)\n</\1>", re.DOTALL)
_WORD = re.compile(r"[a-z]{5,}")
# Dose and timing, when to seek help, what to watch for: the content a follow-up question asks for.
_CARE_CONTENT = re.compile(
    r"\d|times a day|daily|dose|worse|seek|review|urgent|doctor|side effect|stop|stomach|rash",
    re.IGNORECASE,
)
# A follow-up stating a new fact the plan must answer to (cases/generate.py words them so).
_NEW_FACT = re.compile(r"allergic|pregnant|swallow|afford|already take", re.IGNORECASE)
_COMMON = frozenset(
    {"about", "after", "again", "could", "should", "there", "these", "thing", "which", "would"}
)


def judge_reply(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    blocks = dict(_TAG.findall(str(messages[-1].get("content") or "")) if messages else [])
    if not {"follow_up", "answer", "regimen_advice"} <= blocks.keys():
        raise OfflineBadRequest(
            "threadmed/consult-judge reads the tagged blocks of the FQR rubric (prompts/judge_fqr_v1.txt)"
        )
    answer = blocks["answer"].strip()
    answer_words = set(_WORD.findall(answer.lower())) - _COMMON
    echoed = sorted(answer_words & set(_WORD.findall(blocks["follow_up"].lower())))
    advised = sorted(answer_words & set(_WORD.findall(blocks["regimen_advice"].lower())))
    if not answer:
        verdict = (False, "The answer is empty.")
    elif '"drug"' in answer:
        verdict = (True, "The answer gives a revised plan.")
    elif echoed:
        verdict = (True, f"The answer addresses the follow-up ({echoed[0]}).")
    elif advised and _CARE_CONTENT.search(answer) and not _NEW_FACT.search(blocks["follow_up"]):
        verdict = (True, f"The answer gives care advice in line with the regimen ({advised[0]}).")
    else:
        verdict = (False, "The answer does not address the follow-up.")
    return json.dumps({"correct": verdict[0], "reason": verdict[1]})


CONSULT_JUDGE = register_offline_model("consult-judge", judge_reply)
