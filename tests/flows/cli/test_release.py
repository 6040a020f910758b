"""`threadmed compare-release`, the real command (in this process: no flow), on a tiny
hand-made release."""

import shutil

from tests.flows.cli.terminal import assert_usage_error, threadmed_here
from tests.tasks.benchmarks.threadmed.test_release import write_build, write_release


def test_the_comparison_prints_both_subsets_and_a_release_laid_out_otherwise_is_a_usage_error(tmp_path):
    build, release = write_build(tmp_path), write_release(tmp_path)
    result = threadmed_here("compare-release", build, "--release", release, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    titles = [line.strip() for line in result.stdout.splitlines() if line.strip().endswith("subset")]
    rows = [[cell.strip() for cell in line.strip("│").split("│")] for line in result.stdout.splitlines()]
    assert titles == ["answered subset", "full subset"]
    assert [row for row in rows if row[0] == "Questions"] == [
        ["Questions", "10", "10", "+0"],
        ["Questions", "10", "11", "-1"],
    ]

    shutil.rmtree(release / "answered")
    assert_usage_error(
        threadmed_here("compare-release", build, "--release", release, cwd=tmp_path),
        f"Invalid value for '--release': {release} holds no answered/qa_pairs.parquet, .csv or .jsonl: lay "
        "out your copy of the release as tasks/benchmarks/threadmed/README.md says",
    )
