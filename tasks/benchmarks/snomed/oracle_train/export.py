"""The trained oracle exported for serving: the adapter merged into the base, and optionally a GGUF."""

import subprocess
import sys
from pathlib import Path

from tasks.core.preflight import UserError

# llama.cpp's server reads GGUF; f16 keeps the merged weights as trained (quantise later with llama-quantize).
GGUF_OUTTYPE = "f16"
MERGED = "merged"
GGUF_FILE = "oracle.gguf"


def save_merged(peft_model, tokenizer, folder: Path) -> Path:
    """The LoRA weights folded into the base weights, saved as a plain model folder (vLLM serves it)."""
    merged = peft_model.merge_and_unload()
    merged.save_pretrained(folder)
    tokenizer.save_pretrained(folder)  # with the chat template the pairs were trained in
    return folder


def convert_to_gguf(merged: Path, converter: Path, outfile: Path) -> Path:
    """Run llama.cpp's `convert_hf_to_gguf.py` on the merged folder, in this Python (it needs torch, numpy,
    transformers and sentencepiece: the oracle extra); a UserError quotes its last line."""
    command = [
        sys.executable,
        str(converter),
        str(merged),
        "--outfile",
        str(outfile),
        "--outtype",
        GGUF_OUTTYPE,
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not outfile.is_file():
        last = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
        raise UserError(
            f"{converter} exited {done.returncode} ({last[0]}); the merged model is in {merged}: convert it "
            f"with `python {converter} {merged} --outfile {outfile} --outtype {GGUF_OUTTYPE}`"
        )
    return outfile
