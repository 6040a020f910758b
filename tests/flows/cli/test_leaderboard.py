"""`threadmed leaderboard`, the real command (in this process: no flow), on runs whose manifests the
evaluation's own writer wrote (no model called: the plan reads the dataset, the summary is hand-written)."""

import csv
import json
from pathlib import Path

from tasks.benchmarks.threadmed.contracts import JUDGMENTS, RESPONSES
from tasks.benchmarks.threadmed.plan import build_plan
from tasks.core.run_folder import claim_run_folder
from tasks.evals.config import EvaluationSettings, JudgeSpec, RunOverrides
from tasks.evals.outputs import GroupSummary, RunSummary, write_manifest, write_table
from tests.eval_fixtures import OFFLINE, write_dataset
from tests.flows.cli.terminal import assert_usage_error, threadmed_here


def write_run(
    dataset: Path, run_dir: Path, model: str, score: float, judge_epoch: int, rows: str = "every planned item"
) -> Path:
    """A finished ThReadMed run of one model, as evaluate-models records it; its responses and judgments hold
    a row of every planned (condition, thread), or (rows="none") none."""
    config = OFFLINE.with_overrides(RunOverrides(models=[model]))
    config = config.model_copy(update={"judge": JudgeSpec(model=config.judge.model, epoch=judge_epoch)})
    settings = EvaluationSettings(dataset_dir=dataset, run_dir=run_dir, config=config)
    plan = build_plan(settings)
    groups = [GroupSummary(model=model, group="baseline", counts={}, score=score, cost_usd=0.0)]
    summary = RunSummary(run_id=plan.run_id, run_dir=run_dir, groups=groups, failed_calls={})
    claim_run_folder(run_dir, "threadmed")
    keys = [
        {"run_id": plan.run_id, "model": job.solve.model.name, "condition": job.solve.condition,
         "thread_id": job.solve.thread.thread_id, "turn": job.solve.turns[0]}
        for job in plan.jobs
        if rows == "every planned item"
    ]  # fmt: skip
    for contract in (RESPONSES, JUDGMENTS):
        write_table(keys, contract, run_dir / f"{contract.name}.parquet")
    write_manifest.fn(settings, plan, summary)
    return run_dir


def test_runs_of_two_judge_epochs_are_two_tables_each_row_with_its_provenance(tmp_path):
    dataset = write_dataset(tmp_path / "build")
    runs = [
        write_run(dataset, tmp_path / "deferral", "threadmed/deferral", 12.5, judge_epoch=0),
        write_run(dataset, tmp_path / "retrieval", "retrieval", 40.0, judge_epoch=0),
        write_run(dataset, tmp_path / "rejudged", "threadmed/deferral", 20.0, judge_epoch=1),
    ]
    result = threadmed_here("leaderboard", *runs, "--out", tmp_path / "board", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    assert (
        result.stdout.split()
        == (
            f"Wrote 2 tables (3 rows) from 3 runs to {tmp_path / 'board'}: leaderboard.md, leaderboard.html "
            "and a CSV per table."
        ).split()
    )
    with (tmp_path / "board" / "leaderboard-threadmed-1.csv").open() as file:
        first = list(csv.DictReader(file))
    assert [(row["model"], row["mean · condition baseline"]) for row in first] == [
        ("retrieval", "40.0"),
        ("threadmed/deferral", "12.5"),
    ]
    provenance = first[0]
    assert provenance["project version"] == "0.1.0" and len(provenance["config sha256"]) == 64
    assert provenance["judge"].startswith(
        'judge threadmed/overlap-judge {"temperature": 0} rubric judge_rubric_v1'
    )
    assert provenance["judge"].endswith(" epoch 0")
    with (tmp_path / "board" / "leaderboard-threadmed-2.csv").open() as file:
        assert [row["model"] for row in csv.DictReader(file)] == ["threadmed/deferral"]


def test_a_folder_that_is_not_a_run_is_a_usage_error(tmp_path):
    (tmp_path / "dumps").mkdir()
    assert_usage_error(
        threadmed_here("leaderboard", "dumps", "--out", "board", cwd=tmp_path),
        "Invalid value for 'RUN_DIRS...': dumps is not a finished evaluation run (no manifest.json): pass "
        "the --out folder of a finished evaluate",
    )
    assert not (tmp_path / "board").exists()


def test_a_run_is_complete_only_when_its_rows_hold_every_planned_item(tmp_path):
    """The issue's run: a manifest with scores, but responses and judgments of 0 rows. compare refuses it,
    saying what the runs hold; the leaderboard lists it as incomplete, saying what its rows lack."""
    dataset = write_dataset(tmp_path / "build")
    whole = write_run(dataset, tmp_path / "whole", "threadmed/deferral", 12.5, judge_epoch=0)
    empty = write_run(dataset, tmp_path / "empty", "retrieval", 40.0, judge_epoch=0, rows="none")
    threads = json.loads((empty / "manifest.json").read_text())["threads"]
    result = threadmed_here("leaderboard", whole, empty, "--out", tmp_path / "board", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    with (tmp_path / "board" / "leaderboard-threadmed-1.csv").open(newline="") as file:
        statuses = [(row["model"], row["status"]) for row in csv.DictReader(file)]
    lacking = [
        f"condition {condition}: 0 of {threads} threads in {table}"
        for table in ("responses.parquet", "judgments.parquet")
        for condition in ("baseline", "oracle")
    ]
    assert statuses == [
        ("retrieval", f"incomplete: its rows lack planned items ({'; '.join(lacking)})"),
        ("threadmed/deferral", "complete"),
    ]
    assert_usage_error(
        threadmed_here("compare", empty, cwd=tmp_path),
        "Invalid value for '--models': comparing needs two models; the runs hold no row of any model in "
        "responses.parquet",
    )
