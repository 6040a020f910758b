"""Two hand-made consultation runs (one model each, three cases) whose every number the report tests work
out by hand: their episodes, messages and scores, written as run folders by `make_run`.
"""

import json
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.composite import composite
from tasks.benchmarks.consult.contracts import MESSAGES, PRIMARY_METRICS, SCORES, SECONDARY_METRICS
from tasks.benchmarks.consult.report_metrics import ReportSettings
from tasks.evals.outputs import write_table

SETTINGS = ReportSettings(n_resamples=200, seed=3)
AGENT_CALL = {"prompt_tokens": 100, "completion_tokens": 10, "cost_usd": 0.125}
DEPARTMENTS = {"c1": "respiratory", "c2": "respiratory", "c3": "ent"}
PRIMARY = PRIMARY_METRICS
SECONDARY = SECONDARY_METRICS[1:]  # questions comes from the turns
JUDGE = {"judge_model": "threadmed/consult-judge", "rubric_version": "judge_fqr_v1"}
# The judge's calls of each completed episode (a failed agent call leaves no follow-up to grade).
JUDGE_CALLS = {
    "judge_calls": 2,
    "judge_prompt_tokens": 80,
    "judge_completion_tokens": 8,
    "judge_cost_usd": 0.02,
}
# alpha c1's first plan, the critic's finding on it, and its one follow-up (a constraint it revised for).
PLAN = [
    {
        "drug": "Amoxil",
        "generic": "amoxicillin",
        "dose": 500.0,
        "unit": "mg",
        "frequency_per_day": 3.0,
        "days": 5.0,
        "route": "oral",
    }
]
VIOLATION = {
    "kind": "allergy",
    "severity": "hard",
    "drug": "amoxicillin",
    "other": None,
    "entry": "drug amoxicillin: allergy_class penicillins",
    "source": "BNF",
    "detail": "the patient is allergic to penicillins",
}
# beta's plan for c1: a drug the critic cannot resolve, so it is unverified (never counted as safe).
UNVERIFIED_PLAN = [{**PLAN[0], "drug": "Elixir of vigour", "generic": None}]
UNVERIFIED = {
    "kind": "unverified",
    "severity": "unverified",
    "drug": "Elixir of vigour",
    "other": None,
    "entry": "drugs_v1: no match",
    "source": "consultation KB v1",
    "detail": "'Elixir of vigour' matches no drug of the knowledge base",
}
FOLLOW_UP = {
    "index": 0,
    "kind": "constraint",
    "text": "I can't swallow tablets",
    "constraint": "no_tablets",
    "core": True,
    "answer": "Take the liquid instead.",
    "revision_parse": "ok",
    "revised_plan": [{**PLAN[0], "unit": "ml", "dose": 10.0}],
    "plan_drugs": ["amoxicillin"],
    "violations_after": [],
    "correct": True,
    "judge_status": "ok",
    "judge_reason": "switches to a liquid",
}
PARSE_ERROR = "treatment: RecursionError: maximum recursion depth exceeded while decoding a JSON array"
# beta c2's one follow-up: its revision did not parse, so no plan in force can be read after it.
UNREAD_FOLLOW_UP = {
    **FOLLOW_UP,
    "answer": '[{"drug": "amoxicillin", "dose": [[[',
    "revision_parse": "unparseable",
    "revised_plan": None,
    "plan_drugs": None,
    "violations_after": None,
    "correct": False,
    "judge_reason": "no plan can be read",
}
GOLD = {
    "c1": [
        {"condition_id": "bronchitis", "title": "Acute bronchitis", "core": True, "severity": 2},
        {"condition_id": "pneumonia", "title": "Pneumonia", "core": False, "severity": 3},
    ],
    "c2": [{"condition_id": "cold", "title": "Common cold", "core": True, "severity": 1}],
    "c3": [{"condition_id": "otitis", "title": "Otitis media", "core": True, "severity": 2}],
}


def differential(*items: tuple[str, bool, str | None]) -> list[dict[str, Any]]:
    return [
        {
            "rank": rank,
            "diagnosis": name,
            "icd11": None,
            "core": core,
            "condition_id": condition,
            "match": "unmatched" if condition is None else "exact",
        }
        for rank, (name, core, condition) in enumerate(items, start=1)
    ]


# Per episode: the primary metrics in PRIMARY_METRICS order (history, diagnosis, then PSC, DDIV, PCR, FQR,
# DCSR), the secondary metrics in SECONDARY order, the MNI target, the AIUs revealed per turn (turn 0: the
# opening; an empty list is a deflected question), the differential and its parse status, then the plan's
# parse status, the follow-ups graded and ungraded, and the revised plans that did not parse. None: failed.
# An unparseable output scores the worst of its stage's metrics, as the scorer gives it (beta c2).
EPISODES: dict[str, dict[str, Any]] = {
    "alpha": {
        "c1": (
            (0.8, 0.2, 0.6, 0.5, None, 1.0, 1.0, 0.9, 1.0, 0.0, 0.0, 1.0, 1.0),
            (0.5, 1.0, 1.0, 2.0, 0.5, 1.0, 1.0, 0.0, 0.0),
            ["a1", "a2"],
            [[], ["a1", "x1"], []],
            differential(("Acute bronchitis", True, "bronchitis"), ("Flu-ish", False, None)),
            "ok",
            ("ok", 2, 0, 0),
        ),
        "c2": (
            (0.4, 0.6, 0.2, 0.25, 0.5, 0.0, 0.0, 0.3, 0.0, None, 0.5, 0.5, None),
            (0.0, None, 0.0, 1.0, 0.0, 0.5, 0.0, 0.5, None),
            ["b1"],
            [[], ["b1"]],
            differential(("Sinusitis", True, "sinusitis")),
            "ok",
            ("ok", 2, 1, 0),
        ),
        "c3": None,
    },
    "beta": {
        "c1": (
            (1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 1.0, 1.0, 0.5, 0.0, None, 0.0),
            (0.0, 1.0, 1.0, 2.0, 0.0, 1.0, 1.0, 0.0, 1.0),
            ["a1", "a2"],
            [[], ["a2"], [], ["a1"]],
            differential(("Acute bronchitis", True, "bronchitis"), ("Pneumonia", False, "pneumonia")),
            "ok",
            ("ok", 0, 1, 0),  # no grade read: FQR undefined, and so are its follow-up stage and composite
        ),
        "c2": (
            (0.5, 0.5, 0.5, 0.5, None, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, None),
            (1.0, None, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, None),
            ["b1"],
            [["b1"], []],
            [],
            "unparseable",
            ("unparseable", 1, 0, 1),
        ),
        "c3": (
            (0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0),
            (0.5, 0.0, 1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 0.0),
            [],
            [[], ["o1"], []],
            differential(("Otitis media", True, "otitis")),
            "ok",
            ("ok", 1, 0, 0),
        ),
    },
}


