"""SNOMED patient leaks per prompt form (`lay`, `named`) over the 500 reference cases, with the leak check of
every run (a gold display, a close variant or a code in a patient reply).

No LLM patient runs offline, so three measurements stand in, each saying only what it measures:
- prompt exposure: the LLM patient's system prompt as `build_plan` renders it: the record's condition codes
  it names. An LLM patient can only repeat what it is shown (or guess).
- the offline patient (`threadmed/patient`) interviewed by the checklist clinician through the interview
  loop: it answers from the structured record and reads no prompt, so both forms give one rate by
  construction. It checks the simulator the demo and tests use, not an LLM.
- a prompt-copying patient, same interviews: it picks the conditions a question is about as the offline
  patient does (the lexicon's keywords) and replies with their lines of its system prompt, verbatim. It is
  the worst case of an LLM patient that repeats its notes; a real one, told not to name diagnoses, leaks
  between 0 and this bound.
"""

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.cases.reference import read_reference_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.benchmarks.snomed.clinicians import checklist_reply
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.benchmarks.snomed.interview import Messages, Reply, Role, run_interview
from tasks.benchmarks.snomed.leak import find_leaks, unread_letters
from tasks.benchmarks.snomed.patient import (
    MAX_ANSWERED_ITEMS,
    NOT_SURE,
    Lexicon,
    keyword_score,
    leak_names_by_code,
    load_lexicon,
    offline_patient_reply,
)
from tasks.benchmarks.snomed.plan import build_plan
from tasks.benchmarks.snomed.solver import InterviewJob
from tasks.evals.config import EvaluationSettings, ModelSpec
from tests.perf.bench_snomed_cases import REFERENCE_JSON
from tests.snomed_fixtures import write_case_set

FORMS = ("lay", "named")
PatientReply = Callable[[InterviewJob, Messages], str]


def copying_reply(job: InterviewJob, messages: Messages, lexicon: Lexicon) -> str:
    """The system prompt's lines about the conditions the last question is about, label removed."""
    system, question = messages[0]["content"], messages[-1]["content"]
    scored = []
    for rank, condition in enumerate(job.case.conditions):
        entry = lexicon.conditions.get(condition.code)
        score = keyword_score(entry.keywords, question) if entry else 0
        if entry is None or not score:
            continue
        # The condition's line in either form: its name, or its lay sentence (with any suffix).
        starts = (f"Condition: {condition.display}", f"Health: {entry.symptoms[:-1]}")
        line = next((line for line in system.splitlines() if line.startswith(starts)), None)
        if line is not None:
            scored.append((-score, rank, line.split(": ", 1)[1]))
    lines = list(dict.fromkeys(line for _, _, line in sorted(scored)))[:MAX_ANSWERED_ITEMS]
    return " ".join(lines) if lines else NOT_SURE


def interview_leaks(jobs: Sequence[InterviewJob], patient: PatientReply) -> dict[str, Any]:
    """Interview every job's patient with the checklist clinician; count replies, those that leak and those
    the leak check could not read whole (naming nothing it read: unverified)."""
    replies = leaking = unverified = cases_leaking = 0
    for job in jobs:

        def ask(role: Role, messages: Messages, job: InterviewJob = job) -> Reply:
            text = checklist_reply(messages) if role == "clinician" else patient(job, messages)
            return Reply(text, "")

        interview = run_interview(job.case, job.prompts, ask, job.settings)
        answers = [t for t in interview.turns if t.role == "patient"][1:]  # turn 0 is the scripted opening
        replies += len(answers)
        leaking += sum(bool(t.leaked) for t in answers)
        unverified += sum(not t.leaked and bool(unread_letters(t.text)) for t in answers)
        cases_leaking += any(t.leaked for t in answers)
    return {"replies": replies, "leaking_replies": leaking, "leak_rate": leaking / replies,
            "unverified_replies": unverified, "cases_leaking": cases_leaking}  # fmt: skip


def prompt_exposure(jobs: Sequence[InterviewJob], lexicon: Lexicon) -> dict[str, Any]:
    """The record condition codes (gold or not) that each patient prompt names, over all jobs."""
    extra_names = leak_names_by_code(lexicon)
    named = total = 0
    for job in jobs:
        codes = {c.code: c.display for c in job.case.conditions}
        hits = find_leaks(job.prompts.patient_system, list(codes), list(codes.values()), extra_names)
        named += len({hit.code for hit in hits})
        total += len(codes)
    return {"condition_codes": total, "named_in_prompt": named}


def form_jobs(cases: Sequence[Case], cases_dir: Path, run_dir: Path, form: str) -> list[InterviewJob]:
    config = SnomedConfig(models=[ModelSpec(model="threadmed/checklist")], patient_prompt_form=form)
    settings = EvaluationSettings[SnomedConfig](dataset_dir=cases_dir, run_dir=run_dir, config=config)
    jobs = [job.solve for job in build_plan(settings).jobs]
    assert len(jobs) == len(cases)
    return jobs


def main(out_dir: Path) -> dict[str, Any]:
    cases = read_reference_cases(REFERENCE_JSON, CaseSetSettings()).cases
    cases_dir = out_dir / "cases"
    if not cases_dir.exists():
        write_case_set(cases_dir, cases)
    lexicon = load_lexicon()
    results: dict[str, Any] = {"cases": len(cases), "gold_codes": sum(len(c.gold_codes) for c in cases)}
    for form in FORMS:
        jobs = form_jobs(cases, cases_dir, out_dir / "run", form)
        results[form] = {
            "prompt": prompt_exposure(jobs, lexicon),
            "offline_patient": interview_leaks(
                jobs, lambda job, messages: offline_patient_reply(messages, job.patient.params)
            ),
            "copying_patient": interview_leaks(
                jobs, lambda job, messages: copying_reply(job, messages, lexicon)
            ),
        }
    return results


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = [f"{results['cases']} reference cases, {results['gold_codes']} gold codes, checklist clinician"]
    for form in FORMS:
        prompt, offline = results[form]["prompt"], results[form]["offline_patient"]
        copying = results[form]["copying_patient"]
        lines.append(
            f"{form}: prompt names {prompt['named_in_prompt']} of {prompt['condition_codes']} codes; "
            f"leaking replies: offline patient {offline['leaking_replies']}/{offline['replies']} "
            f"({offline['leak_rate']:.1%}), prompt-copying patient {copying['leaking_replies']}/"
            f"{copying['replies']} ({copying['leak_rate']:.1%}, {copying['cases_leaking']} cases); "
            f"unverified: {offline['unverified_replies']} and {copying['unverified_replies']}"
        )
    return lines
