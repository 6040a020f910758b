"""What a patient's answer says about a question it was asked: it does not know, it denies, or it states.

The paper trains its oracle to answer "I'm not sure" when the record does not hold what it is asked (its
negative pairs; its transcripts' replies: "I'm not sure. I haven't really noticed anything like that.").
Rule, used by the training data's validation and by the patient bench alike:
- `not_known`: the answer says the patient does not know ("not sure", "don't know", "no idea", "can't say",
  "don't remember", "haven't noticed", "never been told", ...), wherever it says it;
- `denied`: otherwise, the answer starts by saying no ("No", "I don't have", "I have never", ...): it
  claims nothing, but the record's silence is no evidence of absence, so training data does not take it;
- `stated`: anything else, i.e. the answer tells something.
"""

import re
from typing import Literal

AnswerStance = Literal["not_known", "denied", "stated"]

_NOT_KNOWING = re.compile(
    r"\b(not (?:really )?sure|unsure|not certain|(?:don't|do not|doesn't|does not) (?:really )?know|no idea"
    r"|(?:can't|cannot|couldn't) (?:really )?(?:say|tell|remember|recall)"
    r"|(?:don't|do not) (?:really )?(?:remember|recall)|not that i (?:know|remember|recall)"
    r"|(?:haven't|have not) (?:really )?(?:noticed|been told|heard)|never been told|no one has told)\b",
    flags=re.IGNORECASE,
)
_DENIAL = re.compile(
    r"^\W*(?:no\b|nope\b|not really\b|i (?:don't|do not|haven't|have not|never|didn't|did not)\b)",
    flags=re.IGNORECASE,
)


def answer_stance(answer: str) -> AnswerStance:
    """Whether `answer` says the patient does not know, denies, or states something (module docstring)."""
    text = answer.replace("\u2019", "'")
    if _NOT_KNOWING.search(text):
        return "not_known"
    if _DENIAL.search(text):
        return "denied"
    return "stated"
