"""The SNOMED benchmark's offline models, registered with the call layer when this module is imported.

- `threadmed/prevalence`: a clinician that asks nothing and names the k most frequent gold codes of the
  training split (params: `prevalence`, the table as [[code, count], ...], and `k`).
- `threadmed/checklist`: a clinician that asks a fixed list of lay questions, then maps the answers to
  codes with the offline patient's lexicon.
- `threadmed/patient`: the offline deterministic patient (params: `record`, its `PatientRecord` as JSON,
  no gold codes, and `disclosure`).
"""

from typing import Any

from tasks.benchmarks.snomed.clinicians import DEFAULT_K, checklist_reply, prevalence_reply
from tasks.benchmarks.snomed.patient import offline_patient_reply
from tasks.llm.offline import OfflineBadRequest, register_offline_model


def _prevalence(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    if "prevalence" not in params:
        raise OfflineBadRequest(
            "threadmed/prevalence needs the param prevalence (the training split's table)"
        )
    return prevalence_reply(messages, params["prevalence"], int(params.get("k", DEFAULT_K)))


def _checklist(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    return checklist_reply(messages)


def _patient(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
    if "record" not in params:
        raise OfflineBadRequest("threadmed/patient needs the param record (the patient record as JSON)")
    return offline_patient_reply(messages, params)


PREVALENCE = register_offline_model("prevalence", _prevalence)
CHECKLIST = register_offline_model("checklist", _checklist)
PATIENT = register_offline_model("patient", _patient)
