"""Inquiry-logic mining on the shipped corpora (ACI-Bench and PriMock57 under ../shared/data/dialogues):
seconds to read them and to mine them (question extraction, TF-IDF, k-means, naming, policy, partial
orders), median of 3 runs, with the default settings the committed `mined_v1` was made with."""

import statistics
import time
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.inquiry.corpora import read_corpora
from tasks.benchmarks.consult.inquiry.mining import MiningSettings, mine
from tasks.benchmarks.consult.inquiry.templates import TemplateSpace, load_catalogue

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "dialogues"
RUNS = 3


def main(out_dir: Path) -> dict[str, Any]:
    if not CORPORA.is_dir():
        return {"skipped": f"no corpora at {CORPORA}"}
    space, settings = TemplateSpace(load_catalogue()), MiningSettings()
    reading, mining = [], []
    for _ in range(RUNS):
        started = time.perf_counter()
        dialogues = read_corpora(CORPORA)
        reading.append(time.perf_counter() - started)
        started = time.perf_counter()
        mined = mine(dialogues, space, settings)
        mining.append(time.perf_counter() - started)
    return {
        "dialogues": len(dialogues),
        "questions": mined.questions,
        "read_s": statistics.median(reading),
        "mine_s": statistics.median(mining),
        "k": settings.k,
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    if "skipped" in results:
        return [results["skipped"]]
    read, mined = (
        f"read in {results['read_s']:.2f} s",
        f"mined (k = {results['k']}) in {results['mine_s']:.2f} s",
    )
    return [
        f"{results['dialogues']} dialogues, {results['questions']:,} questions: {read}, {mined} ({RUNS} runs)"
    ]
