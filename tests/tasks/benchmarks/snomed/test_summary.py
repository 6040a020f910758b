from pathlib import Path

from tasks.benchmarks.snomed.summary import summarize
from tasks.evals.outputs import GroupSummary, RunSummary


def result(model: str, epoch: int, case_id: str, status: str, f1: float | None = None):
    row = {"run_id": "run1", "model": model, "case_id": case_id, "epoch": epoch, "status": status}
    return row if status == "failed" else {**row, "f1": f1}


def message(
    model: str, epoch: int, status: str, cost_usd: float, error: tuple[str, str] | None = None, finish="stop"
):
    error_class, text = error or (None, None)
    return {
        "model": model,
        "epoch": epoch,
        "status": status,
        "cost_usd": cost_usd,
        "finish_reason": finish if status == "ok" else None,
        "error_class": error_class,
        "error": text,
    }


def test_counts_mean_f1_and_cost_per_model_and_epoch_with_one_example_per_failure_kind():
    results = [
        result("doc", 0, "t1", "answered", 0.5),
        result("doc", 0, "t2", "no_answer", 0.0),
        result("doc", 0, "t4", "unparseable", 0.0),
        result("doc", 0, "t3", "failed"),
        result("doc", 1, "t1", "answered", 1.0),
        result("alt", 0, "t1", "failed"),
        result("alt", 0, "t2", "failed"),
    ]
    messages = [
        {"model": "doc", "epoch": 0, "status": "scripted"},  # the opening: no call, no cost
        message("doc", 0, "ok", 0.25),
        message("doc", 0, "ok", 0.5, finish="length"),  # cut at max_tokens
        message("doc", 0, "failed", 0.0, ("rate_limit", "429 slow down")),
        message("doc", 1, "ok", 0.125),
        message("alt", 0, "failed", 0.0625, ("rate_limit", "429 quota")),
        message("alt", 0, "failed", 0.0, ("server_error", "500 boom")),
    ]
    summary = summarize("run1", Path("runs/x"), messages, results)
    assert summary == RunSummary(
        run_id="run1",
        run_dir=Path("runs/x"),
        groups=[
            GroupSummary(
                model="alt",
                group="0",
                counts={"answered": 0, "no\nanswer": 0, "un-\nparseable": 0, "failed": 2, "cut": 0},
                score=None,
                cost_usd=0.0625,
            ),
            GroupSummary(
                model="doc",
                group="0",
                counts={"answered": 1, "no\nanswer": 1, "un-\nparseable": 1, "failed": 1, "cut": 1},
                score=100 * (0.5 / 3),  # the group's mean F1 in [0, 1], then x 100
                cost_usd=0.75,
            ),
            GroupSummary(
                model="doc",
                group="1",
                counts={"answered": 1, "no\nanswer": 0, "un-\nparseable": 0, "failed": 0, "cut": 0},
                score=100.0,
                cost_usd=0.125,
            ),
        ],
        failed_calls={"rate_limit": 2, "server_error": 1},
        failure_examples={"rate_limit": "429 slow down", "server_error": "500 boom"},
        group_label="epoch",
        count_labels=["answered", "no\nanswer", "un-\nparseable", "failed", "cut"],
        score_label="F1",
        score_note="mean F1 0-100 over scored interviews (failed excluded); cost of clinician and patient",
        # Every epoch's scored interviews pooled, as the report's mean F1 is: (0.5 + 0 + 0 + 1) / 4, not the
        # mean of the epochs' means (58.3).
        overall={"alt": None, "doc": 37.5},
    )
    assert [table.rows for table in summary.tables()] == [
        [["0", "0", "0", "0", "2", "0", "—", "0.0625"]],
        [
            ["0", "1", "1", "1", "1", "1", "16.7", "0.7500"],
            ["1", "1", "0", "0", "0", "0", "100.0", "0.1250"],
            ["all", "2", "1", "1", "1", "1", "37.5", "0.8750"],
        ],
    ]


def test_a_run_without_failures_has_no_failure_counts():
    summary = summarize(
        "run1", Path("runs/x"), [message("doc", 0, "ok", 0.5)], [result("doc", 0, "t1", "answered", 1.0)]
    )
    assert (summary.failed_calls, summary.failure_examples) == ({}, {})
    assert summary.markdown().splitlines()[2] == "**Every call succeeded.**"
