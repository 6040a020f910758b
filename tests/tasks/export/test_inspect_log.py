"""Inspect logs of every benchmark's run, read back by inspect_ai's reader and served by `inspect view`."""

import json
import math
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.registry import BENCHMARKS
from tasks.export.samples import Message, RunScore, RunScores
from tests.prefect_server import free_port
from tests.tasks.benchmarks.threadmed.test_report import words
from tests.tasks.export.runs import make_runs

# What each run's score table holds per sample: (table, its model and sample columns, the headline score).
SCORED = {
    "threadmed": ("judgments", "judge"),
    "snomed": ("scores", "f1"),
    "consult": ("scores", "composite"),
}
INSPECT = str(Path(sys.executable).with_name("inspect"))
STAGES = ("history", "diagnosis", "treatment", "follow_up")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def logs(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tasks.export.inspect_log import write_inspect_logs  # inspect_ai: 3 s of every worker's collection

    out = tmp_path_factory.mktemp("logs")
    for benchmark, run_dir in runs.items():
        write_inspect_logs(BENCHMARKS[benchmark].export(run_dir), out)
    return out


def stored_scores(run_dir: Path, benchmark: str) -> dict[str, dict[str, float | None]]:
    """model -> sample id -> headline score, as the run's own table holds them."""
    table, column = SCORED[benchmark]
    scores: dict[str, dict[str, float | None]] = {}
    for row in pq.read_table(run_dir / f"{table}.parquet").to_pylist():
        sample_id = (
            f"{row['thread_id']}/{row['condition']}/turn-{row['turn']}"
            if benchmark == "threadmed"
            else row["case_id"]
        )
        scores.setdefault(row["model"], {})[sample_id] = row["score" if benchmark == "threadmed" else column]
    return scores


def headline(value: object, benchmark: str) -> float | None:
    """A sample's headline score out of its Inspect score value (NaN: unscored)."""
    score = value if isinstance(value, float) else value[SCORED[benchmark][1]]  # type: ignore[index]
    return None if score is None or math.isnan(score) else score


def test_every_log_reads_back_with_each_stored_sample_and_score(runs, logs) -> None:
    from inspect_ai.analysis import samples_df
    from inspect_ai.log import read_eval_log

    files = sorted(logs.glob("*.eval"))
    assert len(files) == 6  # two models in each of the three runs
    read = {}
    for path in files:
        log = read_eval_log(str(path))
        benchmark = log.eval.task
        scorer = log.results.scores[0].scorer
        model = log.eval.model_args["name"]
        read.setdefault(benchmark, {})[model] = {
            sample.id: headline(sample.scores[scorer].value, benchmark) for sample in log.samples
        }
        assert log.status == "success" and log.eval.run_id == "r1"
    assert read == {benchmark: stored_scores(run_dir, benchmark) for benchmark, run_dir in runs.items()}
    # Inspect's dataframe API reads them too: one row per sample of every log.
    assert len(samples_df(str(logs), quiet=True)) == sum(
        len(models) for b in read.values() for models in b.values()
    )


def test_a_log_flushed_in_blocks_reads_back_as_inspects_own_writer_writes_it(runs, tmp_path) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    from tasks.export.inspect_log import _write_log, eval_log

    run = BENCHMARKS["threadmed"].export(runs["threadmed"])
    log = eval_log(run, run.models[0])
    assert len(log.samples) > 4  # more than two blocks of two, and a part block
    _write_log(log, tmp_path / "blocks.eval", samples_per_flush=2)
    write_eval_log(log, str(tmp_path / "whole.eval"), format="eval")
    blocks, whole = (read_eval_log(str(tmp_path / f"{name}.eval")) for name in ("blocks", "whole"))
    assert blocks.model_dump(exclude={"location", "etag"}) == whole.model_dump(exclude={"location", "etag"})
    assert sorted(s.id for s in blocks.samples) == sorted(s.id for s in log.samples)  # each one once


def test_a_threadmed_sample_keeps_its_turn_history_judge_reason_and_usage(logs) -> None:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(next(logs.glob("*_threadmed_beta_*.eval"))))
    by_id = {sample.id: sample for sample in log.samples}
    turn = by_id["c1/baseline/turn-1"]
    answer_0 = " ".join(["word"] * words("beta", "c1", 0))
    assert [(m.role, m.text) for m in turn.input] == [
        ("user", "question c1 0"),
        ("assistant", answer_0),
        ("user", "question c1 1"),
    ]
    assert turn.target == "w w "
    assert turn.metadata | {} == {
        "thread_id": "c1", "turn": 1, "condition": "baseline", "epoch": 0, "call_key": None,
        "judge_call_key": None, "judge_parse_status": "ok", "judge_model": None, "rubric_version": None,
        "status": "ok",
    }  # fmt: skip
    assert turn.scores["judge"].explanation == "reason c1 1"
    assert (turn.epoch, turn.output.completion) == (1, " ".join(["word"] * words("beta", "c1", 1)))
    assert (turn.role_usage["judge"].total_cost, turn.model_usage["beta"].total_cost) == (0.01, 0.003)
    failed = by_id["c1/baseline/turn-2"]
    assert (failed.error.message, failed.scores["judge"].reason) == ("answer failed", "not_run")
    assert math.isnan(failed.scores["judge"].value)
    assert log.eval.model_roles["judge"].model == "openai/gpt-4o"
    assert log.results.completed_samples == log.results.total_samples - 1
    # beta's 10 judged baseline turns (tests/tasks/benchmarks/threadmed/test_report.py SCORES) sum to 5.
    assert {name: metric.value for name, metric in log.results.scores[0].metrics.items()} == {
        "mean baseline": 0.5
    }


