"""The consultation benchmark's run config: agents under test, the simulator's settings, epochs, stages.

YAML or flow parameters -> `ConsultConfig` (deployments/consult.example.yaml shows every field). Every field
is recorded in the run's manifest; those that change what a call returns are in the run id.
"""

from pathlib import Path
from typing import ClassVar, Self

from pydantic import Field, field_validator

from tasks.evals.config import RunConfig, SampleSpec

PROMPTS_DIR = Path(__file__).parent / "prompts"
AGENT_PROMPT = PROMPTS_DIR / "agent_v1.txt"


class ConsultConfig(RunConfig):
    """The agents (`models`), how the simulated patient answers, and how the stages are scored."""

    ROLE_FIELDS: ClassVar[tuple[str, ...]] = ()

    epochs: int = Field(1, ge=1, description="Episodes per case and agent; the epoch is in the call key.")
    max_questions: int = Field(12, ge=0, description="History-taking questions before the diagnosis.")
    max_reasks: int = Field(1, ge=0, description="Re-asks of a differential that does not parse.")
    match_threshold: float = Field(
        0.3, gt=0, le=1, description="Cosine a question needs to match a template; below it: a deflection."
    )
    per_turn: int | None = Field(
        None,
        ge=1,
        description="AIUs one question reveals at most; none: all unrevealed AIUs of its template.",
    )
    gamma: float = Field(0.95, gt=0, le=1, description="MNI-Comp's discount per turn of delay.")
    diagnosis_match_threshold: float = Field(
        90.0, ge=0, le=100, description="rapidfuzz score a diagnosis title needs to match a KB condition."
    )
    kb_version: int = Field(1, ge=1, description="Knowledge base version (tasks/benchmarks/consult/kb/data).")
    policy_version: str = Field("v1", description="Mined inquiry logic (tasks/benchmarks/consult/inquiry).")
    agent_prompt: Path | None = Field(
        None, description="The agent's prompt file; default prompts/agent_v1.txt."
    )

    @field_validator("sample")
    @classmethod
    def _no_strata(cls, sample: SampleSpec) -> SampleSpec:
        if sample.quotas:
            raise ValueError("consultation cases have no strata: use sample.limit instead of sample.quotas")
        return sample

    def prompt_file(self) -> Path:
        return self.agent_prompt or AGENT_PROMPT

    def with_paths_from(self, folder: Path) -> Self:
        if self.agent_prompt is None:
            return self
        return self.model_copy(update={"agent_prompt": (folder / self.agent_prompt).resolve()})
