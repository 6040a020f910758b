"""One fine-tuning run: the data folder's chat pairs, a LoRA adapter on the base, the held-out loss before
and after, the loss curve, and the oracle exported for serving. Re-running into the same folder resumes
from its last checkpoint."""

import json
import time
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.cases.case_set import file_sha256
from tasks.benchmarks.snomed.oracle_train.base import gguf_parts, unpack_gguf
from tasks.benchmarks.snomed.oracle_train.curve import loss_rows, plot_loss_curve, write_loss_csv
from tasks.benchmarks.snomed.oracle_train.data import chat_split_files, load_pairs
from tasks.benchmarks.snomed.oracle_train.export import convert_to_gguf, save_merged
from tasks.benchmarks.snomed.oracle_train.settings import (
    CHATML_TEMPLATE,
    OracleTrainSettings,
    changed_settings,
)
from tasks.core.files import write_json_atomic
from tasks.core.preflight import UserError
from tasks.core.provenance import code_provenance, utc_now

ORACLE_PACKAGES = ("torch", "transformers", "peft", "trl", "accelerate", "datasets", "gguf")
MANIFEST = "manifest.json"
CHECKPOINTS = "checkpoints"


def recorded_manifest(out: Path) -> dict[str, Any] | None:
    path = out / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else None


def check_resumable(out: Path, settings: OracleTrainSettings) -> None:
    """A UserError when `out` holds a run with other settings: its checkpoints would not fit this one."""
    recorded = recorded_manifest(out)
    changed = changed_settings(recorded["settings"], settings) if recorded else []
    if changed:
        raise UserError(
            f"{out} holds a run with other {', '.join(changed)}; resume it with its settings "
            f"(see {out / MANIFEST}) or choose another --out",
            "--out",
        )


def finished_run(
    recorded: dict[str, Any] | None, settings: OracleTrainSettings, export: bool, gguf: bool
) -> dict[str, Any] | None:
    """The recorded run when it already is this one, finished with every output asked; None otherwise.

    Resuming a finished run is not a no-op in transformers: it trains one more step (at learning rate 0)."""
    if (
        not recorded
        or recorded["status"] != "done"
        or recorded["settings"] != settings.model_dump(mode="json")
    ):
        return None
    wanted = {name for name, asked in (("merged", export), ("gguf", gguf)) if asked}
    return recorded if wanted <= set(recorded["outputs"]) else None


def device_facts() -> dict[str, Any]:
    """Where training runs: the first CUDA GPU when there is one (bfloat16 where it supports it), else CPU."""
    import torch

    if not torch.cuda.is_available():
        return {"device": "cpu", "bf16": False}
    return {"device": torch.cuda.get_device_name(0), "bf16": torch.cuda.is_bf16_supported()}


def trainer_config(settings: OracleTrainSettings, out: Path, device: dict[str, Any]):
    """TRL's SFTConfig from the settings: checkpoints under OUT/checkpoints, no external loggers."""
    from trl import SFTConfig

    return SFTConfig(
        output_dir=str(out / CHECKPOINTS),
        per_device_train_batch_size=settings.batch_size,
        per_device_eval_batch_size=settings.batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation_steps,
        learning_rate=settings.learning_rate,
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps or -1,
        max_length=settings.max_length,
        eval_strategy="steps",
        eval_steps=settings.eval_steps,
        save_strategy="steps",
        save_steps=settings.save_steps,
        logging_steps=settings.logging_steps,
        seed=settings.seed,
        bf16=device["bf16"],
        use_cpu=device["device"] == "cpu",
        report_to="none",
    )


def lora_config(settings: OracleTrainSettings):
    from peft import LoraConfig

    return LoraConfig(
        r=settings.lora_rank,
        lora_alpha=settings.lora_alpha,
        lora_dropout=settings.lora_dropout,
        target_modules=list(settings.target_modules),
        task_type="CAUSAL_LM",
    )


