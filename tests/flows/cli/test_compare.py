"""`threadmed compare`: the table it prints and the files it writes; its refusal of runs over other items."""

import pytest

from tests.flows.cli.terminal import assert_usage_error, threadmed_before_any_flow, threadmed_here
from tests.tasks.benchmarks.threadmed.test_compare import ALPHA, two_runs
from tests.tasks.benchmarks.threadmed.test_report import make_run


def test_runs_over_other_threads_are_refused_in_one_line(tmp_path):
    make_run(tmp_path, ALPHA, "r1")
    make_run(tmp_path, {("beta", "baseline"): {"c2": [0, 1]}}, "r2")
    assert_usage_error(
        threadmed_before_any_flow("compare", "r1", "r2", cwd=tmp_path),
        "Invalid value for 'RUN_DIRS...': run r2 lacks 2 threads: c1, c3; compare runs over the same threads",
    )


@pytest.mark.slow
def test_compare_prints_the_differences_and_writes_its_files(tmp_path):
    two_runs(tmp_path)
    result = threadmed_here(
        "compare", "r1", "r2", "--models", "alpha,beta", "--out", "out", "--resamples", "200", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    lines = [line.strip("│ ") for line in result.stdout.splitlines()]
    assert "Paired differences between models" in lines
    rows = [[cell.strip() for cell in line.split("│")] for line in lines if line.startswith("alpha")]
    assert [row[:6] + row[9:] for row in rows[:2]] == [
        ["alpha", "beta", "score", "baseline", "all", "9", "Wilcoxon", "0.984"],
        ["alpha", "beta", "score", "baseline", "T0", "3", "Wilcoxon", "0.500"],
    ]
    for name in ("compare.md", "index.html", "compare_differences.parquet", "compare_items.parquet"):
        assert (tmp_path / "out" / name).stat().st_size > 0
        assert f"out/{name}" in result.stdout
