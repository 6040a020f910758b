"""The report page's conversation browser data: an index read when the page opens, and chunks of answers
and judge reasons read when a conversation is opened.
"""

from typing import Any, NamedTuple

import numpy as np

from tasks.benchmarks.threadmed.run_data import Turns
from tasks.report.panel import PanelJudge, grader_labels

# About 450 KB of answers per chunk: a conversation opens after a few ms of decoding, and gzip, which
# restarts with each chunk, loses about 1% to the split.
CONVERSATIONS_PER_CHUNK = 50


class BrowserData(NamedTuple):
    """The conversation browser's data: an index read when the page opens, and chunks read on demand."""

    index: dict[str, Any]
    chunks: list[list[list[list[str | None]]]]


def _graded_turn(turns: Turns, i: int) -> tuple[list[Any], list[str | None]]:
    """A turn's [turn, score, status] and [answer, judge reason]; with a panel, the panel's grade and status
    followed by every grader's grade, and the answer followed by every grader's reason."""
    score = None if np.isnan(turns.score[i]) else float(turns.score[i])
    row: list[Any] = [int(turns.turn[i]), score, turns.status[i]]
    if turns.grades is None:
        return row, [turns.response[i], turns.reason[i]]
    grades = [None if np.isnan(grade) else float(grade) for grade in turns.grades.score[i]]
    return [*row, *grades], [turns.response[i], *turns.grades.reason[i]]


def browser_data(
    turns: Turns, models: list[str], conditions: list[str], judges: list[PanelJudge] | None = None
) -> BrowserData:
    """The index holds what filters and summaries need (conversations as index lists of turn, score and
    status) and each QA pair's texts once; chunk i holds the [answer, judge reason] of every turn of
    conversations i * CONVERSATIONS_PER_CHUNK onwards, read when one of them is opened. With a judge
    panel, the index names its graders ("judges") and each turn adds their grades, its texts their reasons."""
    thread_ids = list(dict.fromkeys(turns.thread_id))
    thread_index = {thread_id: i for i, thread_id in enumerate(thread_ids)}
    pairs: list[dict[str, list[str | None]]] = [{} for _ in thread_ids]
    conversations: dict[tuple[int, int, int], list[tuple[list[Any], list[str | None]]]] = {}
    for i in range(len(turns.turn)):
        thread, turn = thread_index[turns.thread_id[i]], int(turns.turn[i])
        pairs[thread].setdefault(str(turn), [turns.question[i], turns.physician_answer[i]])
        key = (models.index(turns.model[i]), conditions.index(turns.condition[i]), thread)
        conversations.setdefault(key, []).append(_graded_turn(turns, i))
    ordered = sorted(conversations.items())
    texts = [[text for _, text in rows] for _, rows in ordered]
    index = {
        "models": models,
        "conditions": conditions,
        "max_turn": int(turns.turn.max(initial=0)),
        "threads": [[thread_id, pairs[i]] for i, thread_id in enumerate(thread_ids)],
        "conversations": [[*key, [row for row, _ in rows]] for key, rows in ordered],
        "conversations_per_chunk": CONVERSATIONS_PER_CHUNK,
        **({"judges": grader_labels(judges)} if judges else {}),
    }
    chunks = [texts[i : i + CONVERSATIONS_PER_CHUNK] for i in range(0, len(texts), CONVERSATIONS_PER_CHUNK)]
    return BrowserData(index, chunks)
