"""The dry run: calls a run still has to make, their tokens and dollars, per model and role. Calls nothing.

The benchmark walks each job (its `estimate_job`), counting into one `CallEstimate` per model and role:
a call already in the ledger is `cached` and free; an unknown one counts its prompt tokens (cl100k,
tasks/core/tokens.py) and the role's `estimated_reply_tokens`.
"""

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from tasks.evals.config import ModelSpec
from tasks.evals.plan import Job, RunPlan
from tasks.llm.call import token_costs
from tasks.llm.ledger import CallLedger
from tasks.llm.request import CallOptions


class CallEstimate(BaseModel):
    """What --dry-run expects one model in one role to cost; calls already in the ledger are free."""

    model: str
    role: str
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0


class EstimateTally:
    """The estimates of a run being added up, one per (model name, role), each with what prices it."""

    def __init__(self) -> None:
        self._estimates: dict[tuple[str, str], CallEstimate] = {}
        self._pricing: dict[tuple[str, str], tuple[ModelSpec, CallOptions]] = {}

    def of(self, spec: ModelSpec, options: CallOptions, role: str) -> CallEstimate:
        """The estimate to count `spec`'s calls in `role` into."""
        key = (spec.name, role)
        self._pricing[key] = (spec, options)
        return self._estimates.setdefault(key, CallEstimate(model=spec.name, role=role))

    def priced(self) -> list[CallEstimate]:
        """Every estimate in first-counted order, with its dollars (None when the model has no price)."""
        for key, estimate in self._estimates.items():
            spec, options = self._pricing[key]
            model_for_price = options.price_model or spec.model
            costs = token_costs(
                model_for_price, estimate.prompt_tokens, estimate.completion_tokens, options.prices
            )
            estimate.cost_usd = None if costs is None else sum(costs)
        return list(self._estimates.values())


JobEstimator = Callable[[Job[Any, Any], CallLedger, EstimateTally], None]


def estimate_plan(plan: RunPlan[Any, Any], estimate_job: JobEstimator) -> list[CallEstimate]:
    """Calls still to make in `plan`, their tokens and dollars, per model and role; reads only the ledger."""
    ledger = CallLedger(plan.ledger_dir)
    tally = EstimateTally()
    for job in plan.jobs:
        estimate_job(job, ledger, tally)
    return tally.priced()
