"""A small finished ThReadMed run, written by hand, for the labels tests.

Two models answer three threads of 8, 4 and 2 turns (baseline condition): 28 answers, every turn group
present. Scores cycle over 0, 0.5, 1 by turn; beta's last answer of thread t2 is unparseable, so 27 turns
are judged. Thread t1's texts are hostile markup, which every page must show as text; its model answers
also hold a right-to-left override and a zero-width space (SPOOF), which every page must show as markers.
"""

from pathlib import Path
from typing import Any

from tasks.benchmarks.threadmed.scorer import DEFAULT_RUBRIC
from tasks.llm.prompts import load_prompt
from tests.perf.bench_report import write_dataset, write_run

RUN_ID = "run-labels-fixture"
MODELS = ("alpha-model", "beta-model")
THREAD_TURNS = {"t0": 8, "t1": 4, "t2": 2}
HOSTILE = '<img src=x onerror="window.pwned = 1"></script><script>window.pwned = 2</script>'
# Shown as written, it would read "take gm 05 daily" reversed into "take 50 mg daily".
SPOOF = " take \u202eyliad gm 05\u202c\u200b now"
N_JUDGED = 27


def question(thread_id: str, turn: int) -> str:
    return HOSTILE if thread_id == "t1" else f"question {turn} of {thread_id}: my knee hurts when running"


def physician_answer(thread_id: str, turn: int) -> str:
    if thread_id == "t1":
        return HOSTILE
    return f"physician {turn}: rest the knee, ice twice daily, ibuprofen, physiotherapy if swelling persists"


def model_answer(model: str, thread_id: str, turn: int) -> str:
    if thread_id == "t1":
        return HOSTILE + SPOOF
    if model == MODELS[0]:
        return f"answer {turn}: rest the knee and ice it, ibuprofen helps; physiotherapy if swelling persists"
    return f"answer {turn}: stretching and running shoes usually fix this"


def score(model: str, thread_id: str, turn: int) -> float | None:
    if model == MODELS[1] and thread_id == "t2" and turn == 1:
        return None
    return [0.0, 0.5, 1.0][turn % 3]


def write_labels_run(root: Path) -> Path:
    """The run folder (and its dataset build beside it under `root`)."""
    qa_pairs = [
        {"thread_id": t, "turn": turn, "question": question(t, turn), "answer": physician_answer(t, turn)}
        for t, turns in THREAD_TURNS.items()
        for turn in range(turns)
    ]
    dataset = write_dataset(root / "build", qa_pairs)
    responses: list[dict[str, Any]] = []
    judgments: list[dict[str, Any]] = []
    for model in MODELS:
        for t, turns in THREAD_TURNS.items():
            for turn in range(turns):
                key = {
                    "run_id": RUN_ID,
                    "model": model,
                    "condition": "baseline",
                    "thread_id": t,
                    "turn": turn,
                }
                responses.append({**key, "status": "ok", "response": model_answer(model, t, turn)})
                grade = score(model, t, turn)
                judgments.append(
                    {**key, "score": grade, "parse_status": "unparseable" if grade is None else "ok"}
                )
    rubric = load_prompt(DEFAULT_RUBRIC)
    manifest = {
        "run_id": RUN_ID,
        "dataset": {"dir": str(dataset), "fingerprint": "f1"},
        "config": {"models": list(MODELS), "judge": {"model": "threadmed/overlap-judge", "rubric": None}},
        "prompts": {rubric.version: {"sha256": rubric.sha256}},
    }
    return write_run(root / "run", manifest, responses, judgments)
