"""What a patient's answer says about a question it was asked: it does not know, denies, states, or says both.

The paper trains its oracle to answer "I'm not sure" when the record does not hold what it is asked (its
negative pairs; its transcripts' replies: "I'm not sure. I haven't really noticed anything like that.").
Rule, used by the training data's validation and by the patient bench alike:
- `mixed`: the answer says both: it starts by saying yes ("Yes, a rash every day, not sure why"), or it
  goes on with "but" and something other than not knowing after saying it does not know ("Not sure, but I
  get headaches") or after saying no ("No, but I get a rash"; "No, but I don't know" is `not_known`).
  Neither a claim nor its absence is read from it: the training data takes no such answer, and the bench
  leaves it out of the shares its stance decides and counts it;
- `not_known`: otherwise, the answer says the patient does not know ("not sure", "don't know", "no idea",
  "can't say", "don't remember", "haven't noticed", "never been told", ...), wherever it says it;
- `denied`: otherwise, the answer starts by saying no ("No", "I don't have", "I have never", ...): it
  claims nothing, but the record's silence is no evidence of absence, so training data does not take it;
- `stated`: anything else, i.e. the answer tells something.
"""

import re
from typing import Literal

AnswerStance = Literal["mixed", "not_known", "denied", "stated"]
# The rule's version, in a run's manifest: 2 reads `mixed` answers (version 1 read them by their first part).
STANCE_RULES_VERSION = 2

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


_AFFIRMATION = re.compile(r"^\W*(?:yes|yeah|yep|yup)\b", flags=re.IGNORECASE)
_BUT = re.compile(r"\bbut\b", flags=re.IGNORECASE)


def _goes_on_to_tell(text: str, start: int) -> bool:
    """Whether `text` goes on after `start` with "but" and something other than not knowing."""
    but = _BUT.search(text, start)
    return but is not None and not _NOT_KNOWING.search(text, but.end())


def answer_stance(answer: str) -> AnswerStance:
    """Whether `answer` says the patient does not know, denies, states something, or says both (module
    docstring)."""
    text = answer.replace("\u2019", "'")
    not_knowing, denial = _NOT_KNOWING.search(text), _DENIAL.search(text)
    if (not_knowing and _AFFIRMATION.search(text)) or any(
        said and _goes_on_to_tell(text, said.end()) for said in (not_knowing, denial)
    ):
        return "mixed"
    if not_knowing:
        return "not_known"
    if denial:
        return "denied"
    return "stated"
