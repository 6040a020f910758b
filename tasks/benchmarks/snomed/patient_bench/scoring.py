"""Rules that score one patient answer, and the per-patient metrics of the bench. Pure.

Per answer (documented rules; the judge grades only what these cannot, judge.py):
- stance: not_known, denied, stated or mixed (oracle/answers.py, shared with the training data's
  validation). A mixed answer (it says both, "No, but I get a rash") decides neither disclosure nor
  hallucination: both verdicts are None, and the answer is counted apart (`mixed`);
- disclosed (positive questions): the answer states something (not "not sure", no denial) and mentions the
  record's lay fact: a condition by a keyword of its lay lexicon entry, or by its name when the lexicon has
  no words for it; an observation by its value (the number, rounded as the offline patient rounds it,
  within 0.05) or, for a text value such as the smoking status, by a keyword of its kind;
- hallucinated (negative questions): the answer states something instead of not knowing or denying;
- leaked: the answer names a condition of the record, or the condition a negative question asks about
  (leak.find_leaks, the interviews' check); a defect under `symptoms` disclosure only;
- lay: the answer holds no term of the versioned clinical term list (data/clinical_terms_v<N>.txt), read as
  the leak check reads a reply;
- unread_letters: letters these word rules cannot read (leak.unread_letters: a script other than Latin).
  An answer holding them that names nothing is neither leak-free nor lay: both verdicts are None, and the
  answer is counted apart (`unread`), never as a clean one;
- words: the answer's length in words;
- consistent: every asking of the question got the same stance, disclosure and hallucination verdicts.
"""

import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from tasks.benchmarks.snomed.case import PatientRecord
from tasks.benchmarks.snomed.leak import find_leaks, reading_text, unread_letters, word_readings
from tasks.benchmarks.snomed.oracle.answers import answer_stance
from tasks.benchmarks.snomed.oracle.topics import observation_kinds
from tasks.benchmarks.snomed.patient import Disclosure, Lexicon, keyword_score, leak_names_by_code
from tasks.benchmarks.snomed.patient_bench.questions import BenchQuestion
from tasks.evals.verdicts import JUDGE_CUT

CLINICAL_TERMS_VERSION = 1
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
VALUE_TOLERANCE = 0.05


@cache
def load_clinical_terms(version: int = CLINICAL_TERMS_VERSION) -> tuple[str, ...]:
    """The clinical term list shipped with the package: one lower-case term a line, '#' comments."""
    path = (
        resources.files("tasks.benchmarks.snomed.patient_bench") / "data" / f"clinical_terms_v{version}.txt"
    )
    lines = path.read_text(encoding="utf-8").splitlines()
    return tuple(line.strip().lower() for line in lines if line.strip() and not line.startswith("#"))


def clinical_terms_in(answer: str, terms: Sequence[str]) -> list[str]:
    """The list's terms the answer uses, each as a whole word or phrase (plural 's' included), read as the
    leak check reads a reply (leak.reading_text, a word broken by a hyphen also joined): a term written in
    full-width letters, with a soft hyphen or zero-width space inside, or as "frac-ture" is used too."""
    readings = word_readings(reading_text(answer))
    return [
        term for term in terms if any(re.search(rf"\b{re.escape(term)}s?\b", reading) for reading in readings)
    ]


def _observation_values(record: PatientRecord, kind: str, lexicon: Lexicon) -> list[str]:
    values = {observation.code: observation.value for observation in record.observations}
    slots = lexicon.observations[kind].slots
    return [next(values[code] for code in slot if code in values) for slot in slots]


def mentions_fact(question: BenchQuestion, record: PatientRecord, answer: str, lexicon: Lexicon) -> bool:
    """Whether the answer mentions the record's lay fact the positive question is about (module docstring)."""
    if question.subject == "condition":
        entry = lexicon.conditions.get(question.topic)
        if entry is not None:
            return keyword_score(entry.keywords, answer) > 0
        return bool(find_leaks(answer, [question.topic], [question.display]))
    if question.topic not in observation_kinds(record, lexicon):
        return False
    value = _observation_values(record, question.topic, lexicon)[0]
    if not _NUMBER.fullmatch(value.strip()):
        return keyword_score(lexicon.observations[question.topic].keywords, answer) > 0
    numbers = [float(number) for number in _NUMBER.findall(answer)]
    return any(abs(number - round(float(value), 1)) <= VALUE_TOLERANCE for number in numbers)


