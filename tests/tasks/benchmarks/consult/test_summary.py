from pathlib import Path

import pytest

from tasks.benchmarks.consult.composite import composite, episodes_composite
from tasks.benchmarks.consult.judge import n_judge_cut
from tasks.benchmarks.consult.summary import summarize
from tasks.evals.outputs import GroupSummary
from tests.tasks.benchmarks.consult.test_composite import VALUES


def test_the_summary_counts_each_stages_unparsed_outputs_and_scores_the_reports_composite():
    def row(case_id, status="completed", plan_parse="ok", revisions=0, **metrics):
        values = {**VALUES, **metrics} if status == "completed" else dict.fromkeys(VALUES)
        return {
            "model": "m",
            "case_id": case_id,
            "epoch": 0,
            "status": status,
            "diagnosis_parse": "ok" if case_id != "c3" else "unparseable",
            "plan_parse": plan_parse,
            "revisions_unparseable": None if status == "failed" else revisions,
            **values,
            "composite": composite(values).score,
            "error": "503" if status == "failed" else None,
            "error_class": "ServerError" if status == "failed" else None,
        }

    rows = [
        row("c1", revisions=2, ddiv=None),  # no drug pair: DDIV undefined
        row("c2", plan_parse="unparseable", revisions=1, psc=0.0, ddiv=1.0, pcr=1.0),
        row("c3", fqr=None),  # no FQR grade read: its own composite is undefined, its other metrics count
        row("c4", status="failed"),
    ]
    summary = summarize("r1", Path("run"), [], rows)
    # Treatment: PSC (1 + 0 + 1) / 3, 1 - DDIV (1 - 1 + 1 - .25) / 2, 1 - PCR (.5 + 0 + .5) / 3; the others
    # as VALUES; FQR .5 over c1 and c2. The mean of the episodes' own composites (c1 .575, c2 .3875) would be
    # 48.125.
    treatment = (2 / 3 + 0.375 + 1 / 3) / 3
    history, diagnosis, follow_up = (0.8 + 0.6 + 0.5 + 0.3) / 4, (1.0 + 0.5 + 0.75) / 3, 0.25
    assert summary.groups == [
        GroupSummary(
            model="m",
            group="0",
            counts={
                "completed": 3,
                "failed": 1,
                "dx\nunparsed": 1,
                "plan\nunparsed": 1,
                "revision\nunparsed": 3,  # revised plans, 2 in c1 and 1 in c2
                "cut": 0,
                "judge\ncut": 0,
            },
            score=100 * episodes_composite(rows).score,
            cost_usd=0.0,
        )
    ]
    assert summary.groups[0].score == pytest.approx(100 * (history + diagnosis + treatment + follow_up) / 4)
    own = [row["composite"] for row in rows if row["composite"] is not None]
    assert round(100 * sum(own) / len(own), 9) == 48.125 != round(summary.groups[0].score, 9)
    assert summary.count_labels == [
        "completed",
        "failed",
        "dx\nunparsed",
        "plan\nunparsed",
        "revision\nunparsed",
        "cut",
        "judge\ncut",
    ]
    assert summary.score_label == "composite"


def test_the_summary_counts_follow_ups_whose_judge_reply_was_cut_as_the_report_does():
    def row(epoch, statuses):
        follow_ups = [{"judge_status": status} for status in statuses]
        return {"model": "m", "case_id": "c1", "epoch": epoch, "status": "completed", "diagnosis_parse": "ok",
                "plan_parse": "ok", **VALUES, "composite": None, "follow_ups": follow_ups}  # fmt: skip

    rows = [row(0, ["ok", "judge_cut", "judge_cut"]), row(1, ["unparseable", "truncated"]), row(2, [])]
    summary = summarize("r1", Path("run"), [], rows)
    assert [(group.group, group.counts["judge\ncut"]) for group in summary.groups] == [
        ("0", 2),
        ("1", 0),
        ("2", 0),
    ]
    assert summary.count_labels[-1] == "judge\ncut" and "judge cut:" in summary.score_note
    assert [n_judge_cut(r["follow_ups"]) for r in rows] == [2, 0, 0]


def test_the_score_over_all_epochs_is_the_reports_composite_of_every_episode_not_a_mean_of_epochs():
    def row(epoch, case_id, **metrics):
        return {"model": "m", "case_id": case_id, "epoch": epoch, "status": "completed",
                "diagnosis_parse": "ok", "plan_parse": "ok", "revisions_unparseable": 0,
                **{**VALUES, **metrics}}  # fmt: skip

    rows = [row(0, "c1", psc=0.0), row(0, "c2", ddiv=None), row(1, "c1", psc=1.0)]
    summary = summarize("r1", Path("run"), [], rows)
    by_epoch = [group.score for group in summary.groups]
    assert summary.overall == {"m": 100 * episodes_composite(rows).score}
    assert summary.overall["m"] != pytest.approx(sum(by_epoch) / 2)  # epoch 0 has twice the episodes
    assert summary.tables()[0].rows[-1][0] == "all"
