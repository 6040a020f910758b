"""`threadmed snomed oracle-train`: LoRA fine-tuning of the patient oracle (needs the `oracle` extra).

A plain command, not a Prefect flow: training is one long job in one process on one device, whose
checkpoints already make it resumable; tasks and retries around it would add nothing."""

from importlib.util import find_spec
from pathlib import Path
from typing import Annotated

import typer

from flows.cli.errors import reports_errors
from flows.cli.render import console
from tasks.benchmarks.snomed.oracle_train.settings import PAPER_BASE, OracleTrainSettings
from tasks.core.preflight import UserError, check_writable_folder

DEFAULTS = OracleTrainSettings()
# What this run did, by the folder it found (oracle_train/resume.py: NextStep).
TRAINING_DONE = {
    "nothing": "The run was finished, with every output asked: nothing trained nor written.",
    "export": "The run was finished: nothing trained; the outputs it lacked written.",
    "finish": "The last checkpoint had ended the training: nothing trained; losses and outputs written.",
    "train": "Trained.",
}
# What this run will do, said first (before the minute or more that torch and the base take to load).
TRAINING_PLAN = {
    "nothing": "the run is finished, with every output asked: nothing to train or write",
    "export": "the run is finished: writing the outputs it lacks, training nothing",
    "finish": "its last checkpoint ended the training: writing losses and outputs, training nothing",
    "train": "training {length}{resuming}; loading torch and the base takes a minute or more",
}
ORACLE_EXTRA_MODULES = ("torch", "transformers", "peft", "trl", "datasets", "gguf")


def check_oracle_extra() -> None:
    missing = [name for name in ORACLE_EXTRA_MODULES if find_spec(name) is None]
    if missing:
        raise UserError(
            f"oracle-train needs the oracle extra ({', '.join(missing)} missing): pip install -e '.[oracle]'"
        )


