"""One fine-tuning run: the data folder's chat pairs, a LoRA adapter on the base, the held-out loss before
and after, the loss curve, and the oracle exported for serving. Re-running into the same folder resumes
from its last checkpoint."""

import json
import shutil
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.cases.case_set import file_sha256
from tasks.benchmarks.snomed.oracle_train.base import gguf_parts, unpack_gguf
from tasks.benchmarks.snomed.oracle_train.curve import (
    held_out_loss_at,
    loss_rows,
    plot_loss_curve,
    write_loss_csv,
)
from tasks.benchmarks.snomed.oracle_train.data import chat_split_files, load_pairs
from tasks.benchmarks.snomed.oracle_train.export import GGUF_FILE, MERGED, convert_to_gguf, save_merged
from tasks.benchmarks.snomed.oracle_train.resume import (
    CHECKPOINTS,
    MANIFEST,
    TRAINER_STATE,
    check_resumable,
    checkpoint_step,
    last_checkpoint,
    next_step,
    recorded_loss_before,
    recorded_manifest,
    training_ended_at,
    wanted_outputs,
)
from tasks.benchmarks.snomed.oracle_train.settings import CHATML_TEMPLATE, OracleTrainSettings
from tasks.core.files import write_json_atomic
from tasks.core.preflight import UserError
from tasks.core.provenance import code_provenance, utc_now

ORACLE_PACKAGES = ("torch", "transformers", "peft", "trl", "accelerate", "datasets", "gguf")
ADAPTER = "adapter"


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


def check_pairs_left(usable: dict[str, int], pairs: dict[str, int], max_length: int) -> None:
    """A UserError when --max-length leaves a split no pair with an answer token to learn or measure on."""
    if empty := [split for split, count in usable.items() if count == 0]:
        raise UserError(
            f"--max-length {max_length} cuts off the answer of every {' and every '.join(empty)} pair "
            f"({', '.join(f'{split}: {pairs[split]:,}' for split in empty)}): its prompt, which holds the "
            "patient's record, fills the tokens; raise --max-length",
            "--max-length",
        )


def load_checkpoint(trainer, checkpoint: Path) -> None:
    """The adapter weights and trainer state (step, log) of a checkpoint that ended the training, into the
    trainer: what resuming from it gives, without the extra step resuming would train."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file
    from transformers import TrainerState

    set_peft_model_state_dict(trainer.model, load_file(str(checkpoint / "adapter_model.safetensors")))
    trainer.state = TrainerState.load_from_json(str(checkpoint / TRAINER_STATE))


def merge_trained_adapter(settings: OracleTrainSettings, out: Path) -> Path:
    """OUT/merged from the base and the run's saved adapter, with no trainer (a finished run's export)."""
    from peft import PeftModel

    model, tokenizer, _ = load_base(settings, out, device_facts())
    return save_merged(PeftModel.from_pretrained(model, str(out / ADAPTER)), tokenizer, out / MERGED)


def export_outputs(
    out: Path,
    manifest: dict[str, Any],
    wanted: frozenset[str],
    merge: Callable[[], Path],
    gguf_converter: Path | None,
) -> dict[str, Any]:
    """The asked outputs the manifest lacks: merged/ (written by `merge`), then oracle.gguf converted from it;
    the manifest rewritten after each (the merged model is recorded even if the conversion fails)."""
    outputs = manifest["outputs"]
    if "merged" in wanted and "merged" not in outputs:
        outputs["merged"] = merge().name
        write_json_atomic(out / MANIFEST, manifest)
    if "gguf" in wanted and "gguf" not in outputs and gguf_converter is not None:
        outputs["gguf"] = convert_to_gguf(out / outputs["merged"], gguf_converter, out / GGUF_FILE).name
        write_json_atomic(out / MANIFEST, manifest)
    return manifest


def train_oracle(
    data_dir: Path,
    out: Path,
    settings: OracleTrainSettings,
    export: bool = True,
    gguf_converter: Path | None = None,
    export_only: bool = False,
) -> dict[str, Any]:
    """Fine-tune, evaluate, export; write OUT/manifest.json (every setting, data hashes, losses, outputs).

    A finished run of the same settings is not trained again: only the asked outputs it lacks are written
    (`export_only` refuses to train). A run is never trained past --max-steps (see resume.py)."""
    files = chat_split_files(data_dir)
    check_resumable(out, settings)
    wanted = wanted_outputs(export, gguf_converter is not None)
    recorded, checkpoint = recorded_manifest(out), last_checkpoint(out)
    step = next_step(recorded, settings, wanted, export_only, training_ended_at(checkpoint, settings))
    if step == "nothing":
        return recorded  # type: ignore[return-value]
    if step == "export":
        merge = partial(merge_trained_adapter, settings, out)
        return export_outputs(out, recorded, wanted, merge, gguf_converter)  # type: ignore[arg-type]
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / MERGED, ignore_errors=True)  # the exports of an earlier, shorter training
    (out / GGUF_FILE).unlink(missing_ok=True)
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
    # TRL drops a pair whose answer --max-length cuts off whole (its prompt, the record, fills it).
    usable = {"train": len(trainer.train_dataset), "validation": len(trainer.eval_dataset)}
    manifest["data"]["pairs_within_max_length"] = usable
    check_pairs_left(usable, manifest["data"]["pairs"], settings.max_length)
    # Before training the adapter adds nothing (LoRA's B starts at zero): this is the base model's loss,
    # kept in the manifest at once so that a resume of a run stopped mid-training reads it.
    before = recorded_loss_before(recorded, settings, manifest["data"]["sha256"])
    if before is None:
        before = trainer.evaluate()["eval_loss"]
    manifest["eval_loss"] = {"before": before}
    write_json_atomic(out / MANIFEST, manifest)
    if step == "finish":
        load_checkpoint(trainer, checkpoint)  # type: ignore[arg-type]
    else:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
    after = held_out_loss_at(trainer.state.log_history, trainer.state.global_step)
    if after is None:
        after = trainer.evaluate()["eval_loss"]
    trainer.save_model(str(out / ADAPTER))

    rows = loss_rows(trainer.state.log_history, before)
    write_loss_csv(rows, out / "loss_curve.csv")
    plot_loss_curve(rows, out / "loss_curve.png", f"LoRA oracle on {settings.base}")
    manifest.update(
        status="done",
        finished_at=utc_now(),
        seconds=round(time.monotonic() - started, 1),
        resumed_from=checkpoint.name if checkpoint else None,
        global_step=trainer.state.global_step,
        steps_this_run=trainer.state.global_step - checkpoint_step(checkpoint),
        eval_loss={"before": before, "after": after},
        outputs={
            "adapter": ADAPTER,
            "checkpoints": CHECKPOINTS,
            "loss_curve": ["loss_curve.csv", "loss_curve.png"],
        },
    )
    write_json_atomic(out / MANIFEST, manifest)  # the training is recorded even if an export fails
    merge = partial(save_merged, trainer.model, tokenizer, out / MERGED)
    return export_outputs(out, manifest, wanted, merge, gguf_converter)
