"""An FQR judge panel: a consultation run's episodes re-judged by hand-made runs laid out as `threadmed judge
rerun` writes them (the source's messages under the new run id, SCORES with the new judge's verdicts, a
manifest with `rejudge` and `config.judge.epoch`), every number worked out by hand below."""

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.consult.contracts import MESSAGES, SCORES
from tasks.benchmarks.consult.report import build_report, compute_metrics
from tasks.benchmarks.consult.run_data import load_runs
from tasks.benchmarks.consult.tables import build_tables
from tasks.core.preflight import UserError
from tasks.evals.outputs import write_table
from tests.tasks.benchmarks.consult.report_fixtures import FOLLOW_UP, SETTINGS, make_run

# alpha's completed episodes (c1, c2): per follow-up, (core, verdict of each judge). Core concerns weigh 2.
CORE = {"c1": [True, False, False], "c2": [True, False]}
SOURCE = {"c1": [True, True, False], "c2": [False, True]}  # FQR c1 (2 + 1) / 4, c2 1 / 3
JUDGE_B = {"c1": [True, False, False], "c2": [True, True]}
JUDGE_B_EPOCH_1 = {"c1": [True, False, True], "c2": [True, True]}
# judge-b's verdict is the lower of its epochs' (c1 [T, F, F], c2 [T, T]: FQR 2/4 and 3/3); the panel's is
# the lower of two judges': c1 [T, F, F] -> 2/4, c2 [F, T] -> 1/3.


