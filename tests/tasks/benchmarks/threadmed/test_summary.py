from pathlib import Path

from tasks.benchmarks.threadmed.summary import summarize


def test_the_summary_counts_statuses_means_and_failures_keeping_a_message_per_kind():
    key = {"run_id": "r", "model": "m", "condition": "baseline", "thread_id": "t"}
    overloaded = "m: error in an HTTP 200 reply: Overloaded (gave up after 6 attempts; re-run to retry)"
    responses = [
        {**key, "turn": 0, "status": "ok", "error_class": None, "cost_usd": 0.5, "finish_reason": "length"},
        {**key, "turn": 1, "status": "failed", "error_class": "server_error", "error": overloaded},
        {**key, "turn": 2, "status": "not_run", "error_class": None, "error": "not run: turn 1 failed"},
    ]
    judgments = [
        {**key, "turn": 0, "parse_status": "ok", "score": 0.5, "cost_usd": 0.25},
        {**key, "turn": 3, "parse_status": "unparseable", "score": None, "cost_usd": 0.25},
        {**key, "turn": 6, "parse_status": "judge_cut", "score": None, "cost_usd": 0.125},
        {**key, "turn": 4, "parse_status": "failed", "score": None, "error": "server_error: judge: 503"},
        {**key, "turn": 5, "parse_status": "failed", "score": None, "error": "authentication: judge: no key"},
    ]
    summary = summarize("r", Path("run"), responses, judgments)
    [group] = summary.groups
    assert group.counts == {
        "answer\nok": 1,
        "answer\nfailed": 1,
        "not\nrun": 1,
        "cut": 1,  # the answer of turn 0 was cut at max_tokens
        "judged": 1,
        "no\ngrade": 1,
        "judge\ncut": 1,  # the judge's last reply on turn 6 was cut at its max_tokens
        "judge\nfailed": 2,
    }
    assert (group.group, group.score, group.cost_usd) == ("baseline", 50.0, 1.125)
    assert summary.failed_calls == {"server_error": 2, "authentication": 1}
    assert summary.failure_examples == {"server_error": overloaded, "authentication": "judge: no key"}
