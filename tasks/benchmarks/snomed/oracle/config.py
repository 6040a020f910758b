"""oracle-data's run config: the teacher (the run's one model), pairs per case, the split, the seed."""

from pathlib import Path

from pydantic import Field, field_validator

from tasks.benchmarks.snomed.config import PROMPTS_DIR
from tasks.benchmarks.snomed.oracle.splits import DEFAULT_SPLIT
from tasks.benchmarks.snomed.patient import Disclosure
from tasks.evals.config import ModelSpec, RunConfig

TEACHER_PROMPT = PROMPTS_DIR / "oracle_teacher_v1.txt"
SPLITS = ("train", "validation", "test")


class OracleDataConfig(RunConfig):
    """`models` holds the teacher, alone. The paper's counts (5 positive, 2 negative pairs) by default."""

    positives_per_case: int = Field(5, ge=0, description="Pairs about facts the record holds, per case.")
    negatives_per_case: int = Field(2, ge=0, description="Pairs about conditions the record lacks, per case.")
    seed: int = Field(0, description="Seed of the topics drawn per case and of the split by patient.")
    disclosure: Disclosure = Field(
        "symptoms", description="symptoms: answers never name a diagnosis (checked); history: they may."
    )
    split: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_SPLIT), description="Share of patients per split."
    )
    teacher_prompt: Path | None = Field(None, description="Teacher prompt file; default oracle_teacher_v1.")

    @field_validator("models")
    @classmethod
    def _one_teacher(cls, models: list[ModelSpec]) -> list[ModelSpec]:
        if len(models) != 1:
            raise ValueError(f"oracle data has one teacher; {len(models)} models were given")
        return models

    @field_validator("split")
    @classmethod
    def _three_splits(cls, split: dict[str, float]) -> dict[str, float]:
        if tuple(split) != SPLITS or any(share < 0 for share in split.values()):
            raise ValueError(f"split: give the shares of {', '.join(SPLITS)} in this order")
        if abs(sum(split.values()) - 1) > 1e-9:
            raise ValueError(f"split: the shares add up to {sum(split.values())}, not 1")
        return split

    @property
    def teacher(self) -> ModelSpec:
        return self.models[0]

    def with_paths_from(self, folder: Path) -> "OracleDataConfig":
        if self.teacher_prompt is None or self.teacher_prompt.is_absolute():
            return self
        return self.model_copy(update={"teacher_prompt": (folder / self.teacher_prompt).resolve()})
