"""A judge panel: one run's answers re-judged by hand-made runs laid out as `threadmed judge rerun` writes
them (the source's responses with the new run id, the new judge's judgments, a manifest with `rejudge` and
`config.judge.epoch`), every number worked out by hand below."""

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.threadmed.contracts import JUDGMENTS, RESPONSES
from tasks.benchmarks.threadmed.report import ReportSettings, build_report, compute_metrics
from tasks.benchmarks.threadmed.run_data import load_runs
from tasks.benchmarks.threadmed.tables import panel_summary_table
from tasks.core.preflight import UserError
from tasks.report.html import PACKED_DATA_TYPE, unpack_json
from tests.chromium import Page
from tests.tasks.benchmarks.threadmed.test_report import PANEL_HINT, SCORES, make_run
from tests.tasks.benchmarks.threadmed.test_report_html import _chromium

SETTINGS = ReportSettings(n_resamples=200)
ALPHA = {("alpha", "baseline"): SCORES["alpha", "baseline"]}
# The source run's judge (openai/gpt-4o) grades ALPHA: c1 [1, 0, 0], c2 [0.5, 1, 0.5, 1], c3 [0.5, 0, U, 0].
# judge-b graded twice (epochs 0 and 1) and judge-c once; "U" is an unparseable judgment.
JUDGE_B = {"c1": [1, 0.5, 0], "c2": [0.5, 1, 1, 0], "c3": [0, 0, 1, 0]}
JUDGE_B_EPOCH_1 = {"c1": [1, 0.5, 0.5], "c2": [0.5, 1, 1, 0], "c3": [0, 0.5, 1, 0]}
JUDGE_C = {"c1": [1, 0.5, 0.5], "c2": [0.5, 0.5, 1, 1], "c3": [0.5, 0.5, 0, 0]}
# judge-b's grade is the lower of its two epochs': c1 [1, .5, 0], c2 [.5, 1, 1, 0], c3 [0, 0, 1, 0].
# The panel's, the median of (gpt-4o, judge-b, judge-c) per turn; none at c3/2, whose gpt-4o judgment is
# unparseable (a missing vote could be any grade), so that turn is counted unparseable:
PANEL = {"c1": [1, 0.5, 0], "c2": [0.5, 1, 1, 1], "c3": [0.5, 0, "U", 0]}


def with_call_keys(run: Path) -> Path:
    """Give the hand-made run's responses the call keys a real run records."""
    rows = pq.read_table(run / "responses.parquet").to_pylist()
    for row in rows:
        row["call_key"] = f"k-{row['model']}-{row['condition']}-{row['thread_id']}-{row['turn']}"
    pq.write_table(pa.Table.from_pylist(rows, schema=RESPONSES.schema), run / "responses.parquet")
    return run


