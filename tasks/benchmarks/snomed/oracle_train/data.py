"""The oracle data folder's chat pairs as TRL's prompt-completion rows."""

import json
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.oracle.splits import empty_split_reason
from tasks.core.preflight import UserError

# The design of `oracle-data`'s folder: DIR/chat/<split>.jsonl, one system/user/assistant triple a line, and
# DIR/manifest.json, which counts them.
TRAINING_SPLITS = ("train", "validation")
DATA_MANIFEST = "manifest.json"


def chat_split_files(data_dir: Path) -> dict[str, Path]:
    """The chat JSONL of the splits training reads; a UserError saying why the first one missing or empty
    holds no pair (read from the folder's manifest) and the fix."""
    files = {split: data_dir / "chat" / f"{split}.jsonl" for split in TRAINING_SPLITS}
    for split, path in files.items():
        if not path.is_file() or path.stat().st_size == 0:
            raise UserError(f"{path} holds 0 pairs: {no_pairs_reason(data_dir, split)}", "--data")
    return files


def no_pairs_reason(data_dir: Path, split: str) -> str:
    """Why the data folder holds no `split` pair, by its manifest: its split or its teacher's pairs; or that
    it is no oracle data folder, or an unfinished or damaged one."""
    manifest_path = data_dir / DATA_MANIFEST
    if not manifest_path.is_file():
        return (
            f"{data_dir} has no {DATA_MANIFEST} either, so it is no oracle data folder: --data takes the "
            "--out folder of `threadmed snomed oracle-data`"
        )
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        kept = sum(manifest["counts"]["kept"][split].values())
        reason = empty_split_reason(manifest, split)
    except (ValueError, KeyError, TypeError, AttributeError) as error:  # not the manifest oracle-data writes
        return (
            f"its {DATA_MANIFEST} cannot be read ({type(error).__name__}: {error}); rebuild the folder with "
            "`threadmed snomed oracle-data`"
        )
    return reason or (
        f"its {DATA_MANIFEST} counts {kept:,} kept, so the folder is unfinished: re-run "
        "`threadmed snomed oracle-data` into it"
    )


def prompt_completion(messages: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """One chat pair as TRL's conversational prompt-completion row: the loss falls on the patient's answer
    alone. The paper's oracle sometimes echoed its prompt's markup, which it blames on "insufficient
    masking during supervised fine-tuning"; training only on the completion is that masking."""
    roles = [message["role"] for message in messages]
    if roles[-1:] != ["assistant"] or "assistant" in roles[:-1]:
        raise ValueError(f"a pair ends with one assistant message; got roles {roles}")
    return {"prompt": messages[:-1], "completion": messages[-1:]}


def load_pairs(files: dict[str, Path]):
    """The splits as a `datasets.DatasetDict` of prompt-completion rows (other columns dropped)."""
    from datasets import load_dataset

    loaded = load_dataset("json", data_files={split: str(path) for split, path in files.items()})
    return loaded.map(
        lambda row: prompt_completion(row["messages"]),
        remove_columns=loaded["train"].column_names,
        desc="prompt-completion pairs",
    )