def episode_messages(
    key: dict[str, Any], revealed: list[list[str]] | None, cut: bool = False
) -> list[dict[str, Any]]:
    """Turn 0: the opening; turns 1..q: question and answer; turn q + 1: the differential, `cut` at
    max_tokens or whole."""
    if revealed is None:
        return [
            {**key, "turn": 0, "role": "patient", "stage": "history", "status": "simulated", "text": "Hi"},
            {
                **key,
                "turn": 1,
                "role": "agent",
                "stage": "history",
                "status": "failed",
                "error": "rate limited",
            },
        ]
    rows = []
    for turn, aius in enumerate(revealed):
        answer = {**key, "turn": turn, "role": "patient", "stage": "history", "status": "simulated"}
        if turn == 0:
            rows.append({**answer, "text": "Hi, I feel unwell", "revealed": aius})
            continue
        question = {**key, "turn": turn, "role": "agent", "stage": "history", "status": "ok", **AGENT_CALL}
        rows.append({**question, "text": f"Question {turn}?"})
        rows.append(
            {
                **answer,
                "text": f"Answer {turn}",
                "template": f"t{turn}",
                "revealed": aius,
                "deflected": not aius,
            }
        )
    final = {
        **key,
        "turn": len(revealed),
        "role": "agent",
        "stage": "diagnosis",
        "status": "ok",
        **AGENT_CALL,
    }
    if cut:
        return [*rows, {**final, "text": '[{"title": "Acute bron', "finish_reason": "length"}]
    return [*rows, {**final, "text": "[differential]", "finish_reason": "stop"}]


def score_row(key: dict[str, Any], case_id: str, episode: tuple[Any, ...] | None) -> dict[str, Any]:
    base = {**key, "department": DEPARTMENTS[case_id], "difficulty": "easy", "gold": GOLD[case_id]}
    if episode is None:
        return {**base, "status": "failed", "error": "rate limited", "error_class": "RateLimitError"}
    primary, secondary, mni_target, revealed, items, parse, (plan_parse, judged, ungraded, revisions) = (
        episode
    )
    first = case_id == "c1" and key["model"] == "alpha"
    unverified = case_id == "c1" and key["model"] == "beta"
    unread = plan_parse == "unparseable"
    return {
        **base,
        **JUDGE,
        **JUDGE_CALLS,
        "status": "completed",
        "questions": len(revealed) - 1,
        "diagnosis_parse": parse,
        "differential": items,
        "mni_target": mni_target,
        "plan_parse": plan_parse,
        "plan": None if unread else PLAN if first else UNVERIFIED_PLAN if unverified else [],
        "plan_advice": None if unread else "Rest and fluids." if first else "",
        "violations": None if unread else [VIOLATION] if first else [UNVERIFIED] if unverified else [],
        "follow_ups": [FOLLOW_UP] if first else [UNREAD_FOLLOW_UP] if revisions else [],
        "revisions_unparseable": revisions,
        "parse_errors": [PARSE_ERROR] if unread else [],
        "fqr_judged": judged,
        "fqr_unparseable": ungraded,
        **dict(zip(PRIMARY, primary, strict=True)),
        **dict(zip(SECONDARY, secondary, strict=True)),
        "composite": composite(dict(zip(PRIMARY, primary, strict=True))).score,
    }


def make_run(
    root: Path, run_id: str, models: list[str], fingerprint: str = "fp-cases-1", policy: str = "v1"
) -> Path:
    run_dir = root / run_id
    run_dir.mkdir()
    messages, scores = [], []
    for model in models:
        for case_id, episode in EPISODES[model].items():
            key = {"run_id": run_id, "model": model, "case_id": case_id, "epoch": 0}
            if episode is None:
                messages += episode_messages(key, None)
            else:  # an unparseable differential was cut at max_tokens
                messages += episode_messages(key, episode[3], cut=episode[5] == "unparseable")
            scores.append(score_row(key, case_id, episode))
    write_table(messages, MESSAGES, run_dir / "messages.parquet")
    write_table(scores, SCORES, run_dir / "scores.parquet")
    manifest = {
        "run_id": run_id,
        "dataset": {"dir": str(root / "cases"), "fingerprint": fingerprint},
        "config": {
            "models": [{"name": model, "model": f"provider/{model}"} for model in models],
            "epochs": 1,
            "max_questions": 12,
            "gamma": 0.95,
            "policy_version": policy,
        },
        "prompts": {},
        "summary": {},
        "notes": [],
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir
