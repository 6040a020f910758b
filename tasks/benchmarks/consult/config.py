"""The consultation benchmark's run config: agents, the FQR judge, the simulator's settings, epochs.

YAML or flow parameters -> `ConsultConfig` (deployments/consult.example.yaml shows every field). Every field
is recorded in the run's manifest; those that change what a call returns are in the run id.
"""

from pathlib import Path
from typing import Self

from pydantic import Field, field_validator

from tasks.benchmarks.consult.offline_models import CONSULT_JUDGE
from tasks.evals.config import JudgedRunConfig, JudgeSpec, SampleSpec

PROMPTS_DIR = Path(__file__).parent / "prompts"
AGENT_PROMPT = PROMPTS_DIR / "agent_v3.txt"
JUDGE_RUBRIC = PROMPTS_DIR / "judge_fqr_v1.txt"
# The demo's judge: a deterministic heuristic, not a clinical judgement (offline_models.py).
OFFLINE_JUDGE = JudgeSpec(
    name="consult-judge (offline)", model=CONSULT_JUDGE, max_reasks=1, estimated_reply_tokens=30
)


class ConsultConfig(JudgedRunConfig):
    """The agents (`models`), the FQR judge, how the simulated patient answers, and how stages are scored."""

    judge: JudgeSpec = Field(
        OFFLINE_JUDGE,
        description="Judges each follow-up answer (FQR) with `rubric` (default prompts/judge_fqr_v1.txt): "
        "any litellm model, or the offline heuristic judge of the demo.",
    )
    epochs: int = Field(1, ge=1, description="Episodes per case and agent; the epoch is in the call key.")
    max_questions: int = Field(12, ge=0, description="History-taking questions before the diagnosis.")
    max_reasks: int = Field(
        1, ge=0, description="Re-asks of a differential, plan or revised plan that does not parse."
    )
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
        None, description="The agent's prompt file; default prompts/agent_v3.txt."
    )

    @field_validator("sample")
    @classmethod
    def _no_strata(cls, sample: SampleSpec) -> SampleSpec:
        if sample.quotas:
            raise ValueError("consultation cases have no strata: use sample.limit instead of sample.quotas")
        return sample

    def prompt_file(self) -> Path:
        return self.agent_prompt or AGENT_PROMPT

    def judge_rubric(self) -> Path:
        return self.judge.rubric or JUDGE_RUBRIC

    def with_paths_from(self, folder: Path) -> Self:
        update: dict[str, object] = {}
        if self.agent_prompt is not None:
            update["agent_prompt"] = (folder / self.agent_prompt).resolve()
        if self.judge.rubric is not None:
            update["judge"] = self.judge.model_copy(update={"rubric": (folder / self.judge.rubric).resolve()})
        return self.model_copy(update=update)
