"""The consultation benchmark's run summary: per agent and epoch, episodes completed and failed, the
agent's differentials, plans and revised plans unparsed (the SCORES columns the report counts too), and the
composite of the epoch's episodes as the report computes it (composite.py)."""

from collections import Counter
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.composite import episodes_composite
from tasks.benchmarks.consult.judge import n_judge_cut
from tasks.evals.outputs import EpisodeCounts, RunSummary, summarize_by_epoch

JUDGE_CUT_LABEL = "judge\ncut"


def composite_score(episodes: list[dict[str, Any]]) -> float | None:
    """The composite of an epoch's episodes (SCORES rows): the report's number for them."""
    return episodes_composite(episodes).score


# The line breaks keep the CLI's table 80 columns wide.
EPISODES = EpisodeCounts(
    counts={
        "completed": ("status", "completed"),
        "failed": ("status", "failed"),
        "dx\nunparsed": ("diagnosis_parse", "unparseable"),
        "plan\nunparsed": ("plan_parse", "unparseable"),
    },
    totals=(("revision\nunparsed", "revisions_unparseable"),),
    score=composite_score,
    score_label="composite",
    score_note=(
        "composite 0-100 as the report computes it: each primary metric averaged over the epoch's completed "
        "episodes where it is defined, then by stage, then the four stages (an unparsed output scores the "
        "worst; undefined when no FQR grade was read)"
    ),
)


def summarize(
    run_id: str, run_dir: Path, messages: list[dict[str, Any]], results: list[dict[str, Any]]
) -> RunSummary:
    """The summary by agent and epoch. A failed judge call has no message row: its episode's failed SCORES
    row (with no failed message) counts as that failed call, so the run ends failed and a re-run finishes."""
    episode = ("model", "case_id", "epoch")
    agent_failed = {tuple(m[c] for c in episode) for m in messages if m["status"] == "failed"}
    judge_failures = [
        {
            **{c: row[c] for c in episode},
            "status": "failed",
            "error": row["error"],
            "error_class": row["error_class"],
        }
        for row in results
        if row["status"] == "failed" and tuple(row[c] for c in episode) not in agent_failed
    ]
    summary = summarize_by_epoch(run_id, run_dir, [*messages, *judge_failures], results, how=EPISODES)
    return with_judge_cut(summary, results)


def with_judge_cut(summary: RunSummary, results: list[dict[str, Any]]) -> RunSummary:
    """`summary` with a last count column: the follow-ups whose grade is missing because the FQR judge's
    last reply was cut at its max_tokens (judge.n_judge_cut, as the report counts them)."""
    cut: Counter[tuple[str, str]] = Counter()
    for row in results:
        cut[(row["model"], str(row["epoch"]))] += n_judge_cut(row.get("follow_ups"))
    groups = [
        group.model_copy(
            update={"counts": {**group.counts, JUDGE_CUT_LABEL: cut[(group.model, group.group)]}}
        )
        for group in summary.groups
    ]
    note = f"{summary.score_note}; judge cut: follow-ups whose FQR judge reply was cut at its max_tokens"
    return summary.model_copy(
        update={
            "groups": groups,
            "count_labels": [*summary.count_labels, JUDGE_CUT_LABEL],
            "score_note": note,
        }
    )
