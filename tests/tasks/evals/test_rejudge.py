from pathlib import Path

from tasks.benchmarks.consult.contracts import PRIMARY_METRICS
from tasks.benchmarks.consult.summary import summarize
from tasks.evals.rejudge import judge_summary


def message(case_id: str, status: str, cost_usd: float) -> dict:
    failed = status == "failed"
    return {"model": "m", "case_id": case_id, "epoch": 0, "status": status, "cost_usd": cost_usd,
            "error": "503" if failed else None,
            "error_class": "server_error" if failed else None}  # fmt: skip


def score(case_id: str, status: str, error_class: str | None = None) -> dict:
    metrics = dict.fromkeys(PRIMARY_METRICS, 0.5 if status == "completed" else None)
    return {"model": "m", "case_id": case_id, "epoch": 0, "status": status, "diagnosis_parse": "ok",
            "plan_parse": "ok", **metrics, "composite": 0.5 if status == "completed" else None,
            "error": "429" if error_class else None, "error_class": error_class}  # fmt: skip


def test_a_rejudge_counts_the_judges_calls_and_failures_and_not_the_replayed_answers():
    # c1 scored; c2's agent call failed in the source run (so did its score); c3's judge call failed now.
    messages = [message("c1", "ok", 0.25), message("c2", "failed", 0.5), message("c3", "ok", 0.25)]
    scores = [
        score("c1", "completed"),
        score("c2", "failed", "server_error"),
        score("c3", "failed", "rate_limit"),
    ]
    source = summarize("r1", Path("run"), messages, scores)
    assert (source.failed_calls, source.groups[0].cost_usd) == ({"server_error": 1, "rate_limit": 1}, 1.0)

    rejudged = judge_summary(summarize, "r2", Path("new"), messages, scores)
    assert (rejudged.failed_calls, rejudged.failure_examples) == ({"rate_limit": 1}, {"rate_limit": "429"})
    assert rejudged.groups[0].cost_usd == 0.0  # the answers were paid for by the source run
    assert rejudged.groups[0].counts == source.groups[0].counts
