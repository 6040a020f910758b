"""The consultation benchmark's offline models, registered with the call layer when this module is imported.

- `threadmed/consult-patient`: the simulator as a patient model. Params: `case` (the ConsultCase as JSON),
  optional `per_turn` and `threshold`. The agent's questions are the `user` messages; the simulator is
  rebuilt from the earlier ones (it is deterministic) and answers the last. No question yet: the opening.
"""

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
