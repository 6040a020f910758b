"""The report on a hand-made run whose every number is worked out by hand below."""

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy import stats

from tasks.benchmarks.threadmed import browser as threadmed_browser
from tasks.benchmarks.threadmed.contracts import RESPONSES
from tasks.benchmarks.threadmed.report import ReportSettings, build_report, compute_metrics
from tasks.benchmarks.threadmed.run_data import check_run_folder, load_runs, read_manifest
from tasks.benchmarks.threadmed.tables import build_tables
from tasks.core.preflight import UserError
from tasks.report.html import PACKED_DATA_TYPE, unpack_json
from tests.perf.bench_report import write_dataset, write_run

# Scores per (model, condition) and thread, by turn. "U": unparseable judgment ("C": its judge reply was cut
# at max_tokens); "F": failed call (its judgment not run); None: not asked (the oracle condition starts at
# turn 1).
SCORES: dict[tuple[str, str], dict[str, list[Any]]] = {
    ("alpha", "baseline"): {"c1": [1, 0, 0], "c2": [0.5, 1, 0.5, 1], "c3": [0.5, 0, "U", 0]},
    ("alpha", "oracle"): {"c1": [None, 0.5, 1], "c2": [None, 1, 1, 0.5], "c3": [None, 0, 0.5, 1]},
    ("beta", "baseline"): {"c1": [1, 1, "F"], "c2": [0, 0, 1, 0.5], "c3": [0, 0.5, 1, 0]},
}
TURNS = {"c1": 3, "c2": 4, "c3": 4}
SETTINGS = ReportSettings(n_resamples=500)
CALL_USD = {"input_cost_usd": 0.001, "output_cost_usd": 0.002, "cost_usd": 0.003}
JUDGE_USD = 0.01
# Runs judged differently merge only as a judge panel over the same answers; the refusal says so.
PANEL_HINT = "(a judge panel needs every judge to grade the same answers)"


def words(model: str, thread: str, turn: int) -> int:
    """Length of the model's answer: varies with the turn so that the length correlation is defined."""
    return 10 * (turn + 1) + len(model) + int(thread[1])


def rows_of(pairs: dict[tuple[str, str], dict[str, list[Any]]], run_id: str) -> tuple[list[dict], list[dict]]:
    responses, judgments = [], []
    for (model, condition), threads in pairs.items():
        for thread, scores in threads.items():
            for turn, score in enumerate(scores):
                if score is None:
                    continue
                key = {
                    "run_id": run_id,
                    "model": model,
                    "condition": condition,
                    "thread_id": thread,
                    "turn": turn,
                }
                failed = score == "F"
                text = None if failed else " ".join(["word"] * words(model, thread, turn))
                responses.append(
                    {**key, "status": "failed" if failed else "ok", "response": text, **CALL_USD}
                )
                status = {"F": "not_run", "U": "unparseable", "C": "judge_cut"}.get(score, "ok")
                judged = {
                    "parse_status": status,
                    "score": score if status == "ok" else None,
                    "cost_usd": JUDGE_USD,
                }
                judgments.append({**key, **judged, "reason": f"reason {thread} {turn}"})
    return responses, judgments


def make_run(
    root: Path,
    pairs: dict[tuple[str, str], dict[str, list[Any]]] = SCORES,
    run_id: str = "r1",
    judge: str = "openai/gpt-4o",
    funnel: bool = True,
) -> Path:
    """A run directory next to a shared dataset build under root."""
    qa_pairs = [
        # The physician's answer at turn t has t + 1 words.
        {
            "thread_id": thread,
            "turn": turn,
            "question": f"question {thread} {turn}",
            "answer": "w " * (turn + 1),
        }
        for thread, n in TURNS.items()
        for turn in range(n)
    ]
    funnel_rows = [
        {"stage_order": 1, "stage": "threads", "reason": None, "count_rows": 3},
        {"stage_order": 1, "stage": "threads", "reason": "too short", "count_rows": 40},
        {"stage_order": 0, "stage": "posts", "reason": None, "count_rows": 5000},
    ]
    dataset = write_dataset(root / "build", qa_pairs, funnel_rows if funnel else None)
    manifest = {
        "run_id": run_id,
        "dataset": {"path": str(dataset), "fingerprint": "fp"},
        "judge": {"model": judge},
        "models": sorted({model for model, _ in pairs}),
        "conditions": ["baseline", "oracle"],
    }
    return write_run(root / run_id, manifest, *rows_of(pairs, run_id))