@reports_errors("out")
def oracle_train(
    data: Annotated[
        Path,
        typer.Option(
            help="Oracle data folder written by `threadmed snomed oracle-data` (reads chat/).",
            exists=True,
            file_okay=False,
        ),
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Run folder: manifest.json, checkpoints/, adapter/, merged/, loss_curve.csv and .png. "
            "Run the same command with the same folder again to resume from its last checkpoint."
        ),
    ],
    base: Annotated[
        str, typer.Option(help=f"Base model: hub id, local folder or .gguf file (the paper: {PAPER_BASE}).")
    ] = DEFAULTS.base,
    lora_rank: Annotated[int, typer.Option(min=1, help="LoRA rank r.")] = DEFAULTS.lora_rank,
    lora_alpha: Annotated[int, typer.Option(min=1, help="LoRA alpha.")] = DEFAULTS.lora_alpha,
    lora_dropout: Annotated[float, typer.Option(min=0.0, max=0.99)] = DEFAULTS.lora_dropout,
    target_modules: Annotated[
        str, typer.Option(help="Comma-separated module names given adapters.")
    ] = ",".join(DEFAULTS.target_modules),
    max_length: Annotated[int, typer.Option(min=16, help="Tokens per pair.")] = DEFAULTS.max_length,
    batch_size: Annotated[int, typer.Option(min=1)] = DEFAULTS.batch_size,
    gradient_accumulation_steps: Annotated[int, typer.Option(min=1)] = DEFAULTS.gradient_accumulation_steps,
    learning_rate: Annotated[float, typer.Option(min=0.0)] = DEFAULTS.learning_rate,
    epochs: Annotated[float, typer.Option(min=0.0)] = DEFAULTS.epochs,
    max_steps: Annotated[
        int | None, typer.Option(min=1, help="Stop after this many optimizer steps (overrides --epochs).")
    ] = None,
    eval_steps: Annotated[
        int, typer.Option(min=1, help="Held-out loss every N steps.")
    ] = DEFAULTS.eval_steps,
    save_steps: Annotated[int, typer.Option(min=1, help="A checkpoint every N steps.")] = DEFAULTS.save_steps,
    logging_steps: Annotated[int, typer.Option(min=1)] = DEFAULTS.logging_steps,
    seed: Annotated[int, typer.Option()] = DEFAULTS.seed,
    chat_template: Annotated[
        Path | None,
        typer.Option(
            help="Jinja chat template; default: the base's own, else ChatML.", exists=True, dir_okay=False
        ),
    ] = None,
    export: Annotated[
        bool, typer.Option(help="Merge the adapter into the base and save it (merged/) for serving.")
    ] = True,
    gguf_converter: Annotated[
        Path | None,
        typer.Option(
            help="llama.cpp's convert_hf_to_gguf.py: also write oracle.gguf (f16) for llama.cpp's server.",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    export_only: Annotated[
        bool,
        typer.Option(
            "--export-only",
            help="Train nothing: write the asked outputs (merged/, oracle.gguf) that the finished run in "
            "--out lacks. The same command without it does so too on a finished run.",
        ),
    ] = False,
) -> None:
    """Fine-tune a causal LM with LoRA on the oracle's chat pairs (GPU if there is one, else CPU).

    A finished run is never trained again, nor any run past --max-steps: re-run the same command with
    --gguf-converter to add the GGUF to a finished run."""
    settings = OracleTrainSettings(
        base=base, lora_rank=lora_rank, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
        target_modules=tuple(name.strip() for name in target_modules.split(",") if name.strip()),
        max_length=max_length, batch_size=batch_size, gradient_accumulation_steps=gradient_accumulation_steps,
        learning_rate=learning_rate, epochs=epochs, max_steps=max_steps, eval_steps=eval_steps,
        save_steps=save_steps, logging_steps=logging_steps, seed=seed, chat_template=chat_template,
    )  # fmt: skip
    from tasks.benchmarks.snomed.oracle_train.data import chat_split_files
    from tasks.benchmarks.snomed.oracle_train.resume import (
        check_resumable,
        last_checkpoint,
        next_step,
        recorded_manifest,
        training_ended_at,
        wanted_outputs,
    )
    from tasks.benchmarks.snomed.oracle_train.train import train_oracle

    # Every input checked before the minute that importing torch and the model can take.
    chat_split_files(data)
    check_writable_folder(out, "--out")
    check_resumable(out, settings)
    wanted = wanted_outputs(export, gguf_converter is not None)
    ended = training_ended_at(last_checkpoint(out), settings)
    step = next_step(recorded_manifest(out), settings, wanted, export_only, ended)
    check_oracle_extra()
    checkpoint = last_checkpoint(out)
    length = f"to step {settings.max_steps}" if settings.max_steps else f"{settings.epochs:g} epochs"
    resuming = f", resuming from {checkpoint.name}" if checkpoint else ""
    console.print(
        f"SNOMED patient oracle: LoRA fine-tuning of {settings.base} on {data} into {out}: "
        + TRAINING_PLAN[step].format(length=length, resuming=resuming),
        markup=False,
        soft_wrap=True,
    )
    manifest = train_oracle(
        data, out, settings, export=export, gguf_converter=gguf_converter, export_only=export_only
    )
    console.print(TRAINING_DONE[step])
    pairs = manifest["data"]["pairs"]
    for split, count in manifest["data"].get("pairs_within_max_length", {}).items():
        if count < pairs[split]:
            console.print(
                f"{pairs[split] - count:,} of {pairs[split]:,} {split} pairs left out: --max-length "
                f"{settings.max_length} cuts off their whole answer"
            )
    loss = manifest["eval_loss"]
    console.print(
        f"held-out loss {loss['before']:.4f} -> {loss['after']:.4f} after {manifest['global_step']} steps "
        f"on {manifest['device']['device']}"
    )
    outputs = manifest["outputs"]
    written = [
        "manifest.json",
        "loss_curve.png",
        *(outputs[key] for key in ("merged", "gguf") if key in outputs),
    ]
    for name in written:
        console.print(f"  {out / name}")
