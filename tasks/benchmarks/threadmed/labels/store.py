"""Read and write a labels folder's sample: sample.json, items.parquet and rate.html."""

from pathlib import Path
from typing import Any

import pyarrow as pa

from tasks.benchmarks.threadmed.contracts import LABEL_ITEMS
from tasks.benchmarks.threadmed.labels.folder import (
    ITEMS_FILE,
    PAGE_FILE,
    SAMPLE_FILE,
    read_items,
    read_sample_info,
)
from tasks.benchmarks.threadmed.labels.page import render_rating_page
from tasks.benchmarks.threadmed.labels.sample import LabelSample, judged_turns
from tasks.core.files import write_json_atomic, write_parquet_atomic, write_text_atomic
from tasks.core.preflight import UserError


def check_same_sample(labels_dir: Path, sample: LabelSample) -> None:
    """Raise UserError when `labels_dir` already holds a sample other than `sample` (ratings of another
    sample must not be mixed with its items); the same sample may be written again."""
    if not (Path(labels_dir) / SAMPLE_FILE).exists():
        return
    held = read_sample_info(labels_dir)
    held_items = read_items(labels_dir)["item_id"].to_pylist()
    if held["run_id"] != sample.info["run_id"] or held_items != [item["item_id"] for item in sample.items]:
        raise UserError(
            f"{labels_dir} already holds another sample (run {held['run_id']}, seed {held['seed']}, "
            f"{held['n']} items): pass a new --out folder, or delete this one to start over",
            "--out",
        )


def write_sample(labels_dir: Path, sample: LabelSample) -> None:
    """Write items.parquet, rate.html, then sample.json (last: a folder with it holds a whole sample)."""
    items = pa.Table.from_pylist(sample.items, schema=LABEL_ITEMS.schema)
    write_parquet_atomic(Path(labels_dir) / ITEMS_FILE, items)
    write_text_atomic(Path(labels_dir) / PAGE_FILE, render_rating_page(sample))
    write_json_atomic(Path(labels_dir) / SAMPLE_FILE, sample.info)


def read_item_texts(labels_dir: Path) -> list[dict[str, Any]]:
    """The sample's items in page order with their texts, read again from the sampled run."""
    info = read_sample_info(labels_dir)
    run_dir = Path(info["run_dir"])
    if not run_dir.is_dir():
        raise UserError(
            f"the run {run_dir} that {labels_dir} samples is gone: restore it to read its answers"
        )
    texts = {turn["item_id"]: turn for turn in judged_turns(run_dir)}
    item_ids = read_items(labels_dir)["item_id"].to_pylist()
    missing = [item_id for item_id in item_ids if item_id not in texts]
    if missing:
        raise UserError(
            f"{len(missing)} items of {labels_dir} (first {missing[0]}) are no longer judged turns of run "
            f"{run_dir}: restore the run the sample was drawn from"
        )
    return [texts[item_id] for item_id in item_ids]