@pytest.fixture(scope="module")
def metrics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return compute_metrics(load_runs([make_run(tmp_path_factory.mktemp("run"))]), SETTINGS)[0]


def test_overall_by_hand(metrics: dict[str, Any]) -> None:
    overall = metrics["models"]["alpha"]["baseline"]["overall"]
    # 10 judged turns summing to 4.5; 3 correct, 3 partial, 4 wrong; c3's turn 2 is unscored.
    assert overall["n"] == 10 and overall["n_unscored"] == 1
    assert overall["mean"] == pytest.approx(45.0)
    assert overall["ci"][0] < 45.0 < overall["ci"][1]
    assert (overall["correct_pct"], overall["partial_pct"], overall["wrong_pct"]) == pytest.approx(
        (30, 30, 40)
    )
    judged_words = [
        words("alpha", t, turn) for t, n in TURNS.items() for turn in range(n) if (t, turn) != ("c3", 2)
    ]
    assert overall["avg_words"] == pytest.approx(sum(judged_words) / 10)
    # Physician answers of the 11 pairs asked: 1+2+3 + 1+2+3+4 + 1+2+3+4 words.
    assert metrics["physician_avg_words"] == pytest.approx(26 / 11)


def test_turn_groups_by_hand(metrics: dict[str, Any]) -> None:
    groups = metrics["models"]["alpha"]["baseline"]["turn_groups"]
    expected = {"T0": (3, 200 / 3, 0), "T1": (3, 100 / 3, 200 / 3), "T2": (2, 25, 50), "T3-5": (2, 50, 50)}
    for name, (n, mean, wrong) in expected.items():
        assert (groups[name]["n"], groups[name]["mean"], groups[name]["wrong_pct"]) == pytest.approx(
            (n, mean, wrong)
        )
    assert groups["T6+"] == {
        "n": 0,
        "mean": None,
        "ci": None,
        "wrong_pct": None,
        "wrong_ci": None,
        "p_vs_t0": None,
    }
    assert groups["T0"]["p_vs_t0"] is None
    t0 = [1, 0.5, 0.5]
    for name, later in (("T1", [0, 1, 0]), ("T2", [0, 0.5]), ("T3-5", [1, 0])):
        assert groups[name]["p_vs_t0"] == stats.mannwhitneyu(t0, later, alternative="greater").pvalue
    per_turn = metrics["models"]["alpha"]["baseline"]["per_turn"]
    assert [per_turn[str(t)]["n"] for t in range(6)] == [3, 3, 2, 2, 0, 0]
    assert per_turn["3"]["mean"] == 50.0 and per_turn["4"]["mean"] is None


def test_consistency_and_propagation_by_hand(metrics: dict[str, Any]) -> None:
    alpha = metrics["models"]["alpha"]["baseline"]
    # Ranges 1, 0.5, 0.5; minima 0, 0.5, 0; maxima 1, 1, 0.5; c1 volatile; c1 and c3 degraded.
    ccs = alpha["ccs"]
    assert ccs["n_conversations"] == 3
    assert (ccs["ccs"], ccs["floor"], ccs["ceiling"]) == pytest.approx((100 / 3, 50 / 3, 250 / 3))
    assert (ccs["volatile_pct"], ccs["degraded_pct"]) == pytest.approx((100 / 3, 200 / 3))
    # Pairs: c1 (1,0) (0,0); c2 (0.5,1) (1,0.5) (0.5,1); c3 (0.5,0); its unparseable turn 2 ends the chain.
    epr = alpha["epr"]
    assert (epr["epr"], epr["n_after_wrong"], epr["after_correct"]) == pytest.approx((100, 1, 50))
    assert (epr["after_partial"], epr["amplification"]) == pytest.approx((100 / 3, 2.0))
    # The oracle condition has no turn 0, so no conversation can be called degraded.
    assert metrics["models"]["alpha"]["oracle"]["ccs"]["degraded_pct"] is None


