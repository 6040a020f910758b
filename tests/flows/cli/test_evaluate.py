"""`threadmed evaluate`: a folder that is not a build, or an unknown split, is a usage error."""

from tests.eval_fixtures import write_dataset
from tests.flows.cli.terminal import OFFLINE_MODELS, assert_usage_error, threadmed


def test_evaluate_on_a_folder_that_is_not_a_build(tmp_path):
    (tmp_path / "dumps").mkdir()
    result = threadmed("evaluate", "--dataset", "dumps", "--out", "run", *OFFLINE_MODELS, cwd=tmp_path)
    assert_usage_error(
        result,
        "Invalid value for '--dataset': dumps is not a dataset build (no dataset/answered/threads.parquet); "
        "pass the --out folder of `threadmed build`",
    )
    assert not (tmp_path / "run").exists()


def test_an_unknown_split_lists_the_splits_of_the_dataset(tmp_path):
    write_dataset(tmp_path / "build")
    arguments = ["--dataset", "build", "--out", "run", *OFFLINE_MODELS, "--split", "tset"]
    assert_usage_error(
        threadmed("evaluate", *arguments, cwd=tmp_path),
        "Invalid value for '--split': build has no thread in split 'tset'; "
        "choose one of: test (3 threads), train (2 threads), val (1 thread)",
    )
    assert not (tmp_path / "run").exists()
