"""The SNOMED benchmark's run plan: every sampled case x clinician x epoch, interviewed then scored; its
dry run."""

from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.card import train_prevalence_table
from tasks.benchmarks.snomed.case import Case
from tasks.benchmarks.snomed.cases.loading import (
    case_set_fingerprint,
    check_case_set,
    load_sample,
    run_case_set_facts,
)
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.benchmarks.snomed.interview import (
    DISCLOSURE_RULES,
    InterviewPrompts,
    offline_patient_params,
    record_text,
)
from tasks.benchmarks.snomed.offline_models import PATIENT, PREVALENCE
from tasks.benchmarks.snomed.patient import lay_conditions, load_lexicon
from tasks.benchmarks.snomed.scorer import ScoreJob
from tasks.benchmarks.snomed.solver import InterviewJob, RoleSetup, interview_turns
from tasks.core.tokens import count_tokens
from tasks.evals.config import EvaluationSettings, ModelSpec
from tasks.evals.estimate import EstimateTally
from tasks.evals.plan import Job, RunPlan, run_id_for
from tasks.llm.ledger import CallLedger
from tasks.llm.prompts import PromptTemplate, load_prompt
from tasks.llm.request import ChatRequest

SnomedJob = Job[InterviewJob, ScoreJob]
SnomedPlan = RunPlan[InterviewJob, ScoreJob]
PREVALENCE_NOTE = (
    f"{PREVALENCE} names the most frequent gold codes of the train split: a floor, not a clinician."
)
HISTORY_NOTE = "Disclosure `history`: the patient may name diagnoses it has been told, so leaks are expected."


def build_plan(settings: EvaluationSettings[SnomedConfig]) -> SnomedPlan:
    """Draw the sample and pair it with every clinician and epoch. Reads the case set; calls nothing."""
    config, case_set_dir = settings.config, settings.dataset_dir
    check_case_set(case_set_dir)
    fingerprint = case_set_fingerprint(case_set_dir)
    run_id = run_id_for(config, fingerprint)
    clinician_prompt, patient_prompt = (load_prompt(path) for path in config.prompt_files())
    patient = config.resolved(config.patient)
    clinicians = [_with_prevalence(config.resolved(m), case_set_dir) for m in config.models]
    cases = load_sample(case_set_dir, config.sample)
    # Once per case, not per clinician and epoch: rendering a record checks every line for leaks.
    per_case = {
        case.case_id: (
            _patient_setup(patient, config, patient_prompt, case),
            _prompts(clinician_prompt, patient_prompt, config, case),
        )
        for case in cases
    }
    # Case-major order: the tasks running at any moment are spread over every clinician and provider.
    jobs = [
        SnomedJob(
            solve=InterviewJob(
                run_id=run_id,
                clinician=RoleSetup(
                    spec=clinician,
                    options=config.call_options(clinician),
                    prompt_version=clinician_prompt.version,
                ),
                patient=per_case[case.case_id][0],
                prompts=per_case[case.case_id][1],
                settings=config.interview(),
                case=case,
                epoch=epoch,
            ),
            score=ScoreJob(
                run_id=run_id,
                model=clinician.name,
                case_id=case.case_id,
                epoch=epoch,
                gold_codes=case.gold_codes,
                case_set_dir=case_set_dir,
            ),
        )
        for case in cases
        for epoch in range(config.epochs)
        for clinician in clinicians
    ]
    patient_prompt_facts = _patient_prompt_facts(config, patient_prompt, cases)
    notes = [PREVALENCE_NOTE] if any(m.model == PREVALENCE for m in clinicians) else []
    notes += [HISTORY_NOTE] if config.disclosure == "history" else []
    notes += _left_out_note(patient_prompt_facts) if patient.model != PATIENT else []
    return SnomedPlan(
        run_id=run_id,
        run_dir=settings.run_dir,
        dataset_dir=case_set_dir,
        dataset_fingerprint=fingerprint,
        jobs=jobs,
        prompts={p.version: p.sha256 for p in (clinician_prompt, patient_prompt)},
        manifest_facts={
            "sent": _sent_settings(clinicians, patient),
            "case_set": run_case_set_facts(case_set_dir),
            "cases": len(cases),
            "patient_prompt": patient_prompt_facts,
        },
        notes=notes,
    )


def _prompts(
    clinician: PromptTemplate, patient: PromptTemplate, config: SnomedConfig, case: Case
) -> InterviewPrompts:
    return InterviewPrompts(
        clinician_system=clinician.render("system"),
        opening=clinician.render("opening"),
        final=clinician.render("final"),
        reask=clinician.render("reask"),
        patient_system=patient.render(
            "system",
            disclosure_rule=DISCLOSURE_RULES[config.disclosure],
            record=record_text(case, config.patient_prompt_form, config.disclosure),
        ),
    )