def test_ablation_by_hand(metrics: dict[str, Any]) -> None:
    ablation = metrics["models"]["alpha"]["ablation"]
    # T0 = 2/3, baseline T2 = 1/4, oracle T2 = (1 + 1 + 0.5)/3 = 5/6.
    assert (ablation["t0"], ablation["baseline_t2"], ablation["oracle_t2"]) == pytest.approx(
        (200 / 3, 25, 250 / 3)
    )
    assert ablation["context_effect"] == pytest.approx(250 / 3 - 25)
    assert ablation["q_difficulty_share"] == pytest.approx((2 / 3 - 5 / 6) / (2 / 3 - 1 / 4))
    baseline_1_to_5, oracle_1_to_5 = [0, 0, 1, 0.5, 1, 0, 0], [0.5, 1, 1, 1, 0.5, 0, 0.5, 1]
    assert ablation["p"] == stats.mannwhitneyu(baseline_1_to_5, oracle_1_to_5, alternative="two-sided").pvalue
    assert metrics["models"]["beta"]["ablation"] is None


def test_coverage_by_hand(metrics: dict[str, Any]) -> None:
    # Pairs judged for both: all 11 but alpha's unparseable c3/2 and beta's failed c1/2. Fully correct:
    # alpha c1/0 c2/1 c2/3; beta c1/0 c1/1 c2/2. None: c2/0 c3/0 c3/1 c3/3.
    assert metrics["coverage"] == {
        "n_pairs": 9,
        "unsolved_pct": pytest.approx(400 / 9),
        "unique": {"alpha": 2, "beta": 2},
    }


def test_unscored_judgments_are_excluded_and_counted(metrics: dict[str, Any]) -> None:
    beta = metrics["models"]["beta"]["baseline"]["overall"]
    assert (beta["n"], beta["n_unscored"]) == (10, 1)
    # each model's unscored turns by status: its own (its answer failed) apart from the judge's (unparseable)
    unscored = {
        (model, condition): values["overall"]["unscored"]
        for model, entry in metrics["models"].items()
        for condition, values in entry.items()
        if condition != "ablation"
    }
    assert {key: counts for key, counts in unscored.items() if counts} == {
        ("alpha", "baseline"): {"unparseable": 1},
        ("beta", "baseline"): {"answer_failed": 1},
    }
    [overall_table] = [table for table in build_tables(metrics) if table.key == "overall"]
    assert overall_table.caption.endswith(
        " Unscored by status: alpha baseline: unparseable 1; beta baseline: answer_failed 1."
    )
    judge = metrics["judge"]
    assert (judge["unparseable"], judge["n_judge_cut"], judge["excluded"]) == (
        1,
        0,
        {"answer_failed": 1, "unparseable": 1},
    )


def test_judgments_whose_judge_reply_was_cut_are_counted_beside_the_unparseable_ones(tmp_path):
    run = make_run(tmp_path, {("alpha", "baseline"): {"c1": [1, "C", "U"], "c2": [0.5, "C", 1, "F"]}})
    metrics = compute_metrics(load_runs([run]), SETTINGS)[0]
    assert (metrics["judge"]["unparseable"], metrics["judge"]["n_judge_cut"]) == (1, 2)
    assert metrics["models"]["alpha"]["baseline"]["overall"]["n_unscored"] == 4
    [judge_table] = [table for table in build_tables(metrics) if table.key == "judge-cost"]
    assert (judge_table.columns, judge_table.rows) == (
        ["Judge model", "Unparseable", "Judge cut", "Other unscored", "Cost ($)"],
        [["openai/gpt-4o", "1", "2", "1", "0.07"]],
    )


