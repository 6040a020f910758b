"""Settings models: deployment parameters -> these models in flow signatures -> explicit task arguments."""

from datetime import date
from typing import Any

from pydantic import Field, model_validator

from tasks.core.strict import StrictModel
from tasks.data.reddit.pseudonym_salt import SALT_VARIABLE


class BuildSettings(StrictModel):
    """Every rule threshold of the dataset build (shared/spec/dataset.md); the defaults are the paper's."""

    subreddit: str = Field("AskDocs", description="Subreddit to keep, compared case-insensitively.")
    start: date = Field(date(2015, 1, 1), description="First day of the post window (inclusive, UTC).")
    end: date = Field(date(2023, 7, 1), description="End of the post window (exclusive, UTC).")
    answer_roles: list[str] = Field(["physician"], description="Flair roles whose comments are answers.")
    seed: int = Field(0, description="Seed of the deterministic OP-grouped split assignment.")
    min_words: int = Field(5, description="Posts and comments with fewer cleaned words are dropped.")
    min_questions: int = Field(3, description="A branch needs this many questions (post included).")
    min_answered_pairs: int = Field(3, description="An answered thread needs this many QA pairs.")
    max_removed_markers: int = Field(
        1, description="An answer with more [removed]/[deleted] markers is broken."
    )
    min_clean_char_share: float = Field(
        0.6,
        description="An answer with a smaller share of letters, digits "
        "and ordinary punctuation among its non-space characters is garbled.",
    )
    train_share: float = Field(0.8, description="Share of OPs assigned to train.")
    val_share: float = Field(0.1, description="Share of OPs assigned to val; the rest is test.")
    keep_truncated: bool = Field(
        False,
        description="Keep the records read before a truncated zstd stream instead of failing the build.",
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_salt(cls, data: Any) -> Any:
        # Settings are stored and published; the salt is a secret (tasks/data/reddit/pseudonym_salt.py).
        if isinstance(data, dict) and "salt" in data:
            raise ValueError(f"the pseudonym salt is a secret, not a setting: set {SALT_VARIABLE} instead")
        return data

    @model_validator(mode="after")
    def _check(self) -> "BuildSettings":
        if self.start >= self.end:
            raise ValueError(f"start ({self.start}) must be before end ({self.end})")
        if not 0 < self.train_share + self.val_share < 1:
            raise ValueError("train_share + val_share must be between 0 and 1")
        if not self.answer_roles:
            raise ValueError("answer_roles must name at least one role")
        return self


class ReportSettings(StrictModel):
    """How intervals are computed; the defaults are evaluation.md's."""

    n_resamples: int = Field(10_000, ge=100, description="Bootstrap resamples per interval.")
    seed: int = Field(0, description="Seed of the bootstrap; each statistic derives its own stream from it.")
    level: float = Field(0.95, gt=0, lt=1, description="Confidence level of the percentile intervals.")
    clustered: bool = Field(
        False, description="Resample whole conversations for every interval, not only conversation metrics."
    )
