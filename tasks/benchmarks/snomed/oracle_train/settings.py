"""The fine-tuning settings: the paper's where it states them, common LoRA practice where it is silent."""

from pathlib import Path

from pydantic import ConfigDict, Field

from tasks.core.strict import StrictModel

# The paper (shared/papers/snomed-prediction-benchmark.txt, "1.2 Model Fine Tuning") states the base model,
# LoRA on attention projections, batch size 1 and sequences capped at 512 tokens. It gives no rank, alpha,
# dropout, learning rate or epochs: those defaults are the usual ones for a 7B model (QLoRA paper and PEFT's
# examples), and every value used is written to the run's manifest.
PAPER_BASE = "BioMistral/BioMistral-7B"
CHATML_TEMPLATE = Path(__file__).parent / "chatml.jinja"
# What the last run of a folder may change and still resume it: how long to train.
RESUMABLE_CHANGES = frozenset({"epochs", "max_steps"})


class OracleTrainSettings(StrictModel):
    """Every setting that changes the trained oracle."""

    model_config = ConfigDict(frozen=True)

    base: str = Field(
        PAPER_BASE, description="Hugging Face model id, local model folder or .gguf file (dequantised)."
    )
    lora_rank: int = Field(16, ge=1, description="LoRA rank r (the paper does not give it).")
    lora_alpha: int = Field(32, ge=1, description="LoRA alpha: the update is scaled by alpha / r.")
    lora_dropout: float = Field(0.05, ge=0.0, lt=1.0)
    target_modules: tuple[str, ...] = Field(
        ("q_proj", "k_proj", "v_proj", "o_proj"),
        description="Modules given LoRA adapters: the attention projections, as the paper says.",
    )
    max_length: int = Field(512, ge=16, description="Tokens per pair, longer ones truncated (the paper).")
    batch_size: int = Field(1, ge=1, description="Pairs per device step (the paper).")
    gradient_accumulation_steps: int = Field(1, ge=1)
    learning_rate: float = Field(2e-4, gt=0.0)
    epochs: float = Field(3.0, gt=0.0)
    max_steps: int | None = Field(
        None, ge=1, description="Stop after this many optimizer steps (over epochs)."
    )
    eval_steps: int = Field(50, ge=1, description="Held-out loss every this many steps.")
    save_steps: int = Field(50, ge=1, description="A resumable checkpoint every this many steps.")
    logging_steps: int = Field(10, ge=1, description="Training loss logged every this many steps.")
    seed: int = 0
    chat_template: Path | None = Field(
        None,
        description="Jinja chat template for a base without one; default: the base's own, else ChatML.",
    )


def changed_settings(recorded: dict, settings: OracleTrainSettings) -> list[str]:
    """The settings that differ from a folder's recorded run, beyond those a resume may change."""
    current = settings.model_dump(mode="json")
    return sorted(
        name for name in current if name not in RESUMABLE_CHANGES and recorded.get(name) != current[name]
    )
