"""The consultation report on two hand-made runs (one model each, three cases): the report folder, its
Markdown, figures and stats, the page with the episode browser, and the published artifacts.
"""

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from prefect import flow
from prefect.artifacts import Artifact

from tasks.benchmarks.consult.report import build_report, default_report_dir, publish_report_artifacts
from tasks.core.provenance import folder_tag
from tests.tasks.benchmarks.consult.report_fixtures import (
    EPISODES,
    FOLLOW_UP,
    GOLD,
    PARSE_ERROR,
    PLAN,
    PRIMARY,
    SETTINGS,
    VIOLATION,
)


def test_report_folder_markdown_figures_and_stats(runs) -> None:
    run_dirs = [str(r) for r in runs]
    report_dir = Path(
        build_report.fn(run_dirs=run_dirs, out_dir=default_report_dir(run_dirs), settings=SETTINGS)
    )
    assert report_dir == runs[0] / "report-merged"
    for name in ("fig_mni_coverage", "fig_questions", "fig_stages"):
        assert (report_dir / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
    metrics = json.loads(
        (report_dir / "metrics.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in JSON")
    )
    # alpha: c1 covers 0, 1/2, 1/2 (2 questions), c2 0, 1; beta: c1 0, 1/2, 1/2, 1; c2 1 from the opening;
    # c3 has no MNI target. Every curve runs to turn 3 (the most questions asked); shorter ones stay flat.
    coverage = pq.read_table(report_dir / "stats_mni_coverage.parquet").to_pylist()
    assert [(row["model"], row["turn"], row["episodes"], row["mni_coverage"]) for row in coverage] == [
        ("alpha", 0, 2, 0.0),
        ("alpha", 1, 2, 0.75),
        ("alpha", 2, 2, 0.75),
        ("alpha", 3, 2, 0.75),
        ("beta", 0, 2, 0.5),
        ("beta", 1, 2, 0.75),
        ("beta", 2, 2, 0.75),
        ("beta", 3, 2, 1.0),
    ]
    episodes = pq.read_table(report_dir / "stats_episodes.parquet").to_pylist()
    assert [(row["model"], row["case_id"], row["department"], row["questions"]) for row in episodes] == [
        ("alpha", "c1", "respiratory", 2),
        ("alpha", "c2", "respiratory", 1),
        ("beta", "c1", "respiratory", 3),
        ("beta", "c2", "respiratory", 1),
        ("beta", "c3", "ent", 2),
    ]
    markdown = (report_dir / "report.md").read_text()
    mni = metrics["models"]["alpha"]["mni_comp"]["ci"]
    assert f"| alpha | 2 | 60.0 [{100 * mni[0]:.1f}, {100 * mni[1]:.1f}] |" in markdown
    assert "| 1.5 | 25.0 | 100.0 | 49.5 |" in markdown  # questions, deflection, red flags, stage score
    reference = metrics["reference"]
    assert (
        f"| empirical reference ({reference['dialogues']} real dialogues) | — | — | — | — | "
        f"{100 * reference['hit_at_k_mean']:.1f} | {100 * reference['povr_mean']:.1f} | — | — | — | — |"
        in markdown
    )
    assert (
        "rows never mined (no real dialogue asks the template, so its top 3 is the tie rule's): cardiac, "
        "exposures_travel_contacts, mental_health." in markdown
    )
    assert "| 1.0 | 33.3 | 1 | 61.1 |" in markdown  # beta's diagnosis: length, unmatched, unparseable, stage
    # treatment: complete %, regimen cov. %, dose errors %, unverified %, unparseable, stage score
    assert "| 50.0 | 66.7 | 33.3 | 100.0 | 1 | 61.1 |" in markdown
    # follow-up: FQR, DCSR, churn, revisions unparsed, graded, ungraded, judge, stage score
    assert (
        "| alpha | 2 | 75.0 [50.0, 100.0] | 100.0 [100.0, 100.0] | 0.0 | 0 | 4 | 1 | 0 | "
        "threadmed/consult-judge (offline heuristic) | 87.5 |" in markdown
    )
    assert "| beta | 3 | 50.0 [0.0, 100.0] | 50.0 [0.0, 100.0] | 50.0 | 1 | 2 | 1 | " in markdown
    # the leaderboard, best first: alpha (49.5 + 53.3 + 75 + 87.5) / 4, beta (50 + 61.1 + 61.1 + 50) / 4
    assert (
        "| 1 | alpha | 49.5 | 53.3 | 75.0 | 87.5 | 66.3 |\n| 2 | beta | 50.0 | 61.1 | 61.1 | 50.0 | 55.6 |"
        in markdown
    )
    assert (
        "| ent | beta | 1 | 0.0 | 100.0 | 0.0 | 0.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 0.0 | 0.0 "
        "| 100.0 | 100.0 | 75.0 |" in markdown
    )
    assert (
        "- 1 episode(s) failed (provider errors) and are excluded from every metric: alpha / c3 / epoch 0. "
        "Re-running the run finishes them." in markdown
    )
    assert (
        "- 1 differential(s) did not parse after the re-ask and score the worst of every diagnosis metric "
        "(beta 1)." in markdown
    )
    assert (
        "- 1 treatment plan(s) did not parse after the re-ask and score the worst of every treatment metric "
        "(PSC 0), never as a safe or empty plan (beta 1)." in markdown
    )
    assert (
        "- 1 revised plan(s) did not parse after the re-ask: no plan in force can be read after them (DCSR 0 "
        "when no later revision parses) (beta 1)." in markdown
    )
    assert (
        "- 1 agent repl(ies) made a parser raise (a parser bug) and were scored as unparseable, their "
        f"episodes kept: beta / c2 / epoch 0: {PARSE_ERROR}." in markdown
    )
    assert (
        "- 2 follow-up grade(s) did not parse after the re-ask and are left out of FQR, not scored 0 "
        "(alpha 1, beta 1)." in markdown
    )
    assert "- FQR is graded by threadmed/consult-judge, an offline heuristic standing in" in markdown
    assert "2 of the 4 stages" not in markdown and "(partial)" not in markdown
    stages = ["### History taking", "### Diagnosis", "### Treatment plan", "### Follow-up", "### Leaderboard"]
    assert sorted(stages, key=markdown.index) == stages
    assert "![MNI coverage against turns" in markdown and "![The primary metrics of each stage" in markdown
    primary = pq.read_table(report_dir / "stats_primary.parquet").to_pylist()
    assert [row for row in primary if row["model"] == "alpha" and row["stage"] == "follow_up"] == [
        {
            "model": "alpha",
            "stage": "follow_up",
            "metric": "fqr",
            "n": 2,
            "mean": 0.75,
            "low": 0.5,
            "high": 1.0,
        },
        {
            "model": "alpha",
            "stage": "follow_up",
            "metric": "dcsr",
            "n": 1,
            "mean": 1.0,
            "low": 1.0,
            "high": 1.0,
        },
        {
            "model": "alpha",
            "stage": "follow_up",
            "metric": "stage",
            "n": 2,
            "mean": 0.875,
            "low": None,
            "high": None,
        },
    ]


def page_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))


