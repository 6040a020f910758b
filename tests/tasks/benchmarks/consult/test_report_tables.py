"""The consultation report's tables, notes and terminal tables from the hand-made runs' metrics."""

import json
from typing import Any

from tasks.benchmarks.consult.notes import cut_notes, report_notes
from tasks.benchmarks.consult.tables import build_tables
from tasks.benchmarks.consult.terminal import terminal_tables


def test_published_tables_are_rebuilt_from_the_stored_metrics(metrics: dict[str, Any]) -> None:
    stored = json.loads(json.dumps(metrics))
    tables = build_tables(stored)
    keys = ["history", "diagnosis", "treatment", "follow-up", "composite", "departments", "usage"]
    assert [table.key for table in tables] == keys
    assert tables == build_tables(metrics)


def test_the_cost_table_counts_the_judges_calls_beside_the_agents(metrics: dict[str, Any]) -> None:
    [usage] = [table for table in build_tables(metrics) if table.key == "usage"]
    assert usage.rows == [
        ["alpha", "agent", "6", "500", "50", "0.6250", "0"],
        ["alpha", "judge", "4", "160", "16", "0.0400", "—"],
        ["beta", "agent", "9", "900", "90", "1.1250", "1"],
        ["beta", "judge", "6", "240", "24", "0.0600", "—"],
    ]


def test_replies_cut_at_max_tokens_are_noted_by_model_and_stage(metrics: dict[str, Any]) -> None:
    assert cut_notes(metrics) == [
        "1 agent repl(ies) were cut at max_tokens (beta: diagnosis 1): a cut differential or plan is parsed "
        "as given; a cut follow-up answer was judged as given (the config's `truncated: judge`). A larger "
        "max_tokens avoids this."
    ]
    marked = {
        "a": {"replies_cut": {"history": 2, "follow_up": 1}, "fqr_truncated": 1},
        "b": {"replies_cut": {}, "fqr_truncated": 0},
    }
    assert cut_notes({"models": marked}) == [
        "3 agent repl(ies) were cut at max_tokens (a: history 2, follow-up 1): a cut differential or plan is "
        "parsed as given; 1 cut follow-up answer(s) were left ungraded (the config's `truncated: mark`) and "
        "out of FQR, any other was judged as given. A larger max_tokens avoids this."
    ]
    assert cut_notes({"models": {"b": marked["b"]}}) == []


def test_follow_up_grades_missing_for_a_cut_judge_reply_are_noted_by_model(metrics: dict[str, Any]) -> None:
    cut = {
        **metrics,
        "models": {**metrics["models"], "alpha": {**metrics["models"]["alpha"], "n_judge_cut": 2}},
    }
    assert [note for note in report_notes(cut) if "(judge cut)" in note] == [
        "2 follow-up grade(s) are missing because the judge's reply was still cut at its max_tokens after "
        "the last re-ask (judge cut): left out of FQR, not scored 0; a larger judge max_tokens avoids "
        "this (alpha 2)."
    ]
    assert [note for note in report_notes(metrics) if "(judge cut)" in note] == []


def test_the_terminal_composite_says_what_it_is_to_the_reader(metrics: dict[str, Any]) -> None:
    composite = terminal_tables(metrics)[-1]
    assert (composite.title, composite.caption) == (
        "Composite, %",
        "The stage scores of the tables above and their mean; the stage tables show where a model is weak.",
    )


def test_the_terminal_tables_count_each_stages_unparsed_outputs(metrics: dict[str, Any]) -> None:
    tables = {table.key: table for table in terminal_tables(metrics)}
    rows = {
        key: {row[0]: row[1:] for row in tables[f"{key}-terminal"].rows}
        for key in ("diagnosis", "treatment", "follow-up")
    }
    assert (
        rows["diagnosis"]["differentials unparsed"],
        rows["treatment"]["plans unparsed"],
        rows["follow-up"]["revisions unparsed"],
    ) == (["0", "1"], ["0", "1"], ["0", "1"])
