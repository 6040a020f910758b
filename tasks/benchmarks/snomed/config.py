"""The SNOMED benchmark's run config: clinicians under test, the patient role, the interview's settings.

YAML or flow parameters -> `SnomedConfig` (deployments/snomed.example.yaml shows every field). Every field
is recorded in the run's manifest; the ones that change what a call returns are in the run id.
"""

from pathlib import Path
from typing import ClassVar, Self

from pydantic import Field, field_validator

from tasks.benchmarks.snomed.interview import InterviewSettings
from tasks.benchmarks.snomed.offline_models import PATIENT
from tasks.benchmarks.snomed.patient import Disclosure, PatientPromptForm
from tasks.core.preflight import UserError
from tasks.evals.config import ModelSpec, RunConfig, SampleSpec

PROMPTS_DIR = Path(__file__).parent / "prompts"
CLINICIAN_PROMPT = PROMPTS_DIR / "clinician_v1.txt"
# The LLM patient's prompt per form: lay sentences for its conditions, or their names (the first form).
PATIENT_PROMPTS: dict[PatientPromptForm, Path] = {
    "lay": PROMPTS_DIR / "patient_lay_v1.txt",
    "named": PROMPTS_DIR / "patient_v1.txt",
}
# The trained oracle's prompt: the system message of every oracle training pair, and the prompt it is served
# with (an interview's `patient_prompt`, patient-eval's default).
ORACLE_PATIENT_PROMPT = PROMPTS_DIR / "oracle_patient_v1.txt"
# The LLM patient's prompts shipped in prompts/, each chosen on the command line by its file's name.
SHIPPED_PATIENT_PROMPTS = {path.stem: path for path in (*PATIENT_PROMPTS.values(), ORACLE_PATIENT_PROMPT)}
OFFLINE_PATIENT = ModelSpec(name="offline-patient", model=PATIENT, estimated_reply_tokens=30)


class SnomedConfig(RunConfig):
    """Clinicians (`models`, the models under test), the patient, epochs and the interview's rules."""

    ROLE_FIELDS: ClassVar[tuple[str, ...]] = ("patient",)

    patient: ModelSpec = Field(
        OFFLINE_PATIENT, description="The simulated patient: any litellm model, or the offline patient."
    )
    epochs: int = Field(1, ge=1, description="Interviews per case and model; the epoch is in the call key.")
    max_turns: int = Field(20, ge=1, description="Questions a clinician may ask before it must answer.")
    max_reasks: int = Field(1, ge=0, description="Re-asks of a final reply with no parseable answer.")
    disclosure: Disclosure = Field(
        "symptoms", description="symptoms: the patient never names a diagnosis; history: it may."
    )
    clinician_prompt: Path | None = Field(
        None, description="The clinician's versioned prompt file; default: prompts/clinician_v1.txt."
    )
    patient_prompt_form: PatientPromptForm = Field(
        "lay",
        description="How the LLM patient's prompt shows its conditions: lay (its own lay sentences from the "
        "lay lexicon, never a name under symptoms) or named (the record's condition names, told not to say "
        "them: the first form, kept for comparison). The offline patient reads no prompt.",
    )
    patient_prompt: Path | None = Field(
        None,
        description="The LLM patient's versioned prompt file; default: prompts/patient_lay_v1.txt (lay "
        "form) or prompts/patient_v1.txt (named form).",
    )

    @field_validator("sample")
    @classmethod
    def _no_strata(cls, sample: SampleSpec) -> SampleSpec:
        if sample.quotas:
            raise ValueError("SNOMED cases have no strata: use sample.limit instead of sample.quotas")
        return sample

    def interview(self) -> InterviewSettings:
        return InterviewSettings(
            max_turns=self.max_turns, max_reasks=self.max_reasks, disclosure=self.disclosure
        )

    def prompt_files(self) -> tuple[Path, Path]:
        """The clinician's and the patient's prompt files."""
        return (
            self.clinician_prompt or CLINICIAN_PROMPT,
            self.patient_prompt or PATIENT_PROMPTS[self.patient_prompt_form],
        )

    def with_paths_from(self, folder: Path) -> Self:
        paths = {"clinician_prompt": self.clinician_prompt, "patient_prompt": self.patient_prompt}
        given = {name: (folder / path).resolve() for name, path in paths.items() if path is not None}
        return self.model_copy(update=given)


def patient_prompt_file(given: str) -> Path:
    """The patient prompt `--patient-prompt` names: a file (made absolute, as a config file's prompt paths
    are), else a prompt shipped in prompts/ by its name (`oracle_patient_v1`); a UserError listing the
    shipped names when it is neither."""
    if Path(given).is_file():
        return Path(given).resolve()
    if given in SHIPPED_PATIENT_PROMPTS:
        return SHIPPED_PATIENT_PROMPTS[given].resolve()
    raise UserError(
        f"{given}: no such file, nor the name of a patient prompt in {PROMPTS_DIR} "
        f"({', '.join(sorted(SHIPPED_PATIENT_PROMPTS))})",
        "--patient-prompt",
    )