def test_costs_count_every_call(metrics: dict[str, Any]) -> None:
    # beta asked 11 turns, one of which failed: the failed call is paid for too.
    assert metrics["models"]["beta"]["baseline"]["cost"] == pytest.approx(
        {"input_usd": 0.011, "output_usd": 0.022, "total_usd": 0.033}
    )
    assert metrics["models"]["alpha"]["oracle"]["cost"]["total_usd"] == pytest.approx(8 * 0.003)
    assert metrics["judge"]["cost_usd"] == pytest.approx(30 * JUDGE_USD)


def test_length_is_spearman_over_judged_answers(metrics: dict[str, Any]) -> None:
    scored = [
        (words("alpha", t, turn), s)
        for t, row in SCORES["alpha", "baseline"].items()
        for turn, s in enumerate(row)
    ]
    x, y = zip(*[(w, s) for w, s in scored if s != "U"], strict=True)
    expected = stats.spearmanr(x, y)
    assert metrics["models"]["alpha"]["baseline"]["length"] == {
        "spearman_r": expected.statistic,
        "p": expected.pvalue,
    }


def test_metrics_follow_the_documented_shape(metrics: dict[str, Any]) -> None:
    entry = metrics["models"]["alpha"]["baseline"]
    assert set(entry) == {"overall", "turn_groups", "per_turn", "ccs", "epr", "length", "cost"}
    assert set(entry["turn_groups"]) == {"T0", "T1", "T2", "T3-5", "T6+"}
    assert {"n_conversations", "ccs", "ci", "floor", "ceiling", "volatile_pct", "degraded_pct"} <= set(
        entry["ccs"]
    )
    assert {"epr", "ci", "after_correct", "after_partial", "amplification"} <= set(entry["epr"])
    ablation_keys = {"t0", "baseline_t2", "oracle_t2", "q_difficulty_share", "context_effect", "p"}
    assert set(metrics["models"]["alpha"]["ablation"]) == ablation_keys
    assert metrics["bootstrap"] == {"resamples": 500, "seed": 0, "level": 0.95, "method": "percentile"}
    assert {"physician_avg_words", "coverage", "judge"} <= set(metrics)


def test_one_model_without_oracle_skips_coverage_and_ablation(tmp_path: Path) -> None:
    run = make_run(tmp_path, {("beta", "baseline"): SCORES["beta", "baseline"]})
    report_dir = Path(
        build_report.fn(run_dirs=[str(run)], out_dir=str(tmp_path / "report"), settings=SETTINGS)
    )
    metrics = json.loads((report_dir / "metrics.json").read_text())
    assert metrics["coverage"] is None and metrics["models"]["beta"]["ablation"] is None
    markdown = (report_dir / "report.md").read_text()
    assert "Not computed: needs at least two models" in markdown
    assert "Not computed: no model was evaluated in both" in markdown


