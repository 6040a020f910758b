from pathlib import Path

import pytest

from tasks.benchmarks.threadmed.labels.folder import read_items
from tasks.benchmarks.threadmed.labels.sample import build_sample
from tasks.benchmarks.threadmed.labels.store import check_same_sample, read_item_texts, write_sample
from tasks.core.preflight import UserError
from tests.tasks.benchmarks.threadmed.labels.fixtures import RUN_ID


def test_the_same_sample_may_be_written_again_but_not_another(run_dir: Path, tmp_path: Path) -> None:
    sample = build_sample(run_dir, 10, seed=2)
    write_sample(tmp_path, sample)
    check_same_sample(tmp_path, build_sample(run_dir, 10, seed=2))
    with pytest.raises(UserError) as error:
        check_same_sample(tmp_path, build_sample(run_dir, 10, seed=3))
    assert (str(error.value), error.value.option) == (
        f"{tmp_path} already holds another sample (run {RUN_ID}, seed 2, 10 items): pass a new --out folder, "
        "or delete this one to start over",
        "--out",
    )


def test_the_items_texts_are_read_again_from_the_run_in_page_order(run_dir: Path, tmp_path: Path) -> None:
    sample = build_sample(run_dir, 6, seed=2)
    write_sample(tmp_path, sample)
    assert read_items(tmp_path)["item_id"].to_pylist() == [item["item_id"] for item in sample.items]
    assert read_item_texts(tmp_path) == [
        {key: value for key, value in item.items() if key != "position"} for item in sample.items
    ]