def _patient_prompt_facts(config: SnomedConfig, prompt: PromptTemplate, cases: list[Case]) -> dict[str, Any]:
    """The LLM patient's prompt form and version, and how many condition codes of the sampled cases the lay
    form leaves out (no lay sentence in the lexicon, so none the patient could say under `symptoms`)."""
    lexicon = load_lexicon()
    left_out = 0
    if config.patient_prompt_form == "lay" and config.disclosure == "symptoms":
        left_out = sum(len(lay_conditions(case, "symptoms", lexicon).undescribed_codes) for case in cases)
    return {
        "form": config.patient_prompt_form,
        "version": prompt.version,
        "lexicon_version": lexicon.version,
        "condition_codes": sum(len({c.code for c in case.conditions}) for case in cases),
        "condition_codes_left_out": left_out,
    }


def _left_out_note(facts: dict[str, Any]) -> list[str]:
    if not facts["condition_codes_left_out"]:
        return []
    return [
        f"Patient prompt form lay: {facts['condition_codes_left_out']} of the sampled cases' "
        f"{facts['condition_codes']} condition codes have no lay sentence in lay lexicon "
        f"v{facts['lexicon_version']} and are not in the patient's prompt: it cannot describe them."
    ]


def _patient_setup(patient: ModelSpec, config: SnomedConfig, prompt: PromptTemplate, case: Case) -> RoleSetup:
    """The offline patient answers from the structured record, sent to it as request params."""
    params = offline_patient_params(case, config.disclosure) if patient.model == PATIENT else {}
    return RoleSetup(
        spec=patient, options=config.call_options(patient), prompt_version=prompt.version, params=params
    )


def _with_prevalence(spec: ModelSpec, case_set_dir: Path) -> ModelSpec:
    """The prevalence baseline predicts from the train split of the case set under evaluation."""
    if spec.model != PREVALENCE or "prevalence" in spec.params:
        return spec
    table = train_prevalence_table(case_set_dir)
    return spec.model_copy(update={"params": {**spec.params, "prevalence": [list(row) for row in table]}})


def _sent_settings(clinicians: list[ModelSpec], patient: ModelSpec) -> dict[str, Any]:
    """Model string, endpoint and params exactly as sent, per clinician and for the patient."""
    fields = {"model", "api_base"}

    # The prevalence table is data, not a setting: the manifest says only that it was sent.
    def sent(spec: ModelSpec) -> dict[str, Any]:
        params = {k: ("<train split table>" if k == "prevalence" else v) for k, v in spec.params.items()}
        return {**spec.model_dump(mode="json", include=fields), "params": params}

    return {
        "models": {spec.name: sent(spec) for spec in clinicians},
        "patient": {patient.name: sent(patient)},
    }


class _NotInLedger(Exception):
    """The walk reached a call that has not succeeded yet."""

    def __init__(self, role: str, request: ChatRequest) -> None:
        self.role, self.request = role, request


def estimate_job(job: SnomedJob, ledger: CallLedger, tally: EstimateTally) -> None:
    """Count one interview's calls still to make, at most: it is assumed to run to `max_turns`, re-asks
    included. Replayed from the ledger up to its first unknown call; later prompts grow by one assumed
    question and answer per turn."""
    interview = job.solve
    estimates = {
        role: tally.of(setup.spec, setup.options, role)
        for role, setup in (("clinician", interview.clinician), ("patient", interview.patient))
    }
    made = {"clinician": 0, "patient": 0}

    def replay(role: str, request: ChatRequest):
        record = ledger.find(request)
        if record is None:
            raise _NotInLedger(role, request)
        estimates[role].cached += 1
        made[role] += 1
        return record

    try:
        interview_turns(interview, replay)
        return
    except _NotInLedger as stop:
        prompt = sum(count_tokens(str(m["content"])) for m in stop.request.messages)
    settings = interview.settings
    remaining = {
        "clinician": settings.max_turns + 1 + settings.max_reasks - made["clinician"],
        "patient": settings.max_turns - made["patient"],
    }
    growth = interview.clinician.spec.assumed_reply_tokens + interview.patient.spec.assumed_reply_tokens
    for role, calls in remaining.items():
        estimate = estimates[role]
        estimate.calls += calls
        estimate.prompt_tokens += calls * prompt + growth * calls * (calls - 1) // 2
        estimate.completion_tokens += calls * interview.setup(role).spec.assumed_reply_tokens
