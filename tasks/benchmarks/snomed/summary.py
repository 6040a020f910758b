"""The SNOMED benchmark's run summary: per clinician and epoch, interviews answered, unanswered, failed."""

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tasks.evals.outputs import GroupSummary, RunSummary, failure_counts

# Column label -> interview status counted; the line break keeps the CLI's table 80 columns wide.
COUNTS = {"answered": "answered", "no\nanswer": "no_answer", "failed": "failed"}


def summarize(
    run_id: str, run_dir: Path, messages: list[dict[str, Any]], results: list[dict[str, Any]]
) -> RunSummary:
    """Per model and epoch: interviews by status, mean F1 (0-100, failed excluded), cost of both roles."""
    by_group: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in results:
        by_group[(row["model"], row["epoch"])].append(row)
    cost: Counter[tuple[str, int]] = Counter()
    for row in messages:
        cost[(row["model"], row["epoch"])] += row.get("cost_usd") or 0.0
    groups = []
    for (model, epoch), rows in sorted(by_group.items()):
        statuses = Counter(row["status"] for row in rows)
        f1 = [row["f1"] for row in rows if row["status"] != "failed"]
        groups.append(
            GroupSummary(
                model=model,
                group=str(epoch),
                counts={label: statuses[status] for label, status in COUNTS.items()},
                score=100 * sum(f1) / len(f1) if f1 else None,
                cost_usd=cost[(model, epoch)],
            )
        )
    failures = [(row["error_class"], row["error"]) for row in messages if row["status"] == "failed"]
    return RunSummary(
        run_id=run_id,
        run_dir=run_dir,
        groups=groups,
        **failure_counts(failures),
        group_label="epoch",
        count_labels=list(COUNTS),
        score_label="F1",
        score_note="mean F1 0-100 over scored interviews (failed excluded); cost of clinician and patient",
    )
