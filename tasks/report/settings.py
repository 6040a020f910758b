"""The bootstrap's defaults and `threadmed compare`'s settings, in a module of their own: the command line
shows them in its help without importing scipy (tasks/report/stats.py), a second of every command's start."""

from pydantic import Field

from tasks.core.strict import StrictModel

N_RESAMPLES = 10_000
LEVEL = 0.95


class CompareSettings(StrictModel):
    """How the paired intervals are drawn: the same settings give the same intervals."""

    seed: int = Field(0, description="Bootstrap seed.")
    n_resamples: int = Field(N_RESAMPLES, ge=100, description="Bootstrap resamples per interval.")
    level: float = Field(LEVEL, gt=0.5, lt=1, description="Confidence level of the intervals.")