def test_report_files_and_stats_tables(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    report_dir = Path(
        build_report.fn(run_dirs=[str(run)], out_dir=str(tmp_path / "report"), settings=SETTINGS)
    )
    for name in ("index.html", "fig_turn_scores.png", "fig_wrong_after.png", "fig_dataset_funnel.png"):
        assert (report_dir / name).stat().st_size > 0
    # Strict JSON: undefined values are null, never NaN.
    json.loads(
        (report_dir / "metrics.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON")
    )
    turn_2 = pq.read_table(report_dir / "stats_turns.parquet").to_pylist()[2]
    assert [turn_2[k] for k in ("model", "condition", "turn", "n", "mean")] == [
        "alpha",
        "baseline",
        2,
        2,
        25.0,
    ]
    assert turn_2["ci_low"] <= 25.0 <= turn_2["ci_high"]
    transitions = pq.read_table(report_dir / "stats_transitions.parquet").to_pylist()
    after_wrong = transitions[0]
    assert (after_wrong["previous_label"], after_wrong["n"], after_wrong["wrong_next_pct"]) == (
        "wrong",
        1,
        100.0,
    )
    funnel = pq.read_table(report_dir / "stats_funnel.parquet").to_pylist()
    assert [(row["stage"], row["count_rows"]) for row in funnel] == [("posts", 5000), ("threads", 3)]
    markdown = (report_dir / "report.md").read_text()
    assert "| alpha | baseline | 10 | 45.0 [" in markdown and "![" in markdown


def test_same_seed_same_report(tmp_path: Path) -> None:
    run = load_runs([make_run(tmp_path)])
    assert compute_metrics(run, SETTINGS) == compute_metrics(run, SETTINGS)
    other = compute_metrics(run, SETTINGS.model_copy(update={"seed": 1}))[0]
    alpha = other["models"]["alpha"]["baseline"]["overall"]
    assert alpha["mean"] == pytest.approx(45.0)


def test_clustered_intervals_keep_the_estimates(metrics: dict[str, Any], tmp_path: Path) -> None:
    run = load_runs([make_run(tmp_path)])
    clustered = compute_metrics(run, SETTINGS.model_copy(update={"clustered": True}))[0]
    plain, other = metrics["models"]["alpha"]["baseline"], clustered["models"]["alpha"]["baseline"]
    assert other["overall"]["mean"] == plain["overall"]["mean"]
    assert other["overall"]["ci"] != plain["overall"]["ci"]
    assert other["epr"]["epr"] == plain["epr"]["epr"]
    assert clustered["bootstrap"]["method"] == "percentile, clustered by conversation"


def test_runs_sharing_dataset_and_judge_merge(metrics: dict[str, Any], tmp_path: Path) -> None:
    alpha = {key: value for key, value in SCORES.items() if key[0] == "alpha"}
    first = make_run(tmp_path, alpha, run_id="r1")
    later = make_run(tmp_path, {("beta", "baseline"): SCORES["beta", "baseline"]}, run_id="r2")
    merged = compute_metrics(load_runs([first, later]), SETTINGS)[0]
    # Each statistic draws from its own named stream, so merging changes no number.
    assert merged["models"] == metrics["models"]
    assert merged["coverage"] == metrics["coverage"]
    assert [run["run_id"] for run in merged["runs"]] == ["r1", "r2"]


def test_runs_with_another_judge_model_or_the_same_model_do_not_merge(tmp_path: Path) -> None:
    first = make_run(tmp_path / "a", run_id="r1")
    other_judge = make_run(
        tmp_path / "b", {("gamma", "baseline"): SCORES["beta", "baseline"]}, "r2", judge="x/y"
    )
    with pytest.raises(UserError) as caught:
        load_runs([first, other_judge])
    assert str(caught.value) == (
        f"these runs were judged differently, so their scores are not comparable (r1 ({first}): "
        f"openai/gpt-4o [prompts not recorded] {{}}; r2 ({other_judge}): x/y [prompts not recorded] {{}}): "
        f"report them separately {PANEL_HINT}"
    )
    same_model = make_run(tmp_path / "a", {("alpha", "baseline"): SCORES["alpha", "baseline"]}, run_id="r3")
    with pytest.raises(UserError) as caught:
        load_runs([first, same_model])
    assert str(caught.value) == (
        f"a model appears in several runs ('alpha (baseline)' in r1 ({first}), r3 ({same_model})): "
        "report those runs separately or rename the model"
    )


def judged_with(run: Path, params: dict[str, Any], rubric_sha256: str) -> Path:
    """The run's manifest as evaluate-models writes it: the judge's params as sent, its prompts' hashes."""
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["sent"] = {"judge": {"judge": {"model": manifest["judge"]["model"], "params": params}}}
    manifest["prompts"] = {
        "judge_rubric_v1": {"sha256": rubric_sha256},
        "judge_reask_v1": {"sha256": "e" * 64},
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_one_judge_model_with_another_rubric_or_temperature_is_another_judge(tmp_path: Path) -> None:
    alpha = {key: value for key, value in SCORES.items() if key[0] == "alpha"}
    beta = {("beta", "baseline"): SCORES["beta", "baseline"]}
    first = judged_with(make_run(tmp_path, alpha, run_id="r1"), {"temperature": 0}, "a" * 64)
    same = judged_with(make_run(tmp_path, beta, run_id="r2"), {"temperature": 0}, "a" * 64)
    assert load_runs([first, same]).models == ["alpha", "beta"]
    prompts = "judge_reask_v1 eeeeeeeeeeee, judge_rubric_v1 "
    for run_id, params, rubric in (
        ("r3", {"temperature": 0}, "b" * 64),
        ("r4", {"temperature": 1}, "a" * 64),
    ):
        other = judged_with(make_run(tmp_path, beta, run_id=run_id), params, rubric)
        with pytest.raises(UserError) as caught:
            load_runs([first, other])
        assert str(caught.value) == (
            f"these runs were judged differently, so their scores are not comparable (r1 ({first}): "
            f'openai/gpt-4o [{prompts}aaaaaaaaaaaa] {{"temperature": 0}}; '
            f"{run_id} ({other}): openai/gpt-4o [{prompts}{rubric[:12]}] {json.dumps(params)}): "
            f"report them separately {PANEL_HINT}"
        )


def test_a_run_never_merges_with_itself(tmp_path: Path) -> None:
    run = make_run(tmp_path, run_id="r1")
    copy = shutil.copytree(run, tmp_path / "copy")
    for again in (run, Path(f"{run}/"), tmp_path / "." / "r1", copy):
        with pytest.raises(UserError) as caught:
            load_runs([run, again])
        assert str(caught.value) == (
            f"the same run is given more than once (r1 in {run}, {again.resolve()}): give each run once"
        )
    # A copy whose manifest was given another run id still holds the same rows: the same units, refused.
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, "run_id": "r9"}))
    with pytest.raises(UserError) as caught:
        load_runs([run, copy])
    both = f"in r1 ({run}), r9 ({copy})"
    assert str(caught.value) == (
        f"a model appears in several runs ('alpha (baseline)' {both}; 'alpha (oracle)' {both}; "
        f"'beta (baseline)' {both}): report those runs separately or rename the model"
    )


