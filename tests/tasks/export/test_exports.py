"""What `threadmed export` refuses, in one line: a folder with no run, a run whose dataset is gone, the
Inspect format without inspect_ai."""

import shutil
import sys
from pathlib import Path

import pytest

from tasks.benchmarks.threadmed.export import exported_run
from tasks.core.preflight import UserError
from tasks.export.exports import inspect_writer, run_benchmark
from tests.tasks.export.runs import make_runs


def test_a_folder_with_no_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError) as refused:
        run_benchmark(tmp_path)
    assert str(refused.value) == (
        f"{tmp_path} is not a run folder (no benchmark.json): pass the --out folder of an evaluate command"
    )


def test_a_threadmed_run_whose_dataset_is_gone_is_refused(tmp_path: Path) -> None:
    run_dir = make_runs(tmp_path)["threadmed"]
    shutil.rmtree(build := tmp_path / "threadmed" / "build")
    with pytest.raises(UserError) as refused:
        exported_run(run_dir)
    assert str(refused.value) == (
        f"{run_dir}: its dataset build {build} is not there (no qa_pairs.parquet); "
        "put it back where the run found it to export the questions"
    )


def test_the_inspect_format_without_inspect_ai_says_how_to_install_it(monkeypatch) -> None:
    # An import of a module set to None raises ModuleNotFoundError, as if it were not installed.
    for name in ["inspect_ai", *(name for name in sys.modules if name.startswith("inspect_ai."))]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "tasks.export.inspect_log", raising=False)
    with pytest.raises(UserError) as refused:
        inspect_writer()
    assert str(refused.value) == (
        "--format inspect needs inspect_ai, the inspect extra: pip install -e '.[inspect]'"
    )
