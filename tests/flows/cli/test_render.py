"""What the commands print, drawn as Table records: cells, alignment and the whole terminal text."""

import json

from rich.console import Console

from flows.cli.render import funnel_table, print_benchmark_report, print_run_summary, table1
from tasks.evals.outputs import RunSummary
from tasks.report.tables import Table, table_rich

FUNNEL = [
    {"stage": "threads", "stage_order": 2, "reason": None, "count_rows": 1200},
    {"stage": "threads", "stage_order": 2, "reason": "single turn", "count_rows": 30},
    {"stage": "posts", "stage_order": 1, "reason": None, "count_rows": 5000},
]
SIDE = {
    "threads": 1200, "questions": 4000, "answered_questions": 3000, "answered_pct": 75.0,
    "follow_ups_min": 1, "follow_ups_max": 9, "follow_ups_mean": 2.3, "follow_ups_median": 2,
    "threads_exactly_3_turns_pct": 40.0, "threads_4plus_turns_pct": 20.0, "threads_5plus_turns_pct": 10.0,
    "question_tokens_mean": 80.25, "answer_tokens_mean": 60.0, "thread_tokens_mean": 400.0,
}  # fmt: skip
SUMMARY = {
    "run_id": "r1",
    "run_dir": "run",
    "failed_calls": {},
    "groups": [
        {"model": "openai/m", "group": "baseline", "score": 61.25, "cost_usd": 1.75,
         "counts": {"answered": 1500, "answer\nfailed": 2, "judged": 1400, "unparseable": 3}},
        {"model": "openai/m", "group": "oracle", "counts": {"not\nrun": 4}, "score": None, "cost_usd": 0.0},
    ],
    "count_labels": ["answered", "answer\nfailed", "not\nrun", "judged", "unparseable", "judge\nfailed"],
    "score_note": "mean score 0-100 over judged turns (unparseable excluded)",
}  # fmt: skip


def text(renderable) -> str:
    console = Console(width=100, record=True)
    console.print(renderable)
    return console.export_text()


def test_funnel_rows_are_in_stage_order_with_totals_first():
    table = funnel_table(FUNNEL)
    assert [row[:2] for row in table.rows] == [
        ["[bold]posts[/bold]", "[bold]passed on[/bold]"],
        ["[bold]threads[/bold]", "[bold]passed on[/bold]"],
        ["", "single turn"],
    ]
    assert "5,000" in text(table_rich(table))


def test_table1_formats_both_datasets():
    table = table1({"tokenizer": "cl100k_base", "full": SIDE, "answered": SIDE})
    assert table.title == "Table 1: dataset statistics (tokens: tiktoken cl100k_base)"
    assert table.rows[0] == ["Conversation threads", "1,200", "1,200"]
    assert table.rows[4] == ["Follow-ups per thread (min / max)", "1 / 9", "1 / 9"]
    assert table.rows[9] == ["Question tokens (mean)", "80.2", "80.2"]


def test_run_summary_is_one_table_per_model_with_a_dash_for_no_score():
    [table] = RunSummary.model_validate(SUMMARY).tables()
    assert table.title == "openai/m"
    assert table.rows == [
        ["baseline", "1,500", "2", "0", "1,400", "3", "0", "61.2", "1.7500"],
        ["oracle", "0", "0", "4", "0", "0", "0", "—", "0.0000"],
    ]
    console = Console(width=100, record=True)
    print_run_summary({"summary": SUMMARY, "notes": []}, console)
    printed = console.export_text()
    assert printed.startswith("Run r1: mean score 0-100 over judged turns (unparseable excluded)\n")
    assert "openai/m" in printed and "61.2" in printed


def test_a_run_summary_says_what_this_invocation_made_and_paid_beside_the_run_s_totals():
    run = {
        **SUMMARY,
        "calls_by_mode": {"single": {"calls": 8, "cost_usd": 0.0016}, "reused": {"calls": 84, "cost_usd": 0}},
        "invocation_calls": {"single": {"calls": 6, "cost_usd": 0.0012}},
        "failed_calls": {"rate_limit": 2},
        "failure_examples": {"rate_limit": "openai/m: 429 [slow down]"},
    }
    console = Console(width=200, record=True)
    print_run_summary({"summary": run, "notes": ["Answers replayed."]}, console)
    assert [line.rstrip() for line in console.export_text().splitlines()[-4:]] == [
        "Calls made by this invocation: 6 single (USD 0.0012)",
        "Calls of the run, every invocation: 8 single (USD 0.0016), 84 reused from earlier runs' ledgers "
        "(USD 0.0000)",
        "rate limit (2), e.g. openai/m: 429 [slow down]",
        "Answers replayed.",
    ]
    # An invocation that made no call says so; a manifest written before invocations were counted says
    # only the run's totals.
    idle = RunSummary.model_validate({**run, "invocation_calls": {}})
    assert idle.calls_lines()[0] == "Calls made by this invocation: none (USD 0.0000)"
    older = RunSummary.model_validate({key: value for key, value in run.items() if key != "invocation_calls"})
    assert older.calls_lines() == [
        "Calls of the run, every invocation: 8 single (USD 0.0016), 84 reused from earlier runs' ledgers "
        "(USD 0.0000)"
    ]


def test_a_benchmark_report_prints_its_tables_its_notes_and_where_its_files_are(tmp_path):
    (tmp_path / "metrics.json").write_text(json.dumps({"score": 61.25, "note": "2 [leaks] found"}))
    console = Console(width=200, record=True)

    def tables(metrics):
        return [Table("t", "Results", ["model", "score"], [["doc", str(metrics["score"])]], "")]

    print_benchmark_report(tmp_path, tables, lambda metrics: [metrics["note"]], console)
    # A note is text, not markup: its brackets are printed.
    assert [line.rstrip() for line in console.export_text().splitlines()] == [
        "Results",
        "model  score",
        "────────────",
        "doc    61.25",
        "2 [leaks] found",
        f"  {tmp_path / 'report.md'}",
        f"  {tmp_path / 'index.html'}",
        f"  {tmp_path / 'metrics.json'}",
    ]