def follow_ups(case_id: str, verdicts: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The case's follow-ups judged `verdicts`: True, False, or "U" for a judgment that did not parse."""
    return [
        {**FOLLOW_UP, "index": index, "core": core, "judge_reason": f"verdict {verdict}",
         **({"correct": None, "judge_status": "unparseable"} if verdict == "U" else {"correct": verdict})}
        for index, (core, verdict) in enumerate(zip(CORE[case_id], verdicts[case_id], strict=True))
    ]  # fmt: skip


def fqr(case_id: str, verdicts: dict[str, list[Any]]) -> float | None:
    weights, graded = [2.0 if core else 1.0 for core in CORE[case_id]], verdicts[case_id]
    judged = [(w, v) for w, v in zip(weights, graded, strict=True) if v != "U" and v is not None]
    return sum(w for w, v in judged if v) / sum(w for w, _ in judged) if judged else None


def judged(
    run: Path,
    run_id: str,
    judge: str,
    verdicts: dict[str, list[bool]],
    epoch: int = 0,
    params: dict[str, Any] | None = None,
) -> Path:
    """`run`'s episodes as judged by `judge` in `epoch` (sent `params`, none when not given), into a folder
    named `run_id` beside it."""
    out = run.parent / run_id
    out.mkdir(exist_ok=True)
    messages = [{**row, "run_id": run_id} for row in pq.read_table(run / "messages.parquet").to_pylist()]
    for row in messages:
        if row["role"] == "agent":
            row["call_key"] = f"k-{row['model']}-{row['case_id']}-{row['stage']}-{row['turn']}"
    scores = []
    for row in pq.read_table(run / "scores.parquet").to_pylist():
        row = {**row, "run_id": run_id, "judge_model": judge}
        if row["status"] == "completed":
            row.update(follow_ups=follow_ups(row["case_id"], verdicts), fqr=fqr(row["case_id"], verdicts))
        scores.append(row)
    write_table(messages, MESSAGES, out / "messages.parquet")
    write_table(scores, SCORES, out / "scores.parquet")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["run_id"] = run_id
    manifest["config"]["judge"] = {"model": judge, "epoch": epoch, **({"params": params} if params else {})}
    if run.name != run_id:
        manifest["rejudge"] = {"source_run_id": run.name, "source_run_dir": str(run), "judge_epoch": epoch}
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


@pytest.fixture
def panel_runs(tmp_path: Path) -> list[Path]:
    source = judged(make_run(tmp_path, "r1", ["alpha"]), "r1", "threadmed/consult-judge", SOURCE)
    return [
        source,
        judged(source, "r2", "x/judge-b", JUDGE_B),
        judged(source, "r3", "x/judge-b", JUDGE_B_EPOCH_1, epoch=1),
    ]


def test_fqr_is_the_panels_beside_each_judges(panel_runs: list[Path]) -> None:
    metrics = compute_metrics(load_runs(panel_runs), SETTINGS)[0]
    assert metrics["models"]["alpha"]["fqr"]["mean"] == pytest.approx((2 / 4 + 1 / 3) / 2)
    entry = metrics["judge_panel"]["models"]["alpha"]
    assert {label: judge["mean"] for label, judge in entry["judges"].items()} == {
        "threadmed/consult-judge": pytest.approx((3 / 4 + 1 / 3) / 2),
        "x/judge-b": pytest.approx((2 / 4 + 1) / 2),
    }
    assert entry["panel"] == metrics["models"]["alpha"]["fqr"]
    # The judges differ on c1's second follow-up and c2's first, of 5; judge-b's epochs on c1's third.
    assert entry["disagreement"] == {"n": 5, "count": 2, "share": 0.4, "share_undefined": None}
    assert entry["pairs"] == [
        {"judges": ["threadmed/consult-judge", "x/judge-b"], "n": 5, "exact": 0.6, "exact_undefined": None}
    ]
    assert entry["judges"]["x/judge-b"]["drift"] == {
        "n": 5,
        "count": 1,
        "share": 0.2,
        "share_undefined": None,
    }
    assert entry["judges"]["threadmed/consult-judge"]["drift"] is None
    assert [
        (judge["label"], judge["samples"], judge["runs"]) for judge in metrics["judge_panel"]["judges"]
    ] == [
        ("threadmed/consult-judge", ["epoch 0"], ["r1"]),
        ("x/judge-b", ["epoch 0", "epoch 1"], ["r2", "r3"]),
    ]
    assert metrics["models"]["alpha"]["judge"]["models"] == ["threadmed/consult-judge", "x/judge-b"]
    table = next(table for table in build_tables(metrics) if table.key == "fqr-judge-panel")
    assert [row[:4] + row[5:] for row in table.rows] == [
        ["alpha", "threadmed/consult-judge", "1", "2", "—", ""],
        ["alpha", "x/judge-b", "2", "2", "20.0 (1 of 5)", ""],
        ["alpha", "panel", "", "2", "", "40.0 (2 of 5)"],
    ]


def test_a_follow_up_one_judge_could_not_grade_has_no_panel_verdict_and_counts_as_unparseable(
    tmp_path: Path,
) -> None:
    """The source's judge says correct to c1's first follow-up (core) and judge-b's reply did not parse: with
    two judges the panel's verdict is the lower vote, so dropping the missing one would make it correct.
    It has none: c1's FQR is the panel's over its other follow-ups (judge-b says both wrong: 0 / 2)."""
    source = judged(make_run(tmp_path, "r1", ["alpha"]), "r1", "threadmed/consult-judge", SOURCE)
    unread_first = {"c1": ["U", False, False], "c2": [True, True]}
    runs = [source, judged(source, "r2", "x/judge-b", unread_first)]
    rows = {row["case_id"]: row for row in load_runs(runs).scores if row["model"] == "alpha"}
    c1 = rows["c1"]
    assert [(turn["correct"], turn["judge_status"]) for turn in c1["follow_ups"]] == [
        (None, "unparseable"),
        (False, "ok"),
        (False, "ok"),
    ]
    assert (c1["fqr"], c1["fqr_judged"], c1["fqr_unparseable"]) == (0.0, 2, 1)
    metrics = compute_metrics(load_runs(runs), SETTINGS)[0]
    assert metrics["models"]["alpha"]["fqr"]["mean"] == pytest.approx((0.0 + 1 / 3) / 2)


def test_a_judge_at_two_temperatures_is_one_judge_with_two_samples(tmp_path: Path) -> None:
    """judge-b at temperature 0 and at 0.7 is one judge whose verdict is the lower of its two samples'; with
    the source's judge that is two judges, so each follow-up's verdict is the lower of theirs (FQR c1 2/4,
    c2 1/3), as with judge-b's two epochs above. Counted as two judges, judge-b would outvote the source."""
    source = judged(make_run(tmp_path, "r1", ["alpha"]), "r1", "threadmed/consult-judge", SOURCE)
    runs = [
        source,
        judged(source, "r2", "x/judge-b", JUDGE_B, params={"temperature": 0}),
        judged(source, "r3", "x/judge-b", JUDGE_B_EPOCH_1, params={"temperature": 0.7}),
    ]
    metrics = compute_metrics(load_runs(runs), SETTINGS)[0]
    assert metrics["models"]["alpha"]["fqr"]["mean"] == pytest.approx((2 / 4 + 1 / 3) / 2)
    assert [
        (judge["label"], judge["samples"], judge["runs"]) for judge in metrics["judge_panel"]["judges"]
    ] == [
        ("threadmed/consult-judge", ["epoch 0"], ["r1"]),
        ("x/judge-b", ["temperature=0 epoch 0", "temperature=0.7 epoch 0"], ["r2", "r3"]),
    ]
    table = next(table for table in build_tables(metrics) if table.key == "fqr-judge-panel")
    assert [row[:2] + row[2:3] for row in table.rows] == [
        ["alpha", "threadmed/consult-judge", "1"],
        ["alpha", "x/judge-b", "2"],
        ["alpha", "panel", ""],
    ]


def test_the_page_shows_the_panel(panel_runs: list[Path], tmp_path: Path) -> None:
    report = Path(
        build_report.fn(run_dirs=list(map(str, panel_runs)), out_dir=str(tmp_path / "out"), settings=SETTINGS)
    )
    assert 'id="table-fqr-judge-panel"' in (report / "index.html").read_text()
    assert "### FQR judge panel" in (report / "report.md").read_text()


def test_judges_of_different_episodes_are_refused_in_one_line(panel_runs: list[Path]) -> None:
    source, other = panel_runs[0], panel_runs[1]
    messages = pq.read_table(other / "messages.parquet").to_pylist()
    agent = next(i for i, row in enumerate(messages) if row["role"] == "agent")
    messages[agent]["call_key"] = "k-another-call"
    write_table(messages, MESSAGES, other / "messages.parquet")
    with pytest.raises(UserError) as caught:
        load_runs([source, other])
    assert str(caught.value) == (
        f"these runs were judged by different FQR judges, so their scores are not comparable (r1 ({source}): "
        f"threadmed/consult-judge {{}}; r2 ({other}): x/judge-b {{}}): report them separately (a judge panel "
        "needs every judge to grade the same episodes)"
    )


def test_judges_with_no_follow_up_in_common_have_undefined_agreement_not_a_dash(tmp_path: Path) -> None:
    """judge-b graded no follow-up (every verdict unread): its agreement with the source's judge is undefined,
    with the reason, in metrics.json and the table, never a dash or 0."""
    source = judged(make_run(tmp_path, "r1", ["alpha"]), "r1", "threadmed/consult-judge", SOURCE)
    unread = {case: [None] * len(verdicts) for case, verdicts in JUDGE_B.items()}
    metrics = compute_metrics(load_runs([source, judged(source, "r2", "x/judge-b", unread)]), SETTINGS)[0]
    entry = metrics["judge_panel"]["models"]["alpha"]
    nobody = "undefined: no follow-up graded by both judges"
    assert entry["pairs"] == [
        {"judges": ["threadmed/consult-judge", "x/judge-b"], "n": 0, "exact": None, "exact_undefined": nobody}
    ]
    assert entry["disagreement"] == {"n": 0, "count": 0, "share": None, "share_undefined": nobody}
    table = next(table for table in build_tables(metrics) if table.key == "fqr-judge-agreement")
    assert table.rows == [["alpha", "threadmed/consult-judge = x/judge-b", "0", nobody]]
