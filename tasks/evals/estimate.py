"""The dry run: calls a run still has to make, their tokens and dollars, per model and role. Calls nothing.

The benchmark walks each job (its `estimate_job`), counting into one `CallEstimate` per model and role:
a call already in the ledger is `cached` and free; an unknown one counts its prompt tokens (cl100k,
tasks/core/tokens.py) and the role's `estimated_reply_tokens`. A role in batch mode is priced at batch
prices, beside what its calls would cost one by one (the saving the dry run shows).
"""

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from tasks.evals.config import ModelSpec
from tasks.evals.plan import Job, RunPlan
from tasks.llm.call import batch_token_costs, token_costs
from tasks.llm.ledger import CallLedger
from tasks.llm.request import CallMode, CallOptions


class CallEstimate(BaseModel):
    """What --dry-run expects one model in one role to cost; calls already in the ledger are free."""

    model: str
    role: str
    calls: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0
    mode: CallMode = "single"
    single_cost_usd: float | None = Field(0.0, description="What the same calls cost made one by one.")

    @property
    def batch_saving_usd(self) -> float:
        """What batch mode saves on these calls against single calls (0 in single mode or unpriced)."""
        if self.cost_usd is None or self.single_cost_usd is None:
            return 0.0
        return self.single_cost_usd - self.cost_usd


class EstimateTally:
    """The estimates of a run being added up, one per (model name, role), each with what prices it."""

    def __init__(self) -> None:
        self._estimates: dict[tuple[str, str], CallEstimate] = {}
        self._pricing: dict[tuple[str, str], tuple[ModelSpec, CallOptions]] = {}

    def of(self, spec: ModelSpec, options: CallOptions, role: str) -> CallEstimate:
        """The estimate to count `spec`'s calls in `role` into."""
        key = (spec.name, role)
        self._pricing[key] = (spec, options)
        return self._estimates.setdefault(key, CallEstimate(model=spec.name, role=role, mode=options.mode))

    def priced(self) -> list[CallEstimate]:
        """Every estimate in first-counted order, with its dollars (None when the model has no price)."""
        for key, estimate in self._estimates.items():
            spec, options = self._pricing[key]
            tokens = (options.price_model or spec.model, estimate.prompt_tokens, estimate.completion_tokens)
            single = token_costs(*tokens, options.prices)
            estimate.single_cost_usd = None if single is None else sum(single)
            if options.mode == "batch":
                batch = batch_token_costs(*tokens, options.prices, options.batch_discount)
                estimate.cost_usd = None if batch is None else sum(batch)
            else:
                estimate.cost_usd = estimate.single_cost_usd
        return list(self._estimates.values())


JobEstimator = Callable[[Job[Any, Any], CallLedger, EstimateTally], None]


def estimate_plan(plan: RunPlan[Any, Any], estimate_job: JobEstimator) -> list[CallEstimate]:
    """Calls still to make in `plan`, their tokens and dollars, per model and role; reads only the ledger."""
    ledger = CallLedger(plan.ledger_dir)
    tally = EstimateTally()
    for job in plan.jobs:
        estimate_job(job, ledger, tally)
    return tally.priced()
