"""patient-eval's run config: the patients (`models`, the simulators under test), how they are asked, the
optional judge."""

from pathlib import Path
from typing import Any

from pydantic import Field

from tasks.benchmarks.snomed.config import ORACLE_PATIENT_PROMPT, PROMPTS_DIR
from tasks.benchmarks.snomed.patient import Disclosure
from tasks.evals.config import JudgeSpec, ModelSpec, RunConfig, RunOverrides

JUDGE_RUBRIC = PROMPTS_DIR / "patient_judge_v1.txt"


class PatientBenchConfig(RunConfig):
    """Patients are model strings as `snomed evaluate --patient` takes them; LLM patients are sent the
    served oracle prompt (oracle_patient_v1) with the record in its lay form, the offline one its record."""

    disclosure: Disclosure = Field("symptoms", description="The rule each patient is told and scored by.")
    askings: int = Field(2, ge=1, description="Times each question is asked (the asking is in the call key).")
    patient_prompt: Path | None = Field(
        None, description="LLM patients' prompt file; default oracle_patient_v1."
    )
    oracle_data: Path | None = Field(
        None, description="An oracle data folder: its test-split patients and held-out pairs are the bench's."
    )
    judge: JudgeSpec | None = Field(
        None,
        description="Optional judge of faithfulness (default off); its rubric defaults to patient_judge_v1.",
    )

    def roles(self) -> dict[str, list[ModelSpec]]:
        return {"model": list(self.models), **({"judge": [self.judge]} if self.judge else {})}

    def not_in_run_id(self) -> dict[str, Any]:
        return {**super().not_in_run_id(), **({"judge": {"limits", "mode"}} if self.judge else {})}

    def with_overrides(self, overrides: RunOverrides) -> "PatientBenchConfig":
        """The shared choices, and `--api-base` for the optional judge too: it is a setting, not a role."""
        config = super().with_overrides(overrides)
        if config.judge is None or overrides.api_base is None:
            return config
        judge = config.judge.with_api_base(overrides.api_base, overrides.api_key_env)
        return config.model_copy(update={"judge": judge})

    def prompt_file(self) -> Path:
        return self.patient_prompt or ORACLE_PATIENT_PROMPT

    def with_paths_from(self, folder: Path) -> "PatientBenchConfig":
        paths = {"patient_prompt": self.patient_prompt, "oracle_data": self.oracle_data}
        given = {name: (folder / path).resolve() for name, path in paths.items() if path is not None}
        return self.model_copy(update=given)