def test_a_consultation_logs_results_are_the_reports_composite_and_stage_scores(runs, logs) -> None:
    from inspect_ai.log import read_eval_log

    from tasks.benchmarks.consult.report import compute_metrics
    from tasks.benchmarks.consult.report_metrics import ReportSettings
    from tasks.benchmarks.consult.run_data import load_runs

    report = compute_metrics(load_runs([runs["consult"]]), ReportSettings(n_resamples=10))[0]["models"]
    for model in ("alpha", "beta"):
        log = read_eval_log(str(next(logs.glob(f"*_consult_{model}_*.eval"))), header_only=True)
        [score] = log.results.scores
        composite = report[model]["composite"]
        shown = {"composite": composite["score"], **{stage: composite[stage] for stage in STAGES}}
        # beta's c1 has no FQR grade read: its own composite is undefined, its other metrics still count.
        assert {name: metric.value for name, metric in score.metrics.items()} == shown
        assert score.metadata["results"].startswith("consult.md's composite and stage scores")
        assert "undefined" not in score.metadata


def test_a_run_score_undefined_over_the_run_is_named_never_shown_as_a_number(runs) -> None:
    from tasks.export.inspect_log import results

    run = BENCHMARKS["consult"].export(runs["consult"])
    scores = [RunScore(name="composite", value=None), RunScore(name="history", value=0.5)]
    run = run.model_copy(update={"results": RunScores(note="how", by_model={"alpha": scores})})
    [score] = results(run, "alpha", run.samples["alpha"]).scores
    assert {name: metric.value for name, metric in score.metrics.items()} == {"history": 0.5}
    assert score.metadata == {"score": "composite", "results": "how", "undefined": ["composite"]}


def test_an_oracle_turn_is_asked_with_the_physician_answers(runs) -> None:
    run = BENCHMARKS["threadmed"].export(runs["threadmed"])
    sample = next(s for s in run.samples["alpha"] if s.sample_id == "c2/oracle/turn-2")
    assert sample.input == [
        Message(role="user", content="question c2 0"),
        Message(role="assistant", content="w "),
        Message(role="user", content="question c2 1"),
        Message(role="assistant", content="w w "),
        Message(role="user", content="question c2 2"),
    ]


def test_inspect_view_lists_the_logs(logs) -> None:
    port = free_port()
    viewer = subprocess.Popen(
        [INSPECT, "view", "--log-dir", str(logs), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        listing = None
        for _ in range(600):  # until it answers: a busy machine starts it slowly
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/logs", timeout=5) as response:
                    listing = json.load(response)
                break
            except OSError:
                assert viewer.poll() is None, "inspect view exited"
                time.sleep(0.5)
        assert listing is not None
        names = sorted(Path(entry["name"]).name for entry in listing["files"])
        assert names == sorted(path.name for path in logs.glob("*.eval"))
    finally:
        viewer.terminate()
        viewer.wait(timeout=60)
