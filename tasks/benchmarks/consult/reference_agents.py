"""The scripted reference agents, registered as offline models of the call layer when this is imported.

- `threadmed/consult-silent`: asks nothing, says it is ready at once (the floor of history taking);
- `threadmed/consult-markov`: asks the mined policy's greedy template sequence (the experts' habits);
- `threadmed/consult-exhaustive`: asks every template in catalogue order until the question limit.
Each gives a differential built from what the patient said, then a plan and answers to the follow-ups:
silent and markov prescribe the top diagnosis's first first-line option without looking at the profile and
never revise; exhaustive prescribes what the critic passes and revises for each new constraint
(reference_logic.py, `agent_reply`). Param `max_questions` (default 12) bounds the markov agent's questions.
"""

from functools import cache
from typing import Any

from tasks.benchmarks.consult.inquiry.policy import load_policy
from tasks.benchmarks.consult.inquiry.templates import load_catalogue
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.reference_logic import AgentKind, agent_reply
from tasks.llm.offline import register_offline_model


@cache
def _resources() -> tuple[Any, Any, Any]:
    return load_kb(), load_policy(), load_catalogue()


def _agent(kind: AgentKind) -> Any:
    def reply(messages: list[dict[str, Any]], params: dict[str, Any]) -> str:
        kb, policy, catalogue = _resources()
        return agent_reply(
            kind, messages, kb, policy, catalogue, max_questions=int(params.get("max_questions", 12))
        )

    return reply


SILENT = register_offline_model("consult-silent", _agent("silent"))
MARKOV = register_offline_model("consult-markov", _agent("markov"))
EXHAUSTIVE = register_offline_model("consult-exhaustive", _agent("exhaustive"))
REFERENCE_AGENTS = (SILENT, MARKOV, EXHAUSTIVE)