def test_overlap_judge_reports_say_they_are_not_comparable(tmp_path: Path) -> None:
    run = make_run(tmp_path, judge="threadmed/overlap-judge", funnel=False)
    report_dir = Path(
        build_report.fn(run_dirs=[str(run)], out_dir=str(tmp_path / "report"), settings=SETTINGS)
    )
    markdown = (report_dir / "report.md").read_text()
    assert markdown.count("not comparable to an LLM judge") == markdown.count("### ") > 5
    assert "not comparable to an LLM judge" in (report_dir / "index.html").read_text()
    assert not (report_dir / "fig_dataset_funnel.png").exists()


def test_manifest_with_an_evaluation_config_block(tmp_path: Path) -> None:
    run = make_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(
        json.dumps(
            {
                "run_id": "r1",
                "dataset": {"dir": manifest["dataset"]["path"], "fingerprint": "fp"},
                "config": {
                    "judge": {"name": "judge", "model": "threadmed/overlap-judge"},
                    "models": [{"name": "beta", "model": "x/beta"}, {"name": "", "model": "alpha"}],
                },
            }
        )
    )
    loaded = read_manifest(run)
    assert (loaded.judge_model, loaded.models) == ("threadmed/overlap-judge", ["beta", "alpha"])
    assert load_runs([run]).models == ["beta", "alpha"]


