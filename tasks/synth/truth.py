"""The truth tables: what the build must produce from the designed posts."""

from dataclasses import dataclass

import pyarrow as pa

from tasks.synth.forge import Post, Turns

TRUTH_THREADS_SCHEMA = pa.schema([
    pa.field("thread_id", pa.string(), nullable=False),
    pa.field("scenario", pa.string(), nullable=False),
    pa.field("in_full", pa.bool_(), nullable=False),
    pa.field("in_answered", pa.bool_(), nullable=False),
    pa.field("n_questions", pa.int64()),
    pa.field("n_answered", pa.int64()),
    pa.field("n_orphans", pa.int64()),
    pa.field("n_pairs_answered", pa.int64()),
])  # fmt: skip
"""truth/threads.parquet: one row per designed post ('thread', 'near_miss:<kind>', 'decoy:<kind>');
counts are those of the full dataset, null where the post yields no thread."""

TRUTH_QA_PAIRS_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("thread_id", pa.string(), nullable=False),
    pa.field("turn", pa.int64(), nullable=False),
    pa.field("question_id", pa.string(), nullable=False),
    pa.field("answer_id", pa.string()),
])  # fmt: skip
"""truth/qa_pairs.parquet: exactly the rows of dataset/{full,answered}/qa_pairs.parquet, ids only."""


@dataclass(slots=True)
class Truth:
    """A designed post and, when it must yield a thread, its (question, answer or None) turns."""

    post: Post
    scenario: str
    turns: Turns | None


def truth_tables(truths: list[Truth]) -> tuple[pa.Table, pa.Table]:
    """The designed outcomes: whether each designed post is in full / answered, and the exact QA rows."""
    threads, pairs = [], []
    for truth in truths:
        row = {"thread_id": truth.post.id, "scenario": truth.scenario, "in_full": truth.turns is not None,
               "in_answered": False}  # fmt: skip
        if truth.turns is not None:
            ids = [(question.id, answer.id if answer else None) for question, answer in truth.turns]
            answered = sum(answer is not None for _, answer in ids)
            kept = len(ids)
            while kept and ids[kept - 1][1] is None:  # answered: trailing orphans trimmed
                kept -= 1
            in_answered = kept >= 3 and all(answer is not None for _, answer in ids[:kept])
            row |= {"in_answered": in_answered, "n_questions": len(ids), "n_answered": answered,
                    "n_orphans": len(ids) - answered,
                    "n_pairs_answered": kept if in_answered else None}  # fmt: skip
            for dataset, rows in (("full", ids), ("answered", ids[:kept] if in_answered else [])):
                pairs += [{"dataset": dataset, "thread_id": truth.post.id, "turn": turn,
                           "question_id": question, "answer_id": answer}
                          for turn, (question, answer) in enumerate(rows)]  # fmt: skip
        threads.append(row)
    pairs.sort(key=lambda row: row["dataset"] != "full")
    return (pa.Table.from_pylist(threads, schema=TRUTH_THREADS_SCHEMA),
            pa.Table.from_pylist(pairs, schema=TRUTH_QA_PAIRS_SCHEMA))  # fmt: skip
