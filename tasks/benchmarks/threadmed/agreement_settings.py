"""Settings of the judge agreement (agreement.py), apart so that the command line reads its defaults without
importing the statistics."""

from pydantic import Field

from tasks.core.strict import StrictModel


class AgreementSettings(StrictModel):
    """How the intervals are computed."""

    # Fewer than the report's 10,000: each alpha resample is one call of the krippendorff package.
    n_resamples: int = Field(2_000, ge=100, description="Bootstrap resamples per interval (over items).")
    seed: int = Field(0, description="Seed of the bootstrap; each statistic derives its own stream from it.")
    level: float = Field(0.95, gt=0, lt=1, description="Confidence level of the percentile intervals.")