def test_an_unfinished_run_is_told_to_finish(tmp_path):
    (tmp_path / "ledger").mkdir()
    with pytest.raises(UserError) as caught:
        check_run_folder(tmp_path)
    assert str(caught.value) == (
        f"{tmp_path} is not an evaluation run (no manifest.json); "
        f"finish the run: re-run `threadmed evaluate` with --out {tmp_path}"
    )


def _expected_page_data(per_chunk: int) -> list[Any]:
    """The browser's index and chunks for make_run, written from SCORES, TURNS and rows_of."""
    models, conditions, threads = ["alpha", "beta"], ["baseline", "oracle"], list(TURNS)
    responses, judgments = rows_of(SCORES, "r1")
    conversations: dict[tuple[int, int, int], list[tuple[list[Any], list[Any]]]] = {}
    for response, judgment in zip(responses, judgments, strict=True):
        key = (
            models.index(response["model"]),
            conditions.index(response["condition"]),
            threads.index(response["thread_id"]),
        )
        score = None if judgment["score"] is None else float(judgment["score"])
        status = "answer_failed" if response["status"] == "failed" else judgment["parse_status"]
        turn = [response["turn"], score, status]
        conversations.setdefault(key, []).append((turn, [response["response"], judgment["reason"]]))
    ordered = sorted(conversations.items())
    index = {
        "models": models,
        "conditions": conditions,
        "max_turn": 3,
        "threads": [
            [thread, {str(turn): [f"question {thread} {turn}", "w " * (turn + 1)] for turn in range(n)}]
            for thread, n in TURNS.items()
        ],
        "conversations": [[*key, [turn for turn, _ in rows]] for key, rows in ordered],
        "conversations_per_chunk": per_chunk,
    }
    texts = [[text for _, text in rows] for _, rows in ordered]
    return [index, *(texts[i : i + per_chunk] for i in range(0, len(texts), per_chunk))]


def test_the_page_packs_every_turn_and_loads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threadmed_browser, "CONVERSATIONS_PER_CHUNK", 3)
    run = make_run(tmp_path)
    report_dir = Path(
        build_report.fn(run_dirs=[str(run)], out_dir=str(tmp_path / "report"), settings=SETTINGS)
    )
    page = (report_dir / "index.html").read_text()
    payload = re.search(f'<script type="{PACKED_DATA_TYPE}" id="report-data">(.*?)</script>', page, re.S)
    assert payload is not None
    unpacked = unpack_json(payload.group(1))
    assert len(unpacked) == 1 + 3  # the index, then 8 conversations in chunks of 3
    assert unpacked == _expected_page_data(per_chunk=3)
    markup = page.replace(payload.group(1), "")
    links = re.findall(r"""\b(?:src|href)\s*=\s*["']?([^"'\s>]*)""", markup)
    assert [link for link in links if not link.startswith(("data:image/png;base64,", "#"))] == []
    assert [fetch for fetch in ("<link", "url(", "@import") if fetch in markup] == []


def test_answers_cut_at_max_tokens_are_counted_in_the_report(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path)
    responses = pq.read_table(run_dir / "responses.parquet").to_pylist()
    for row in responses:
        cut = (row["model"], row["condition"], row["thread_id"], row["turn"]) == (
            "alpha",
            "baseline",
            "c2",
            1,
        )
        row["finish_reason"] = "length" if cut else "stop"
    pq.write_table(pa.Table.from_pylist(responses, schema=RESPONSES.schema), run_dir / "responses.parquet")
    metrics = compute_metrics(load_runs([run_dir]), SETTINGS)[0]
    counts = {
        (model, condition): values["overall"]["n_truncated"]
        for model, conditions in metrics["models"].items()
        for condition, values in conditions.items()
        if condition != "ablation"
    }
    assert counts == {("alpha", "baseline"): 1, ("alpha", "oracle"): 0, ("beta", "baseline"): 0}
    overall = next(table for table in build_tables(metrics) if table.key == "overall")
    assert overall.caption.endswith(
        " Answers cut at max_tokens (judged as given, unless the run's config marks them unjudged as "
        "'truncated'): alpha baseline 1."
    )