def rejudge(
    source: Path,
    run_id: str,
    judge: str,
    grades: dict[str, list[Any]],
    epoch: int = 0,
    params: dict[str, Any] | None = None,
) -> Path:
    """A re-judged run of `source` beside it: its responses under `run_id`, judged `grades` by `judge` (sent
    `params`, none when not given)."""
    out = source.parent / run_id
    out.mkdir()
    responses = pq.read_table(source / "responses.parquet").to_pylist()
    judgments = []
    for row in responses:
        row["run_id"] = run_id
        score = grades[row["thread_id"]][row["turn"]]
        judgments.append(
            {
                **{key: row[key] for key in ("run_id", "model", "condition", "thread_id", "turn")},
                "judge_model": judge,
                "score": None if score == "U" else score,
                "parse_status": "unparseable" if score == "U" else "ok",
                "reason": f"{judge} on {row['thread_id']} {row['turn']}",
                "cost_usd": 0.02,
            }
        )
    pq.write_table(pa.Table.from_pylist(responses, schema=RESPONSES.schema), out / "responses.parquet")
    pq.write_table(pa.Table.from_pylist(judgments, schema=JUDGMENTS.schema), out / "judgments.parquet")
    source_manifest = json.loads((source / "manifest.json").read_text())
    manifest = {
        "run_id": run_id,
        "dataset": {"dir": source_manifest["dataset"]["path"], "fingerprint": "fp"},
        "config": {
            "judge": {"model": judge, "epoch": epoch, **({"params": params} if params else {})},
            "models": source_manifest["models"],
        },
        "rejudge": {
            "source_run_id": source_manifest["run_id"],
            "source_run_dir": str(source),
            "judge_epoch": epoch,
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


@pytest.fixture(scope="module")
def panel_runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    source = with_call_keys(make_run(tmp_path_factory.mktemp("panel"), ALPHA, run_id="r1"))
    return [
        source,
        rejudge(source, "r2", "x/judge-b", JUDGE_B),
        rejudge(source, "r3", "x/judge-c", JUDGE_C),
        rejudge(source, "r4", "x/judge-b", JUDGE_B_EPOCH_1, epoch=1),
    ]


@pytest.fixture(scope="module")
def panel(panel_runs: list[Path]) -> dict[str, Any]:
    return compute_metrics(load_runs(panel_runs), SETTINGS)[0]


def test_the_headline_metrics_are_the_panels(panel: dict[str, Any]) -> None:
    overall = panel["models"]["alpha"]["baseline"]["overall"]
    # PANEL: 10 graded turns summing to 5.5 and c3/2 unscored; 4 correct, 3 partial, 3 wrong.
    assert (overall["n"], overall["n_unscored"], overall["mean"]) == (10, 1, pytest.approx(55.0))
    assert (overall["correct_pct"], overall["partial_pct"], overall["wrong_pct"]) == pytest.approx(
        (40.0, 30.0, 30.0)
    )
    assert panel["judge"]["model"] == "judge panel: openai/gpt-4o, x/judge-b, x/judge-c"
    assert panel["judge"]["cost_usd"] == pytest.approx(11 * 0.01 + 3 * 11 * 0.02)


def test_each_judge_beside_the_panel(panel: dict[str, Any]) -> None:
    entry = panel["judge_panel"]["models"]["alpha"]["baseline"]
    means = {label: (judge["n"], judge["mean"]) for label, judge in entry["judges"].items()}
    # gpt-4o: 4.5 over its 10 parsed turns; judge-b: 5 over 11; judge-c: 6 over 11.
    assert means == {
        "openai/gpt-4o": (10, 45.0),
        "x/judge-b": (11, pytest.approx(500 / 11)),
        "x/judge-c": (11, pytest.approx(600 / 11)),
    }
    assert all(judge["ci"][0] <= judge["mean"] <= judge["ci"][1] for judge in entry["judges"].values())
    assert entry["panel"] == {
        key: panel["models"]["alpha"]["baseline"]["overall"][key] for key in ("n", "mean", "ci")
    }
    # Of the 10 turns all three graded (not c3/2), they differ on c1/1 c1/2 c2/1 c2/2 c2/3 c3/0 c3/1.
    assert entry["disagreement"] == {"n": 10, "count": 7, "pct": 70.0, "pct_undefined": None}
    assert entry["pairs"] == [
        {"judges": ["openai/gpt-4o", "x/judge-b"], "n": 10, "exact_pct": 60.0, "exact_pct_undefined": None},
        {"judges": ["openai/gpt-4o", "x/judge-c"], "n": 10, "exact_pct": 50.0, "exact_pct_undefined": None},
        {
            "judges": ["x/judge-b", "x/judge-c"],
            "n": 11,
            "exact_pct": pytest.approx(500 / 11),
            "exact_pct_undefined": None,
        },
    ]


def test_a_judges_epochs_give_its_drift_and_count_as_one_judge(panel: dict[str, Any]) -> None:
    judge_b = panel["judge_panel"]["models"]["alpha"]["baseline"]["judges"]["x/judge-b"]
    # Its epochs differ on c1/2 and c3/1 of the 11 turns.
    assert judge_b["drift"] == {"n": 11, "count": 2, "pct": pytest.approx(200 / 11), "pct_undefined": None}
    assert panel["judge_panel"]["models"]["alpha"]["baseline"]["judges"]["x/judge-c"]["drift"] is None
    judges = {judge["label"]: judge for judge in panel["judge_panel"]["judges"]}
    assert (judges["x/judge-b"]["samples"], judges["x/judge-b"]["runs"]) == (
        ["epoch 0", "epoch 1"],
        ["r2", "r4"],
    )
    assert judges["x/judge-b"]["drift"] == judge_b["drift"]
    assert (judges["openai/gpt-4o"]["unparseable"], judges["openai/gpt-4o"]["unscored_turns"]) == (1, 1)
    # c2/3: gpt-4o 1, judge-b 0 in both epochs, judge-c 1. One judge, one vote: the panel says 1, and turn 3
    # (c2/3 and c3/3, both judged 0) means 50; counting the epochs as two graders, (0, 0, 1, 1) -> 0 would
    # make it 0.
    assert panel["models"]["alpha"]["baseline"]["per_turn"]["3"]["mean"] == 50.0


def test_a_judge_at_two_temperatures_is_one_judge_with_two_samples(tmp_path: Path) -> None:
    """judge-b at temperature 0 and at 0.7 (both epoch 0) is one judge: its vote is the lower middle of its
    two samples (c1 [1, .5, 0], c2 [.5, 1, 1, 0], c3 [0, 0, 1, 0]), so the panel, the lower of gpt-4o's and
    judge-b's grades, is c1 [1, 0, 0], c2 [.5, 1, .5, 0], c3 [0, 0, U, 0] (gpt-4o's c3/2 is unparseable):
    3 over 10 turns. Counted as two judges, judge-b would outvote gpt-4o (the median of three: 4 over 10)."""
    source = with_call_keys(make_run(tmp_path, ALPHA, run_id="r1"))
    runs = [
        source,
        rejudge(source, "r2", "x/judge-b", JUDGE_B, params={"temperature": 0}),
        rejudge(source, "r3", "x/judge-b", JUDGE_B_EPOCH_1, params={"temperature": 0.7}),
    ]
    metrics = compute_metrics(load_runs(runs), SETTINGS)[0]
    assert metrics["models"]["alpha"]["baseline"]["overall"]["mean"] == pytest.approx(30.0)
    judges = [(judge["label"], judge["samples"], judge["runs"]) for judge in metrics["judge_panel"]["judges"]]
    assert judges == [
        ("openai/gpt-4o", ["epoch 0"], ["r1"]),
        ("x/judge-b", ["temperature=0 epoch 0", "temperature=0.7 epoch 0"], ["r2", "r3"]),
    ]
    entry = metrics["judge_panel"]["models"]["alpha"]["baseline"]
    assert entry["judges"]["x/judge-b"]["drift"] == {
        "n": 11,
        "count": 2,
        "pct": pytest.approx(200 / 11),
        "pct_undefined": None,
    }
    assert [pair["judges"] for pair in entry["pairs"]] == [["openai/gpt-4o", "x/judge-b"]]


def test_a_judge_sent_temperature_0_0_is_the_judge_sent_0(tmp_path: Path) -> None:
    """One call key, one sample label: 0.0 is shown as the 0 of the other run (epochs 0 and 1)."""
    source = with_call_keys(make_run(tmp_path, ALPHA, run_id="r1"))
    runs = [
        source,
        rejudge(source, "r2", "x/judge-b", JUDGE_B, params={"temperature": 0}),
        rejudge(source, "r3", "x/judge-b", JUDGE_B_EPOCH_1, epoch=1, params={"temperature": 0.0}),
    ]
    metrics = compute_metrics(load_runs(runs), SETTINGS)[0]
    judges = [(judge["label"], judge["samples"], judge["runs"]) for judge in metrics["judge_panel"]["judges"]]
    assert judges == [
        ("openai/gpt-4o", ["epoch 0"], ["r1"]),
        ("x/judge-b", ["temperature=0 epoch 0", "temperature=0 epoch 1"], ["r2", "r3"]),
    ]


def test_the_turns_the_judges_differ_on_most(panel: dict[str, Any]) -> None:
    listed = panel["judge_panel"]["disagreements"]
    assert [(row["thread_id"], row["turn"]) for row in listed] == [
        ("c2", 3),  # spread 1, then the spreads of 0.5 in report order
        ("c1", 1),
        ("c1", 2),
        ("c2", 1),
        ("c2", 2),
        ("c3", 0),
        ("c3", 1),
    ]
    assert listed[0] == {
        "model": "alpha",
        "condition": "baseline",
        "thread_id": "c2",
        "turn": 3,
        "grades": {"openai/gpt-4o": 1.0, "x/judge-b": 0.0, "x/judge-c": 1.0},
        "panel": 1.0,
    }


def test_the_panel_report_files(panel_runs: list[Path], tmp_path: Path) -> None:
    report_dir = Path(
        build_report.fn(run_dirs=list(map(str, panel_runs)), out_dir=str(tmp_path), settings=SETTINGS)
    )
    rows = pq.read_table(report_dir / "stats_judge_panel.parquet").to_pylist()
    assert [
        (row["judge"], row["n"], row["n_samples"], row["drift_changed"], row["differ_count"]) for row in rows
    ] == [
        ("openai/gpt-4o", 10, 1, None, None),
        ("x/judge-b", 11, 2, 2, None),
        ("x/judge-c", 11, 1, None, None),
        ("panel", 10, None, None, 7),
    ]
    pairs = pq.read_table(report_dir / "stats_judge_pairs.parquet").to_pylist()
    assert [(row["judge_a"], row["judge_b"], row["exact_pct"]) for row in pairs][:2] == [
        ("openai/gpt-4o", "x/judge-b", 60.0),
        ("openai/gpt-4o", "x/judge-c", 50.0),
    ]
    assert (report_dir / "fig_judge_panel.png").stat().st_size > 0
    markdown = (report_dir / "report.md").read_text()
    assert "](fig_judge_panel.png)" in markdown
    assert (
        "| alpha | baseline | x/judge-b | 2 | 11 | 45.5 [" in markdown and "| 18.2 (2 of 11) |  |" in markdown
    )
    assert "| alpha | baseline | panel |  | 10 | 55.0 [" in markdown and "| 70.0 (7 of 10) |" in markdown
    assert "| alpha | baseline | c2 | 3 | 1.0 | 0.0 | 1.0 | 1.0 |" in markdown
    page = (report_dir / "index.html").read_text()
    assert 'id="table-judge-panel"' in page and 'id="table-judge-disagreements"' in page
    payload = re.search(f'<script type="{PACKED_DATA_TYPE}" id="report-data">(.*?)</script>', page, re.S)
    assert payload is not None
    index, *chunks = unpack_json(payload.group(1))
    assert index["judges"] == ["openai/gpt-4o", "x/judge-b epoch 0", "x/judge-b epoch 1", "x/judge-c"]
    c2 = next(conversation for conversation in index["conversations"] if conversation[2] == 1)
    assert c2[3][3] == [3, 1.0, "ok", 1.0, 0.0, 0.0, 1.0]
    assert chunks[0][1][3][1:] == [
        "reason c2 3",
        "x/judge-b on c2 3",
        "x/judge-b on c2 3",
        "x/judge-c on c2 3",
    ]


def test_a_single_judge_report_has_no_panel(tmp_path: Path) -> None:
    metrics = compute_metrics(load_runs([make_run(tmp_path, ALPHA)]), SETTINGS)[0]
    assert "judge_panel" not in metrics


def test_runs_over_several_models_make_one_panel(tmp_path: Path) -> None:
    """Each judge's answers may come from several runs (one model each), as with one judge."""
    beta = {("beta", "baseline"): SCORES["beta", "baseline"]}
    alpha_run = with_call_keys(make_run(tmp_path / "a", ALPHA, run_id="r1"))
    beta_run = with_call_keys(make_run(tmp_path / "b", beta, run_id="r2"))
    runs = [alpha_run, beta_run, rejudge(alpha_run, "r3", "x/judge-b", JUDGE_B)]
    beta_grades = {"c1": [1, 1, 0], "c2": [0, 0, 1, 0.5], "c3": [0, 0.5, 1, 0]}
    metrics = compute_metrics(
        load_runs([*runs, rejudge(beta_run, "r4", "x/judge-b", beta_grades)]), SETTINGS
    )[0]
    assert set(metrics["judge_panel"]["models"]) == {"alpha", "beta"}
    # beta's failed answer (c1/2) was judged by neither; the rest agree exactly.
    assert metrics["judge_panel"]["models"]["beta"]["baseline"]["disagreement"] == {
        "n": 10,
        "count": 0,
        "pct": 0.0,
        "pct_undefined": None,
    }


def test_judges_of_different_answers_are_refused_in_one_line(tmp_path: Path) -> None:
    source = with_call_keys(make_run(tmp_path, ALPHA, run_id="r1"))
    other = rejudge(source, "r2", "x/judge-b", JUDGE_B)
    # One answer of the re-judged run is not the source's: another call, another text.
    rows = pq.read_table(other / "responses.parquet").to_pylist()
    rows[4] = {**rows[4], "call_key": "k-other", "response": "another answer"}
    pq.write_table(pa.Table.from_pylist(rows, schema=RESPONSES.schema), other / "responses.parquet")
    with pytest.raises(UserError) as caught:
        load_runs([source, other])
    message = str(caught.value)
    assert message == (
        f"these runs were judged differently, so their scores are not comparable (r1 ({source}): "
        f"openai/gpt-4o [prompts not recorded] {{}}; r2 ({other}): x/judge-b [prompts not recorded] {{}}): "
        f"report them separately {PANEL_HINT}"
    )
    assert "\n" not in message
    epoch = rejudge(source, "r3", "x/judge-b", JUDGE_B, epoch=1)
    shutil.copy(other / "responses.parquet", epoch / "responses.parquet")
    with pytest.raises(UserError, match=r"r3 \(.*\): x/judge-b \[prompts not recorded\] \{\} epoch 1\)"):
        load_runs([source, epoch])


def test_the_page_shows_each_judges_grade_and_links_a_disagreement(
    panel_runs: list[Path], tmp_path: Path
) -> None:
    chromium = _chromium()
    report_dir = build_report.fn(
        run_dirs=list(map(str, panel_runs)), out_dir=str(tmp_path), settings=SETTINGS
    )
    page = Page(chromium, (Path(report_dir) / "index.html").as_uri(), tmp_path / "profile")
    try:
        page.wait_for("document.body && document.body.dataset.ready === '1'")
        assert page.evaluate("document.getElementById('judges-filter').hidden") is False
        # The first disagreement listed (c2, turn 3) opens its conversation on that turn.
        page.evaluate("document.querySelector('#table-judge-disagreements tbody a').click()")
        page.wait_for("document.querySelectorAll('.turn').length === 4")
        turn = page.evaluate("document.querySelector('details.conversation[open] .turn.match').innerText")
        for expected in (
            "Turn 3 · score 1.0",
            "Panel\n1.0",
            "openai/gpt-4o\n1.0 — reason c2 3",
            "x/judge-b epoch 0\n0.0 — x/judge-b on c2 3",
            "x/judge-b epoch 1\n0.0 — x/judge-b on c2 3",
            "x/judge-c\n1.0 — x/judge-c on c2 3",
        ):
            assert expected in turn
        chips = page.evaluate(
            "[...document.querySelectorAll('details.conversation[open] .chip')].map(c => c.textContent)"
        )
        assert chips == ["T0 0.5", "T1 1.0 ≠", "T2 1.0 ≠", "T3 1.0 ≠"]
    finally:
        page.close()


def test_one_judge_in_two_epochs_reports_its_drift(tmp_path: Path) -> None:
    source = with_call_keys(make_run(tmp_path, ALPHA, run_id="r1"))
    runs = [
        rejudge(source, "r2", "x/judge-b", JUDGE_B),
        rejudge(source, "r3", "x/judge-b", JUDGE_B_EPOCH_1, 1),
    ]
    metrics = compute_metrics(load_runs(runs), SETTINGS)[0]
    entry = metrics["judge_panel"]["models"]["alpha"]["baseline"]
    assert entry["judges"]["x/judge-b"]["drift"] == {
        "n": 11,
        "count": 2,
        "pct": pytest.approx(200 / 11),
        "pct_undefined": None,
    }
    assert (entry["pairs"], metrics["judge_panel"]["disagreements"]) == ([], [])
    # Its grade, the lower of its epochs', is the headline: c1 [1, .5, 0], c2 [.5, 1, 1, 0], c3 [0, 0, 1, 0].
    assert metrics["models"]["alpha"]["baseline"]["overall"]["mean"] == pytest.approx(500 / 11)


def test_the_terminal_shows_each_judges_mean_by_key(panel: dict[str, Any]) -> None:
    table = panel_summary_table(panel)
    assert table is not None
    assert table.columns == ["Model", "Condition", "J1", "J2", "J3", "Panel", "Judges differ %"]
    assert table.rows == [["alpha", "baseline", "45.0", "45.5", "54.5", "55.0", "70.0 (7 of 10)"]]
    assert table.caption.startswith(
        "J1 = openai/gpt-4o (1 sample); J2 = x/judge-b (2 samples, drift 18.2 (2 of 11)); "
        "J3 = x/judge-c (1 sample)."
    )


def test_judges_with_no_turn_in_common_have_undefined_agreement_not_a_dash(tmp_path: Path) -> None:
    """judge-b's every judgment is unparseable: it and gpt-4o graded no turn in common, so their exact
    agreement and how often they differ are undefined, with the reason, in metrics.json, the stats tables and
    report.md, and no turn has a panel grade."""
    source = with_call_keys(make_run(tmp_path / "runs", ALPHA, run_id="r1"))
    unread = {thread: ["U"] * len(grades) for thread, grades in JUDGE_B.items()}
    runs = [source, rejudge(source, "r2", "x/judge-b", unread)]
    report_dir = Path(
        build_report.fn(run_dirs=list(map(str, runs)), out_dir=str(tmp_path / "out"), settings=SETTINGS)
    )
    metrics = json.loads((report_dir / "metrics.json").read_text())
    entry = metrics["judge_panel"]["models"]["alpha"]["baseline"]
    nobody = "undefined: no turn graded by both judges"
    assert entry["pairs"] == [
        {"judges": ["openai/gpt-4o", "x/judge-b"], "n": 0, "exact_pct": None, "exact_pct_undefined": nobody}
    ]
    assert entry["disagreement"] == {"n": 0, "count": 0, "pct": None, "pct_undefined": nobody}
    [pair] = pq.read_table(report_dir / "stats_judge_pairs.parquet").to_pylist()
    assert (pair["exact_pct"], pair["exact_pct_undefined"]) == (None, nobody)
    markdown = (report_dir / "report.md").read_text()
    assert f"| alpha | baseline | openai/gpt-4o = x/judge-b | 0 | {nobody} |" in markdown
    # No turn has both judges' grades, so none has the panel's: a missing vote could be any grade.
    assert f"| alpha | baseline | panel |  | 0 | — |  | {nobody} |" in markdown
    assert metrics["models"]["alpha"]["baseline"]["overall"]["n_unscored"] == 11
