"""The two offline clinicians, baselines that need no provider: pure functions from the messages to a reply.

`prevalence` asks nothing and names the k most frequent gold codes of the training split. `checklist` asks
a fixed list of lay questions, one per turn, then reads the patient's answers back to codes with the
offline patient's lexicon. Both read only the message list (and their parameters), as an offline litellm
model must.
"""

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.codes import format_final_answer
from tasks.benchmarks.snomed.patient import Lexicon, load_lexicon

Message = Mapping[str, Any]
PrevalenceTable = Sequence[Sequence[Any]]  # [(code, count), ...], most frequent first; JSON gives lists
DEFAULT_K = 3
_ASKS_FOR_FINAL_ANSWER = re.compile(r"final\s*answer", re.IGNORECASE)
DEFAULT_CHECKLIST_QUESTIONS = (
    "Have you had trouble with your nose or sinuses, like congestion or face pain?",
    "Have you had a cough or any chest trouble?",
    "Have you had a sore throat or trouble swallowing?",
    "Has anyone said your blood sugar was high, or are you often thirsty?",
    "Do you often feel tired or dizzy?",
    "Has your blood pressure ever been high?",
    "Have you ever been pregnant, or lost a baby?",
    "Any problems with your ears or your hearing?",
    "Has a blood test shown high cholesterol or blood fats?",
    "Have you hurt or broken your ankle, wrist or foot?",
    "Do you have stiff or aching joints, like your knees?",
    "Have you had covid or a fever recently?",
    "Have you ever had a fit, or a knock to the head?",
    "Any problems with your heart, like a racing or fluttering heartbeat?",
    "Have you had any operations or a stay in hospital?",
    "Does it burn when you pee?",
    "Have you ever had a camera test of your bowel?",
)


def prevalence_table(cases: Sequence[Case], split: str = "train") -> tuple[tuple[str, int], ...]:
    """Gold codes of the `split` cases with how many cases have each, most frequent first, ties by code."""
    counts = Counter(code for case in cases if case.split == split for code in set(case.gold_codes))
    return tuple(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def prevalence_reply(messages: Sequence[Message], table: PrevalenceTable, k: int = DEFAULT_K) -> str:
    """The final answer at once, whatever the conversation: the `k` first codes of `table`."""
    return format_final_answer(str(row[0]) for row in table[:k])


def _text(message: Message) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def patient_answers(messages: Sequence[Message]) -> list[str]:
    """The user turns that answer a clinician turn (an opening user turn answers nothing)."""
    return [
        _text(message)
        for previous, message in pairwise(messages)
        if message.get("role") == "user" and previous.get("role") == "assistant"
    ]


def codes_from_answers(answers: Sequence[str], lexicon: Lexicon) -> tuple[str, ...]:
    """Condition codes whose lexicon sentence appears in an answer, in order of appearance, once each."""
    found = []
    for answer in answers:
        for code, entry in lexicon.conditions.items():
            if entry.symptoms[:-1] in answer:  # without its period: "..., but that has cleared up now."
                found.append(code)
    return tuple(dict.fromkeys(found))


def checklist_reply(
    messages: Sequence[Message],
    *,
    questions: Sequence[str] = DEFAULT_CHECKLIST_QUESTIONS,
    lexicon: Lexicon | None = None,
) -> str:
    """The next question of the checklist, or the final answer once all are asked or it is asked for."""
    asked = sum(message.get("role") == "assistant" for message in messages)
    last = messages[-1] if messages else {}
    # Only a user turn after a question: an opening turn may restate the answer format of the prompt.
    asked_to_answer = asked and last.get("role") == "user" and _ASKS_FOR_FINAL_ANSWER.search(_text(last))
    if asked < len(questions) and not asked_to_answer:
        return questions[asked]
    return format_final_answer(codes_from_answers(patient_answers(messages), lexicon or load_lexicon()))
