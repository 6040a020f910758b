"""`compare` on hand-made ThReadMed runs: the paired differences with scipy's p-values, the files written,
the page's side-by-side view (in headless Chromium), and the refusals of runs over other threads or of
another benchmark."""

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy import stats

from tasks.benchmarks.compare import check_comparable, compare_models, comparison_source
from tasks.core.preflight import UserError
from tasks.core.safe_text import original_cell
from tasks.report.settings import CompareSettings
from tests.tasks.benchmarks.threadmed.test_report import SCORES, make_run
from tests.tasks.benchmarks.threadmed.test_report_html import Page, _chromium

SETTINGS = CompareSettings(n_resamples=300, seed=5)
ALPHA = {key: threads for key, threads in SCORES.items() if key[0] == "alpha"}
BETA = {key: threads for key, threads in SCORES.items() if key[0] == "beta"}
# The baseline turns both alpha and beta scored (test_report.SCORES), in thread and turn order.
PAIRED_ALPHA = np.array([1, 0, 0.5, 1, 0.5, 1, 0.5, 0, 0])
PAIRED_BETA = np.array([1, 1, 0, 0, 1, 0.5, 0, 0.5, 0])


def two_runs(root: Path) -> list[Path]:
    return [make_run(root, ALPHA, "r1"), make_run(root, BETA, "r2")]


def test_models_of_two_runs_are_compared_on_the_turns_both_scored(tmp_path: Path) -> None:
    runs = two_runs(tmp_path)
    out = compare_models.fn(
        run_dirs=[str(run) for run in runs], out_dir=str(tmp_path / "out"), models=None, settings=SETTINGS
    )
    rows = pq.read_table(Path(out) / "compare_differences.parquet").to_pylist()
    # Oracle turns are alpha's only: nothing to pair. T6+ has no turn.
    assert [(row["metric"], row["stratum"], row["group"]) for row in rows] == [
        ("score", "baseline", group) for group in ("all", "T0", "T1", "T2", "T3-5")
    ] + [("correct", "baseline", group) for group in ("all", "T0", "T1", "T2", "T3-5")]
    wilcoxon = stats.wilcoxon(PAIRED_ALPHA, PAIRED_BETA)
    overall = rows[0]
    assert {key: value for key, value in overall.items() if key not in ("ci_low", "ci_high")} == {
        "model_a": "alpha", "model_b": "beta", "metric": "score", "stratum": "baseline", "group": "all",
        "n_pairs": 9, "mean_a": pytest.approx(4.5 / 9), "mean_b": pytest.approx(4 / 9),
        "difference": pytest.approx(0.5 / 9), "test": "Wilcoxon", "statistic": wilcoxon.statistic,
        "p_value": pytest.approx(wilcoxon.pvalue),
    }  # fmt: skip
    assert overall["ci_low"] < overall["difference"] < overall["ci_high"]
    correct = rows[5]
    # Correct (1) pairs: only alpha in c2 turns 1 and 3; only beta in c1 turn 1 and c2 turn 2.
    assert (correct["statistic"], correct["p_value"]) == (2.0, stats.binomtest(2, 4, 0.5).pvalue)
    items = pq.read_table(Path(out) / "compare_items.parquet").to_pylist()
    assert [(row["item"], row["score_a"], row["score_b"]) for row in items[:2]] == [
        ("c1 turn 1", 0.0, 1.0),
        ("c2 turn 1", 1.0, 0.0),
    ]
    assert items[0]["link"] == "#compare?a=alpha&b=beta&condition=baseline&thread=c1&turn=1"
    assert sorted(path.name for path in Path(out).iterdir()) == [
        "compare.md", "compare_differences.csv", "compare_differences.parquet", "compare_items.csv",
        "compare_items.parquet", "fig_compare_differences.png", "index.html",
    ]  # fmt: skip
    page = (Path(out) / "index.html").read_text()
    assert 'href="#compare?a=alpha&amp;b=beta&amp;condition=baseline&amp;thread=c1&amp;turn=1"' in page
    assert '<figure id="fig_compare_differences"><img' in page
    again = compare_models.fn(
        run_dirs=[str(run) for run in runs], out_dir=str(tmp_path / "again"), models=None, settings=SETTINGS
    )
    assert (Path(again) / "compare_differences.csv").read_text() == (
        Path(out) / "compare_differences.csv"
    ).read_text()


def test_runs_over_other_threads_are_refused_naming_them(tmp_path: Path) -> None:
    first = make_run(tmp_path, ALPHA, "r1")
    fewer = make_run(tmp_path, {("beta", "baseline"): {"c2": [0, 1]}}, "r2")
    with pytest.raises(UserError, match=rf"^run {fewer} lacks 2 threads: c1, c3; compare runs over the same"):
        comparison_source([first, fewer])


