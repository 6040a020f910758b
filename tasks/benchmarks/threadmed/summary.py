"""ThReadMed-QA's run summary: per model and condition, turns answered, failed, not run and judged."""

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from tasks.benchmarks.threadmed.scorer import is_truncated
from tasks.evals.outputs import GroupSummary, RunSummary, failure_counts
from tasks.evals.verdicts import JUDGE_CUT

# Column label -> (table, status) counted; the line breaks and short labels keep the CLI's table 80 columns
# wide ("no grade": the judgment is unparseable; "judge cut": its last judge reply was cut at max_tokens).
COUNTS = {
    "answer\nok": ("responses", "ok"),
    "answer\nfailed": ("responses", "failed"),
    "not\nrun": ("responses", "not_run"),
    "cut": ("responses", "truncated"),  # answers cut at max_tokens, judged or not (EvalConfig.truncated)
    "judged": ("judgments", "ok"),
    "no\ngrade": ("judgments", "unparseable"),
    "judge\ncut": ("judgments", JUDGE_CUT),
    "judge\nfailed": ("judgments", "failed"),
}


def summarize(
    run_id: str, run_dir: Path, responses: list[dict[str, Any]], judgments: list[dict[str, Any]]
) -> RunSummary:
    """Per model and condition: rows by status, mean judged score (0-100, unparseable excluded), costs."""
    by_group: dict[tuple[str, str], dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in responses:
        by_group[(row["model"], row["condition"])]["responses"].append(row)
    for row in judgments:
        by_group[(row["model"], row["condition"])]["judgments"].append(row)
    groups = []
    for (model, condition), rows in sorted(by_group.items()):
        statuses = {
            "responses": Counter(r["status"] for r in rows["responses"])
            + Counter("truncated" for r in rows["responses"] if is_truncated(r)),
            "judgments": Counter(j["parse_status"] for j in rows["judgments"]),
        }
        scores = [j["score"] for j in rows["judgments"] if j["parse_status"] == "ok"]
        groups.append(
            GroupSummary(
                model=model,
                group=condition,
                counts={label: statuses[table][status] for label, (table, status) in COUNTS.items()},
                score=100 * sum(scores) / len(scores) if scores else None,
                cost_usd=sum(r.get("cost_usd") or 0.0 for r in [*rows["responses"], *rows["judgments"]]),
            )
        )
    # JUDGMENTS has no error_class column: a failed judgment's error is "<kind>: <error>".
    failures = [(r["error_class"], r["error"]) for r in responses if r["status"] == "failed"]
    failures += [tuple(j["error"].split(": ", 1)) for j in judgments if j["parse_status"] == "failed"]
    return RunSummary(
        run_id=run_id,
        run_dir=run_dir,
        groups=groups,
        **failure_counts(failures),
        count_labels=list(COUNTS),
        score_note="mean score 0-100 over judged turns (unparseable excluded); cut: answers cut at "
        "max_tokens, judged as given unless the config says `truncated: mark`; no grade: judgments "
        "unparseable after the re-asks; judge cut: those whose last judge reply was cut at its max_tokens",
    )