def score_answer(
    question: BenchQuestion, record: PatientRecord, answer: str, disclosure: Disclosure, lexicon: Lexicon
) -> dict[str, Any]:
    """The rule verdicts on one answer (module docstring); a verdict that does not apply is None."""
    stance = answer_stance(answer)
    codes = {c.code: c.display for c in record.conditions}
    if question.kind == "negative" and question.subject == "condition":
        codes.setdefault(question.topic, question.display)
    leaks = find_leaks(answer, list(codes), list(codes.values()), leak_names_by_code(lexicon))
    terms = clinical_terms_in(answer, load_clinical_terms())
    positive = question.kind == "positive"
    unread = unread_letters(answer)
    return {
        "stance": stance,
        "disclosed": stance == "stated" and mentions_fact(question, record, answer, lexicon)
        if positive and stance != "mixed"
        else None,
        "hallucinated": None if positive or stance == "mixed" else stance == "stated",
        "leaked": (True if leaks else None if unread else False) if disclosure == "symptoms" else None,
        "leaked_codes": [hit.code for hit in leaks],
        "lay": False if terms else None if unread else True,
        "clinical_terms": terms,
        "unread_letters": unread,
        "words": len(answer.split()),
    }


def consistent(verdicts: Sequence[dict[str, Any]]) -> bool | None:
    """Whether every asking got the same verdicts; None when fewer than two askings were answered."""
    if len(verdicts) < 2:
        return None
    keys = ("stance", "disclosed", "hallucinated")
    return all(tuple(v[k] for k in keys) == tuple(verdicts[0][k] for k in keys) for v in verdicts)


def _share(values: Sequence[Any]) -> float | None:
    present = [bool(value) for value in values if value is not None]
    return sum(present) / len(present) if present else None


METRICS = ("disclosure", "hallucination", "leak", "lay_language", "mean_words", "consistency", "faithful")


def patient_metrics(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One patient's metrics over its PATIENT_SCORES rows (answered askings; consistency once a question)."""
    answered = [row for row in rows if row["status"] == "ok"]
    words = [row["words"] for row in answered]
    first_askings = [row for row in answered if row["epoch"] == 0]
    return {
        "disclosure": _share([row["disclosed"] for row in answered]),
        "hallucination": _share([row["hallucinated"] for row in answered]),
        "leak": _share([row["leaked"] for row in answered]),
        "lay_language": _share([row["lay"] for row in answered]),
        "mean_words": sum(words) / len(words) if words else None,
        "consistency": _share([row["consistent"] for row in first_askings]),
        "faithful": _share([row["faithful"] for row in answered]),
        "answers": len(answered),
        # Answers the word rules could not read whole: the leak and lay-language shares leave them out.
        "unread": sum(bool(row["unread_letters"]) for row in answered),
        # Answers that say both (a denial or not knowing, and a claim): disclosure and hallucination leave
        # them out.
        "mixed": sum(row["stance"] == "mixed" for row in answered),
        "failed": sum(row["status"] == "failed" for row in rows),
        "positive_answers": sum(row["kind"] == "positive" for row in answered),
        "negative_answers": sum(row["kind"] == "negative" for row in answered),
        "judged": sum(row["faithful"] is not None for row in answered),
        # Why the others have no grade: the faithful share is over `judged`, never over `answers`.
        "n_judge_unparseable": sum(row.get("judge_status") == "unparseable" for row in answered),
        "n_judge_failed": sum(row.get("judge_status") == "failed" for row in answered),
        "n_judge_cut": sum(row.get("judge_status") == JUDGE_CUT for row in answered),
    }