def test_runs_of_another_benchmark_are_refused(tmp_path: Path) -> None:
    first, second = two_runs(tmp_path)
    (second / "benchmark.json").write_text(json.dumps({"benchmark": "snomed"}))
    with pytest.raises(UserError) as refused:
        comparison_source([first, second])
    assert str(refused.value) == (
        f"run {second} is a snomed run, run {first} a threadmed run: compare runs of one benchmark"
    )


def test_an_item_of_the_page_opens_both_answers_side_by_side_and_the_browser_stays(tmp_path: Path) -> None:
    chromium = _chromium()
    runs = two_runs(tmp_path)
    out = compare_models.fn(
        run_dirs=[str(run) for run in runs], out_dir=str(tmp_path / "out"), models=None, settings=SETTINGS
    )
    page = Page(chromium, (Path(out) / "index.html").as_uri(), tmp_path / "profile")
    try:
        page.wait_for("document.body && document.body.dataset.ready === '1'")
        assert page.evaluate("document.getElementById('side-by-side').hidden") is True
        page.evaluate("document.querySelector('#table-compare-items tbody a').click()")
        page.wait_for("document.getElementById('side-by-side').dataset.shown")
        shown = page.evaluate(
            "[document.querySelector('#side-by-side h3').textContent, location.hash,"
            " [...document.querySelectorAll('#side-by-side .turn')].map(turn => [turn.dataset.turn,"
            "  turn.classList.contains('match'), [...turn.querySelectorAll('.side')].map(side => ["
            "   side.querySelector('h5').textContent,"
            "   side.querySelector('.answer').textContent.replace(/^(word ?)+$/, w => w.split(' ').length)"
            "  ])])]"
        )
        conversations = page.evaluate("document.getElementById('match-count').textContent")
    finally:
        page.close()
    # Thread c1 (test_report.SCORES; answers of test_report.words words): beta's call at turn 2 failed, so it
    # has no answer and no score.
    assert shown == [
        "c1 · baseline · alpha vs beta",
        "#compare?a=alpha&b=beta&condition=baseline&thread=c1&turn=1",
        [
            ["0", False, [["alpha · score 1.0", "16"], ["beta · score 1.0", "15"]]],
            ["1", True, [["alpha · score 0.0", "26"], ["beta · score 1.0", "25"]]],
            ["2", False, [["alpha · score 0.0", "36"], ["beta · score answer_failed", "(none)"]]],
        ],
    ]
    assert conversations == "9 of 9 conversations match"


def test_models_no_run_has_or_fewer_than_two_are_refused(tmp_path: Path) -> None:
    runs = two_runs(tmp_path)
    check_comparable(runs, None)
    with pytest.raises(UserError, match=r"^no run has the model\(s\) gamma; the runs have alpha, beta$"):
        check_comparable(runs, ["alpha", "gamma"])
    with pytest.raises(UserError, match=r"^comparing needs two models; the runs have alpha, beta$"):
        check_comparable(runs, ["beta", "beta"])
    with pytest.raises(UserError, match=r"^comparing needs two models; the runs have alpha$"):
        check_comparable(runs[:1], None)


def test_a_run_with_no_rows_is_refused_saying_so(tmp_path: Path) -> None:
    empty = make_run(tmp_path, {}, "r1")
    with pytest.raises(UserError) as refused:
        check_comparable([empty], None)
    assert str(refused.value) == (
        "comparing needs two models; the runs hold no row of any model in responses.parquet"
    )


def test_the_csvs_neutralise_model_names_a_spreadsheet_would_run(tmp_path: Path) -> None:
    formula, command = '=HYPERLINK("http://example.com","x")', "+cmd|' /C calc'!A0"
    renamed = {
        (formula, "baseline"): ALPHA[("alpha", "baseline")],
        (command, "baseline"): BETA[("beta", "baseline")],
    }
    runs = [make_run(tmp_path, {key: renamed[key]}, f"r{i}") for i, key in enumerate(renamed)]
    out = Path(
        compare_models.fn(
            run_dirs=[str(run) for run in runs], out_dir=str(tmp_path / "out"), models=None, settings=SETTINGS
        )
    )
    for name in ("compare_differences", "compare_items"):
        with (out / f"{name}.csv").open(newline="") as file:
            rows = list(csv.DictReader(file))
        assert {(row["model_a"], row["model_b"]) for row in rows} == {("'" + formula, "'" + command)}
        parquet = pq.read_table(out / f"{name}.parquet").to_pylist()
        assert [original_cell(row["model_a"]) for row in rows] == [row["model_a"] for row in parquet]
    with (out / "compare_differences.csv").open(newline="") as file:
        difference = next(csv.DictReader(file))["difference"]
    assert float(difference) == pytest.approx(0.5 / 9) and not difference.startswith("'")
