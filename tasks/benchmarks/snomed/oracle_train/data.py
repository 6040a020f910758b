"""The oracle data folder's chat pairs as TRL's prompt-completion rows."""

from pathlib import Path
from typing import Any

from tasks.core.preflight import UserError

# The design of `oracle-data`'s folder: DIR/chat/<split>.jsonl, one system/user/assistant triple a line.
TRAINING_SPLITS = ("train", "validation")


def chat_split_files(data_dir: Path) -> dict[str, Path]:
    """The chat JSONL of the splits training reads; a UserError naming the first one missing or empty."""
    files = {split: data_dir / "chat" / f"{split}.jsonl" for split in TRAINING_SPLITS}
    for path in files.values():
        if not path.is_file() or path.stat().st_size == 0:
            raise UserError(
                f"{path}: no pairs; --data takes a folder written by `threadmed snomed oracle-data`", "--data"
            )
    return files


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
