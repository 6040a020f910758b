"""The consultation benchmark's run summary: per agent and epoch, episodes completed, unparsed, failed."""

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tasks.evals.outputs import GroupSummary, RunSummary, failure_counts

COUNTS = {"completed": ("status", "completed"), "dx\nunparsed": ("diagnosis_parse", "unparseable"),
          "failed": ("status", "failed")}  # fmt: skip


def summarize(
    run_id: str, run_dir: Path, messages: list[dict[str, Any]], scores: list[dict[str, Any]]
) -> RunSummary:
    """Per agent and epoch: episodes by status, mean Core-Dx F1 (0-100, failed excluded), agent cost."""
    by_group: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for row in scores:
        by_group[(row["model"], row["epoch"])].append(row)
    cost: Counter[tuple[str, int]] = Counter()
    for row in messages:
        cost[(row["model"], row["epoch"])] += row.get("cost_usd") or 0.0
    groups = []
    for (model, epoch), rows in sorted(by_group.items()):
        f1 = [row["core_dx_f1"] for row in rows if row.get("core_dx_f1") is not None]
        groups.append(
            GroupSummary(
                model=model,
                group=str(epoch),
                counts={label: sum(row.get(c) == v for row in rows) for label, (c, v) in COUNTS.items()},
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
        score_label="Core-Dx F1",
        score_note="mean Core-Dx F1 0-100 over scored episodes (failed excluded)",
    )
