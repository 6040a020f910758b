"""A hand-written labels folder (LABEL_ITEMS, RATINGS, sample.json) over ten answers, and run folders whose
judges graded them, for the agreement tests. Every number the tests expect is worked out from ITEMS."""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.benchmarks.threadmed.contracts import JUDGMENTS, LABEL_ITEMS, RATINGS, RESPONSES

NAN = None
SAMPLED_RUN = "r1"
# (model, thread, turn, answer words, judge grade, ann's grade, bob's grade); bob skipped the fifth item.
# Consensus (lower middle of two): 1, 0.5, 0, 0.5, 1, 0, 0, 1, 0, 1.
ITEMS: list[tuple[str, str, int, int, float, float, float | None]] = [
    ("alpha", "c1", 0, 10, 1.0, 1.0, 1.0),
    ("alpha", "c1", 1, 20, 1.0, 0.5, 0.5),
    ("alpha", "c1", 2, 30, 0.0, 0.0, 0.5),
    ("alpha", "c2", 0, 40, 0.5, 0.5, 0.5),
    ("alpha", "c2", 1, 50, 1.0, 1.0, NAN),
    ("beta", "c1", 0, 60, 0.0, 0.0, 0.0),
    ("beta", "c1", 1, 70, 0.5, 0.0, 0.5),
    ("beta", "c1", 2, 80, 1.0, 1.0, 1.0),
    ("beta", "c2", 0, 90, 0.0, 0.5, 0.0),
    ("beta", "c2", 1, 100, 1.0, 1.0, 1.0),
]
RATED_AT = datetime(2026, 11, 26, 4, tzinfo=UTC)
JUDGE = {"model": "openai/gpt-4o", "params": {"temperature": 0.7}}


def item_id(index: int) -> str:
    return f"i{index}"


def answer_key(model: str, thread: str, turn: int) -> str:
    return f"answer-{model}-{thread}-{turn}"


def write_labels(labels_dir: Path, raters: dict[str, str] | None = None, *, rated: bool = True) -> Path:
    """LABELS/{sample.json, items.parquet, ratings.parquet}; `raters`: name -> kind, of ann and bob (the
    6th and 7th columns of ITEMS); without `rated`, no ratings.parquet."""
    raters = {"ann": "clinician", "bob": "clinician"} if raters is None else raters
    labels_dir.mkdir(parents=True, exist_ok=True)
    items, ratings = [], []
    for index, (model, thread, turn, words, judge, *grades) in enumerate(ITEMS):
        items.append(
            {"item_id": item_id(index), "position": index, "run_id": SAMPLED_RUN, "model": model,
             "condition": "baseline", "thread_id": thread, "turn": turn, "turn_group": f"T{turn}",
             "judge_score": judge, "answer_words": words, "stratum": f"T{turn}|{model}|{judge}"}
        )  # fmt: skip
        for (rater, kind), grade in zip(raters.items(), grades, strict=False):
            if grade is not None:
                ratings.append(
                    {"item_id": item_id(index), "rater": rater, "rater_kind": kind, "grade": grade,
                     "note": "", "rated_at": RATED_AT, "source_file": f"{rater}.csv"}
                )  # fmt: skip
    pq.write_table(pa.Table.from_pylist(items, schema=LABEL_ITEMS.schema), labels_dir / "items.parquet")
    if rated:
        pq.write_table(pa.Table.from_pylist(ratings, schema=RATINGS.schema), labels_dir / "ratings.parquet")
    sample = {"run_dir": str(labels_dir.parent / SAMPLED_RUN), "run_id": SAMPLED_RUN, "seed": 0,
              "judge": {"model": JUDGE["model"], "rubric_version": "judge_rubric_v1", "epoch": 0},
              "n": len(ITEMS), "requested_n": len(ITEMS)}  # fmt: skip
    (labels_dir / "sample.json").write_text(json.dumps(sample))
    return labels_dir


def write_judged_run(
    run_dir: Path,
    run_id: str,
    grades: list[float],
    *,
    judge: dict[str, Any] = JUDGE,
    other_answer_at: int | None = None,
) -> Path:
    """A ThReadMed run folder holding ITEMS' answers graded `grades` by `judge` (its config.judge); the
    answer at index `other_answer_at`, if given, is another one (another response call_key)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "benchmark.json").write_text(json.dumps({"benchmark": "threadmed"}))
    manifest = {
        "run_id": run_id,
        "dataset": {"dir": "build"},
        "config": {"models": ["alpha", "beta"], "judge": judge},
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    responses, judgments = [], []
    for index, ((model, thread, turn, words, *_), grade) in enumerate(zip(ITEMS, grades, strict=True)):
        key = {"run_id": run_id, "model": model, "condition": "baseline", "thread_id": thread, "turn": turn}
        call_key = "other" if index == other_answer_at else answer_key(model, thread, turn)
        responses.append(
            {**key, "status": "ok", "response": " ".join(["word"] * words), "call_key": call_key}
        )
        judgments.append(
            {**key, "judge_model": judge["model"], "rubric_version": "judge_rubric_v1", "score": grade,
             "parse_status": "ok", "call_key": f"judge-{run_id}-{index}"}
        )  # fmt: skip
    pq.write_table(pa.Table.from_pylist(responses, schema=RESPONSES.schema), run_dir / "responses.parquet")
    pq.write_table(pa.Table.from_pylist(judgments, schema=JUDGMENTS.schema), run_dir / "judgments.parquet")
    return run_dir


def judge_grades() -> list[float]:
    return [item[4] for item in ITEMS]
