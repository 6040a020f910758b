"""The base model: where it comes from, and a GGUF file unpacked once into a model folder."""

import shutil
from pathlib import Path

from tasks.core.preflight import UserError


def gguf_parts(base: str) -> tuple[str, str] | None:
    """(folder, file name) of a base given as a .gguf file; None for a model folder or a hub id."""
    path = Path(base)
    if path.suffix.lower() != ".gguf":
        return None
    if not path.is_file():
        raise UserError(f"{base}: no such GGUF file", "--base")
    return str(path.parent), path.name


def unpack_gguf(base: str, folder: Path) -> Path:
    """A GGUF base dequantised into a plain model folder (float32 weights and tokenizer), written once.

    Training reads the folder rather than the GGUF: parsing a GGUF's vocabulary takes minutes on a busy
    CPU, and the merge after training and every resume would parse it again."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    if (folder / "config.json").is_file():
        return folder
    directory, name = gguf_parts(base) or (base, None)
    tokenizer = AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(
        directory, gguf_file=name, quantization_config=GgufConfig(dequantize=True)
    )
    # Dequantised, the weights are plain tensors: what remains of the GGUF loader only blocks saving them.
    model.hf_quantizer = None
    vars(model.config).pop("quantization_config", None)
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)  # a crashed earlier unpacking
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    staging.replace(folder)
    return folder
