"""`threadmed judge rerun`: a stored run re-judged by the real command, and the runs it refuses in a line."""

import json
import shutil
from pathlib import Path

import pytest

from flows.evaluate_models import evaluate_models
from tasks.llm.ledger import CallLedger
from tests.eval_fixtures import OFFLINE, THREAD_TEXTS, write_dataset
from tests.flows.cli.terminal import assert_usage_error, threadmed_before_any_flow, threadmed_here


@pytest.fixture(scope="module")
def source(tmp_path_factory, prefect_harness) -> Path:
    """A finished offline run: two models' answers to one thread, judged by the overlap judge."""
    folder = tmp_path_factory.mktemp("source")

    config = OFFLINE.model_copy(update={"conditions": ["baseline"]})
    config = config.model_copy(update={"sample": config.sample.model_copy(update={"limit": 1})})
    dataset = write_dataset(folder / "build")
    evaluate_models(dataset_dir=str(dataset), run_dir=str(folder / "run"), config=config, report=False)
    return folder / "run"


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def test_rerun_writes_a_run_of_the_new_judges_grades_and_says_the_answers_were_replayed(source, tmp_path):
    source_calls = CallLedger(source / "ledger").count_succeeded()
    result = threadmed_here(
        "judge", "rerun", source, "--judge", "threadmed/coverage-judge", "--out", "rejudged",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    output = " ".join(result.stdout.split())
    source_id, run_id = manifest(source)["run_id"], manifest(tmp_path / "rejudged")["run_id"]
    assert f"Answers replayed from run {source_id} ({source}): none was asked again;" in output
    assert f"Run {run_id} written to rejudged" in output
    assert (tmp_path / "rejudged" / "report" / "index.html").is_file()  # it reports like any run
    records = CallLedger(tmp_path / "rejudged" / "ledger").records()
    assert {record.model for record in records} == {"threadmed/coverage-judge"}
    assert CallLedger(source / "ledger").count_succeeded() == source_calls


def test_a_folder_that_is_not_a_run_is_refused(tmp_path):
    (tmp_path / "dumps").mkdir()
    assert_usage_error(
        threadmed_before_any_flow("judge", "rerun", "dumps", "--judge", "m", "--out", "new", cwd=tmp_path),
        "Invalid value for 'RUN_DIR': dumps is not a run folder (no benchmark.json): "
        "pass the --out folder of an evaluation",
    )
    assert not (tmp_path / "new").exists()


def test_an_unfinished_run_is_refused(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "benchmark.json").write_text('{"benchmark": "threadmed"}')
    assert_usage_error(
        threadmed_before_any_flow("judge", "rerun", "run", "--judge", "m", "--out", "new", cwd=tmp_path),
        "Invalid value for 'RUN_DIR': run holds an unfinished run (no manifest.json): "
        "finish it first (re-run its evaluate command), then re-judge it",
    )


def test_a_snomed_run_has_no_judge_to_rerun(source, tmp_path):
    run = tmp_path / "snomed"
    shutil.copytree(source, run)
    (run / "benchmark.json").write_text('{"benchmark": "snomed"}')
    assert_usage_error(
        threadmed_before_any_flow("judge", "rerun", run, "--judge", "m", "--out", "new", cwd=tmp_path),
        f"Invalid value for 'RUN_DIR': {run} is a snomed run, which has no judge to re-run; "
        "runs of threadmed, consult can be re-judged",
    )


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_a_run_whose_dataset_changed_is_refused_before_the_command_says_what_it_will_do(
    source, tmp_path, dry_run
):
    changed = {**THREAD_TEXTS, "ankle": ("test", [("Is my ankle broken?", "Get an x-ray.")])}
    build = write_dataset(tmp_path / "build", changed)
    run = tmp_path / "run"
    shutil.copytree(source, run)
    recorded = manifest(run)
    (run / "manifest.json").write_text(
        json.dumps({**recorded, "dataset": {**recorded["dataset"], "dir": str(build)}})
    )
    assert_usage_error(
        result := threadmed_before_any_flow(
            "judge", "rerun", "run", "--judge", "m", "--out", "new", *dry_run, cwd=tmp_path
        ),
        f"Invalid value for 'RUN_DIR': {build} changed since run {recorded['run_id']} answered it (its "
        "fingerprint differs): its answers can only be re-judged against the questions they answered",
    )
    assert result.stdout == ""
    assert not (tmp_path / "new").exists()


def test_only_the_judge_can_be_batched(source, tmp_path):
    arguments = ["judge", "rerun", source, "--judge", "m", "--out", "new", "--batch", "model,judge"]
    assert_usage_error(
        threadmed_before_any_flow(*arguments, cwd=tmp_path),
        "Invalid value for '--batch': only the judge is called when re-judging: give --batch judge",
    )


def test_an_out_folder_inside_the_run_being_rejudged_is_a_usage_error(source, tmp_path):
    inside = source / "rejudged"
    arguments = ["judge", "rerun", source, "--judge", "threadmed/coverage-judge", "--out", inside]
    assert_usage_error(
        threadmed_before_any_flow(*arguments, cwd=tmp_path),
        f"Invalid value for '--out': {inside} is inside the run being re-judged ({source.resolve()}): give "
        "the re-judge a folder of its own, outside it",
    )
    assert not inside.exists()


def test_a_rerun_with_the_run_s_own_judge_reads_its_grades_says_so_and_reports_in_its_place(source, tmp_path):
    grades = [record for record in CallLedger(source / "ledger").records() if "judge" in record.model]
    result = threadmed_here(
        "judge", "rerun", source, "--judge", "threadmed/overlap-judge", "--out", "same", cwd=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr
    reused = f"{len(grades)} reused from earlier runs' ledgers (USD 0.0000)"
    assert [line for line in result.stdout.splitlines() if line.startswith("Calls ")] == [
        f"Calls made by this invocation: {reused}",
        f"Calls of the run, every invocation: {reused}",
    ]
    output = " ".join(result.stdout.split())
    source_id = manifest(source)["run_id"]
    assert (
        f"Its judge, rubric and parameters are those of run {source_id} ({source.resolve()}): every grade "
        "that run holds is read from its ledger, not asked again, and this folder is that run (the same run "
        "id): report it in that run's place, not beside it."
    ) in output
    assert manifest(tmp_path / "same")["run_id"] == source_id
    assert (tmp_path / "same" / "report" / "index.html").is_file()  # it reports alone
    beside = threadmed_before_any_flow("report", source, "same", "--lake", "lake", cwd=tmp_path)
    assert_usage_error(
        beside,
        f"Invalid value for 'RUN_DIRS...': the same run is given more than once ({source_id} in {source}, "
        f"{tmp_path / 'same'}): give each run once",
    )
