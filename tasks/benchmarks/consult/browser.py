"""The report page's episode browser data: per episode its messages in order, its differential against
gold, its plan with the critic's violations and its follow-ups.
"""

from collections import defaultdict
from typing import Any

from tasks.benchmarks.consult.contracts import PRIMARY_METRICS
from tasks.benchmarks.consult.run_data import RunData, episode_key, message_order


def differential_entry(score: dict[str, Any]) -> dict[str, Any]:
    """The differential against gold: each item marked `hit` (a gold core diagnosis listed as core),
    `listed` (a gold diagnosis otherwise), `wrong` (a KB condition not in gold) or `unmatched`; and the
    gold diagnoses, each with whether the differential lists it."""
    gold = {item["condition_id"]: item for item in score["gold"] or []}
    items = []
    for item in score["differential"] or []:
        condition = item["condition_id"]
        if condition is None:
            kind = "unmatched"
        elif condition not in gold:
            kind = "wrong"
        elif gold[condition]["core"] and item["core"]:
            kind = "hit"
        else:
            kind = "listed"
        items.append({**item, "kind": kind})
    listed = {item["condition_id"] for item in items}
    return {
        "differential": items,
        "gold": [{**item, "listed": item["condition_id"] in listed} for item in score["gold"] or []],
    }


def browser_data(run: RunData) -> dict[str, Any]:
    """The browser's data: one entry per episode with its messages in order.

    A message is [turn, role, stage, status, text, template, revealed AIU ids, deflected]; models and
    cases are indexes into the lists of the same names. Each episode also carries its first plan with the
    critic's violations, and its follow-ups (answer, revision, violations after, verdict).
    """
    messages: defaultdict[tuple[str, str, int], list[list[Any]]] = defaultdict(list)
    for row in sorted(run.messages, key=lambda r: (*episode_key(r), *message_order(r))):
        messages[episode_key(row)].append(
            [
                row["turn"],
                row["role"],
                row["stage"],
                row["status"],
                row["text"],
                row["template"],
                list(row["revealed"] or []),
                bool(row["deflected"]),
            ]
        )
    cases = sorted({row["case_id"] for row in run.scores})
    episodes = [
        {
            "model": run.models.index(row["model"]),
            "case": cases.index(row["case_id"]),
            "epoch": row["epoch"],
            "status": row["status"],
            "department": row["department"],
            "difficulty": row["difficulty"],
            "questions": row["questions"],
            "diagnosis_parse": row["diagnosis_parse"],
            "mni_target": list(row["mni_target"] or []),
            "plan_parse": row["plan_parse"],
            "revisions_unparseable": row["revisions_unparseable"],
            "parse_errors": list(row["parse_errors"] or []),
            "metrics": {name: row[name] for name in (*PRIMARY_METRICS, "composite")},
            "error": row["error"],
            **differential_entry(row),
            "plan": list(row["plan"] or []),
            "plan_advice": row["plan_advice"],
            "violations": list(row["violations"] or []),
            "follow_ups": list(row["follow_ups"] or []),
            "messages": messages[episode_key(row)],
        }
        for row in sorted(run.scores, key=lambda r: (run.models.index(r["model"]), r["case_id"], r["epoch"]))
    ]
    return {"models": run.models, "cases": cases, "episodes": episodes}
