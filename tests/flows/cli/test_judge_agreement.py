"""`threadmed judge agreement`: the table it prints, the files it writes; its refusals, one line, exit 2."""

import json

import pytest

from tests.flows.cli.terminal import assert_usage_error, threadmed_before_any_flow, threadmed_here
from tests.tasks.benchmarks.threadmed.agreement_fixtures import (
    JUDGE,
    judge_grades,
    write_judged_run,
    write_labels,
)


def test_a_labels_folder_without_ratings_is_refused(tmp_path):
    write_labels(tmp_path / "labels", rated=False)
    write_judged_run(tmp_path / "r1", "r1", judge_grades())
    assert_usage_error(
        threadmed_before_any_flow("judge", "agreement", "r1", "--labels", "labels", cwd=tmp_path),
        "Invalid value for '--labels': labels has no ratings.parquet: run `threadmed labels import labels "
        "CSV...` first",
    )


def test_a_run_of_other_answers_is_refused(tmp_path):
    write_labels(tmp_path / "labels")
    write_judged_run(tmp_path / "r1", "r1", judge_grades())
    write_judged_run(tmp_path / "r9", "r9", judge_grades(), other_answer_at=3)
    assert_usage_error(
        threadmed_before_any_flow("judge", "agreement", "r1", "r9", "--labels", "labels", cwd=tmp_path),
        "Invalid value for 'RUN_DIRS...': r9 holds another answer to sampled item i3 (alpha, baseline, c2, "
        "turn 0) than the sampled run r1: pass that run or runs re-judged from it",
    )
    assert not (tmp_path / "labels" / "agreement").exists()


@pytest.mark.slow
def test_agreement_prints_the_table_and_writes_its_files(tmp_path):
    write_labels(tmp_path / "labels", {"ann": "clinician", "sim": "simulated"})
    write_judged_run(tmp_path / "r1", "r1", judge_grades())
    write_judged_run(tmp_path / "r2", "r2", judge_grades(), judge={**JUDGE, "epoch": 1})
    result = threadmed_here(
        "judge", "agreement", "r1", "r2", "--labels", "labels", "--resamples", "200", "--seed", "3",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = tmp_path / "labels" / "agreement"
    agreement = json.loads((out / "agreement.json").read_text())
    assert agreement["bootstrap"] == {
        "n_resamples": 200, "seed": 3, "level": 0.95, "method": "percentile, resampling items",
    }  # fmt: skip
    printed = [line.strip("│ ") for line in result.stdout.splitlines()]
    assert "Judge agreement" in printed
    # A row's first line: its n column holds a number (a long cell wraps onto lines below).
    rows = [[cell.strip() for cell in line.split("│")[:3]] for line in printed if "│" in line]
    assert [row for row in rows if row[-1].isdigit()] == [
        ["J1", "consensus (simulated)", "10"],
        ["J2", "consensus (simulated)", "10"],
        ["R1", "R2", "9"],
        ["all raters", "", "9"],
    ]
    caption = " ".join(line.strip() for line in result.stdout.split("└")[-1].splitlines()[1:3])
    judge = "openai/gpt-4o (judge_rubric_v1, temperature=0.7, epoch 0)"
    assert caption.startswith(
        f"estimate [95% bootstrap CI over items; none from fewer than 10 items]. J1 = {judge}"
    )
    assert "0.67 (no interval: 9 items, fewer" in result.stdout  # the raters' pair: 9 items
    assert any(line.startswith("Note: Agreement is with SIMULATED raters") for line in printed)
    # Same judge at two epochs, same grades: it never changed a grade.
    assert [(row["samples"], row["n"], row["drift"]) for row in agreement["tables"]["drift"]] == [
        ("temperature=0.7 epoch 0; temperature=0.7 epoch 1", 10, 0.0)
    ]
    assert (out / "fig_agreement.png").stat().st_size > 0