def test_page_holds_the_browser_with_questions_and_the_differential_against_gold(
    tmp_path: Path, runs
) -> None:
    report_dir = Path(
        build_report.fn(run_dirs=[str(r) for r in runs], out_dir=str(tmp_path / "out"), settings=SETTINGS)
    )
    page = (report_dir / "index.html").read_text()
    assert 'id="pick-model"' in page and '<figure id="fig_mni_coverage">' in page
    assert "http://" not in page and "https://" not in page  # self-contained
    data = page_data(page)
    assert (data["models"], data["cases"]) == (["alpha", "beta"], ["c1", "c2", "c3"])
    alpha_c1 = data["episodes"][0]
    messages = alpha_c1.pop("messages")
    assert alpha_c1 == {
        "model": 0,
        "case": 0,
        "epoch": 0,
        "status": "completed",
        "department": "respiratory",
        "difficulty": "easy",
        "questions": 2,
        "diagnosis_parse": "ok",
        "plan_parse": "ok",
        "revisions_unparseable": 0,
        "parse_errors": [],
        "mni_target": ["a1", "a2"],
        # composite: history (.8 + .8 + .6 + .5) / 4, diagnosis .9667, treatment 1, follow-up 1
        "metrics": {
            **dict(zip(PRIMARY, EPISODES["alpha"]["c1"][0], strict=True)),
            "composite": pytest.approx((0.675 + 2.9 / 3 + 1 + 1) / 4),
        },
        "error": None,
        "differential": [
            {**item, "kind": kind}
            for item, kind in zip(EPISODES["alpha"]["c1"][4], ("hit", "unmatched"), strict=True)
        ],
        "gold": [{**GOLD["c1"][0], "listed": True}, {**GOLD["c1"][1], "listed": False}],
        "plan": PLAN,
        "plan_advice": "Rest and fluids.",
        "violations": [VIOLATION],
        "follow_ups": [FOLLOW_UP],
    }
    assert messages == [
        [0, "patient", "history", "simulated", "Hi, I feel unwell", None, [], False],
        [1, "agent", "history", "ok", "Question 1?", None, [], False],
        [1, "patient", "history", "simulated", "Answer 1", "t1", ["a1", "x1"], False],
        [2, "agent", "history", "ok", "Question 2?", None, [], False],
        [2, "patient", "history", "simulated", "Answer 2", "t2", [], True],
        [3, "agent", "diagnosis", "ok", "[differential]", None, [], False],
    ]
    failed = data["episodes"][2]
    assert (failed["status"], failed["error"], failed["differential"], failed["metrics"]["mni_comp"]) == (
        "failed",
        "rate limited",
        [],
        None,
    )
    assert [item["kind"] for item in data["episodes"][1]["differential"]] == ["wrong"]  # alpha c2
    assert [item["kind"] for item in data["episodes"][3]["differential"]] == ["hit", "listed"]  # beta c1


@pytest.mark.usefixtures("prefect_harness")
def test_artifacts_are_published_from_the_stored_report(tmp_path: Path, runs) -> None:
    report_dir = build_report.fn(
        run_dirs=[str(r) for r in runs], out_dir=str(tmp_path / "out"), settings=SETTINGS
    )
    keys = flow(publish_report_artifacts.fn)(report_dir=report_dir)
    names = ["history", "diagnosis", "treatment", "follow-up", "composite", "departments", "usage", "summary"]
    prefix = f"consult-report-r1-and-1-more-{folder_tag(report_dir)}"  # the first run, the others, the folder
    assert keys == [f"{prefix}-{name}" for name in names]
    summary = Artifact.get(key=f"{prefix}-summary")
    assert summary is not None and summary.data == (Path(report_dir) / "report.md").read_text()