def load_base(settings: OracleTrainSettings, out: Path, device: dict[str, Any]):
    """The base model and tokenizer, and the chat template's origin. A GGUF base is unpacked into OUT/base."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = str(unpack_gguf(settings.base, out / "base")) if gguf_parts(settings.base) else settings.base
    tokenizer = AutoTokenizer.from_pretrained(source)
    template = settings.chat_template or (None if tokenizer.chat_template else CHATML_TEMPLATE)
    if template:  # BioMistral-7B ships none: its pairs need one, and the server the same one
        tokenizer.chat_template = Path(template).read_text()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = torch.bfloat16 if device["bf16"] else torch.float32
    model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    return model, tokenizer, str(template) if template else "the base's own"


def last_checkpoint(out: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    folder = out / CHECKPOINTS
    return get_last_checkpoint(str(folder)) if folder.is_dir() else None


def train_oracle(
    data_dir: Path,
    out: Path,
    settings: OracleTrainSettings,
    export: bool = True,
    gguf_converter: Path | None = None,
) -> dict[str, Any]:
    """Fine-tune, evaluate, export; write OUT/manifest.json (every setting, data hashes, losses, outputs)."""
    files = chat_split_files(data_dir)
    check_resumable(out, settings)
    if done := finished_run(recorded_manifest(out), settings, export, gguf_converter is not None):
        return done
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    device = device_facts()
    manifest: dict[str, Any] = {
        "settings": settings.model_dump(mode="json"),
        "data": {"dir": str(data_dir), "sha256": {split: file_sha256(path) for split, path in files.items()}},
        "device": device,
        "code": code_provenance(ORACLE_PACKAGES),
        "started_at": utc_now(),
        "status": "training",
    }
    write_json_atomic(out / MANIFEST, manifest)
    model, tokenizer, manifest["chat_template"] = load_base(settings, out, device)
    pairs = load_pairs(files)
    manifest["data"]["pairs"] = {split: len(rows) for split, rows in pairs.items()}

    from trl import SFTTrainer

    trainer = SFTTrainer(
        model=model,
        args=trainer_config(settings, out, device),
        train_dataset=pairs["train"],
        eval_dataset=pairs["validation"],
        processing_class=tokenizer,
        peft_config=lora_config(settings),
    )
    # Every trainer setting, the libraries' defaults too (optimizer, schedule, warmup, checkpointing).
    manifest["trainer_args"] = json.loads(trainer.args.to_json_string())
    # Before training the adapter adds nothing (LoRA's B starts at zero): this is the base model's loss.
    before = trainer.evaluate()["eval_loss"]
    resumed_from = last_checkpoint(out)
    trainer.train(resume_from_checkpoint=resumed_from)
    after = trainer.evaluate()["eval_loss"]
    trainer.save_model(str(out / "adapter"))

    rows = loss_rows(trainer.state.log_history, before)
    write_loss_csv(rows, out / "loss_curve.csv")
    plot_loss_curve(rows, out / "loss_curve.png", f"LoRA oracle on {settings.base}")
    outputs = {
        "adapter": "adapter",
        "checkpoints": CHECKPOINTS,
        "loss_curve": ["loss_curve.csv", "loss_curve.png"],
    }
    if export:
        outputs["merged"] = save_merged(trainer.model, tokenizer, out / "merged").name
    manifest.update(
        status="done",
        finished_at=utc_now(),
        seconds=round(time.monotonic() - started, 1),
        resumed_from=Path(resumed_from).name if resumed_from else None,
        global_step=trainer.state.global_step,
        eval_loss={"before": before, "after": after},
        outputs=outputs,
    )
    write_json_atomic(out / MANIFEST, manifest)  # the training is recorded even if the conversion fails
    if export and gguf_converter:
        outputs["gguf"] = convert_to_gguf(out / "merged", gguf_converter, out / "oracle.gguf").name
        write_json_atomic(out / MANIFEST, manifest)
    return manifest
