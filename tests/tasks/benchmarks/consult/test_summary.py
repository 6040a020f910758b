from pathlib import Path

from tasks.benchmarks.consult.judge import n_judge_cut
from tasks.benchmarks.consult.summary import summarize
from tasks.evals.outputs import GroupSummary


def test_the_summary_counts_each_stages_unparsed_outputs_and_scores_the_composite():
    def row(case_id, status="completed", plan_parse="ok", revisions=0, composite=None):
        return {
            "model": "m",
            "case_id": case_id,
            "epoch": 0,
            "status": status,
            "diagnosis_parse": "ok" if case_id != "c3" else "unparseable",
            "plan_parse": plan_parse,
            "revisions_unparseable": None if status == "failed" else revisions,
            "composite": composite,
            "error": "503" if status == "failed" else None,
            "error_class": "ServerError" if status == "failed" else None,
        }

    rows = [
        row("c1", composite=0.5, revisions=2),
        row("c2", plan_parse="unparseable", revisions=1, composite=0.75),
        row("c3"),
        row("c4", status="failed"),
    ]
    summary = summarize("r1", Path("run"), [], rows)
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
            score=62.5,  # 100 x (0.5 + 0.75) / 2: an undefined composite is left out
            cost_usd=0.0,
        )
    ]
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
                "plan_parse": "ok", "composite": None, "follow_ups": follow_ups}  # fmt: skip

    rows = [row(0, ["ok", "judge_cut", "judge_cut"]), row(1, ["unparseable", "truncated"]), row(2, [])]
    summary = summarize("r1", Path("run"), [], rows)
    assert [(group.group, group.counts["judge\ncut"]) for group in summary.groups] == [
        ("0", 2),
        ("1", 0),
        ("2", 0),
    ]
    assert summary.count_labels[-1] == "judge\ncut" and "judge cut:" in summary.score_note
    assert [n_judge_cut(r["follow_ups"]) for r in rows] == [2, 0, 0]
