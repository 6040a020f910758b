"""Report benchmark: a generated run of 5 models x 2 conditions x ~1,000 turns, reported end to end.

Times `build_report` (load, metrics with 10,000-resample bootstraps, figures, Markdown, HTML) on a
synthetic run shaped like the paper's: thread lengths as in the answered dataset, answers of realistic
length, a few unparseable judgments and failed calls. Then weighs its index.html and times how long the
page takes to open in headless Chromium (tests/perf/page_timing.py; skipped, and said so, without it).
Also home of `write_run`/`write_dataset`, which the report tests use to lay out their hand-made runs.
"""

import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.benchmarks.threadmed.contracts import JUDGMENTS, QA_PAIRS, RESPONSES
from tasks.benchmarks.threadmed.report import ReportSettings, build_report
from tests.perf.page_timing import time_page_open

SEED = 2024
MODELS = (
    "openai/gpt-5",
    "anthropic/claude-haiku",
    "openai/gpt-4o",
    "gemini/gemini-2.5-flash",
    "llama-3.3-70b",
)
CONDITIONS = ("baseline", "oracle")
N_THREADS = 300
# Share of threads with 3, 4, ... 9 QA pairs, roughly the answered dataset's.
THREAD_LENGTHS = {3: 0.55, 4: 0.18, 5: 0.12, 6: 0.07, 7: 0.04, 8: 0.02, 9: 0.02}
TARGET_SECONDS = 15.0
TARGET_PAGE_MIB = 10.0
TARGET_OPEN_SECONDS = 2.0
VOCABULARY = np.array([f"word{i}" for i in range(3000)])
CALL_USD = {"input_cost_usd": 1e-4, "output_cost_usd": 5e-4, "cost_usd": 6e-4}
REASON = "The answer covers the physician's main point but misses the follow-up advice."


def write_dataset(
    dataset_dir: Path, qa_pairs: list[dict[str, Any]], funnel: list[dict] | None = None
) -> Path:
    """Lay out a dataset build folder: dataset/answered/qa_pairs.parquet and, if given, funnel.json."""
    answered = dataset_dir / "dataset" / "answered"
    answered.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(qa_pairs, schema=QA_PAIRS.schema), answered / "qa_pairs.parquet")
    if funnel is not None:
        (dataset_dir / "funnel.json").write_text(json.dumps(funnel))
    return dataset_dir


def write_run(
    run_dir: Path,
    manifest: dict[str, Any],
    responses: list[dict[str, Any]],
    judgments: list[dict[str, Any]],
) -> Path:
    """Lay out a run directory; rows give any subset of the contract's columns, the rest are null."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    pq.write_table(pa.Table.from_pylist(responses, schema=RESPONSES.schema), run_dir / "responses.parquet")
    pq.write_table(pa.Table.from_pylist(judgments, schema=JUDGMENTS.schema), run_dir / "judgments.parquet")
    return run_dir


def _text(rng: np.random.Generator, mean_words: int) -> str:
    """Filler text of about `mean_words` words: lengths matter here (page size, word counts), not content."""
    length = max(3, int(rng.normal(mean_words, mean_words / 3)))
    return " ".join(VOCABULARY[rng.integers(0, len(VOCABULARY), size=length)])


def _score_probabilities(quality: float, turn: int) -> list[float]:
    """P(wrong), P(partial), P(correct) for a model of `quality` at `turn`: later turns are harder."""
    correct = max(0.05, quality - 0.08 * min(turn, 2))
    wrong = min(0.5, 0.12 + 0.04 * min(turn, 2) + (0.5 - quality) * 0.3)
    return [wrong, 1 - wrong - correct, correct]


def _fabricate_dataset(root: Path, rng: np.random.Generator, n_threads: int) -> tuple[Path, list[tuple]]:
    """A dataset build of `n_threads` threads of typical lengths; returns it and its (thread, turn) pairs."""
    lengths = rng.choice(list(THREAD_LENGTHS), p=list(THREAD_LENGTHS.values()), size=n_threads)
    pairs = [(f"t{thread:04d}", turn) for thread, length in enumerate(lengths) for turn in range(length)]
    qa_pairs = [
        {"thread_id": t, "turn": turn, "question": _text(rng, 140), "answer": _text(rng, 60)}
        for t, turn in pairs
    ]
    funnel = [
        {"stage_order": 0, "stage": "posts", "reason": None, "count_rows": 1_800_000},
        {"stage_order": 1, "stage": "threads", "reason": None, "count_rows": n_threads},
    ]
    return write_dataset(root / "build", qa_pairs, funnel), pairs


def _fabricate_calls(
    rng: np.random.Generator, model: str, quality: float, condition: str, pairs: list[tuple]
) -> tuple[list[dict], list[dict]]:
    """Responses (1% failed) and judgments (2% unparseable) of one model in one condition."""
    responses, judgments = [], []
    for thread_id, turn in pairs:
        if condition == "oracle" and turn == 0:
            continue
        key = {
            "run_id": "bench",
            "model": model,
            "condition": condition,
            "thread_id": thread_id,
            "turn": turn,
        }
        failed = rng.random() < 0.01
        text = None if failed else _text(rng, 300)
        responses.append({**key, "status": "failed" if failed else "ok", "response": text, **CALL_USD})
        status = "not_run" if failed else "unparseable" if rng.random() < 0.02 else "ok"
        score = rng.choice([0.0, 0.5, 1.0], p=_score_probabilities(quality, turn)) if status == "ok" else None
        judgments.append({**key, "parse_status": status, "score": score, "reason": REASON, "cost_usd": 3e-3})
    return responses, judgments


def fabricate_run(root: Path, n_threads: int = N_THREADS, seed: int = SEED) -> Path:
    """Write a synthetic dataset and a run of every model in both conditions under root; return the run."""
    rng = np.random.default_rng(seed)
    dataset, pairs = _fabricate_dataset(root, rng, n_threads)
    responses, judgments = [], []
    for quality, model in zip(np.linspace(0.45, 0.2, len(MODELS)), MODELS, strict=True):
        for condition in CONDITIONS:
            model_responses, model_judgments = _fabricate_calls(rng, model, quality, condition, pairs)
            responses += model_responses
            judgments += model_judgments
    manifest = {
        "run_id": "bench",
        "dataset": {"path": str(dataset), "fingerprint": "bench"},
        "judge": {"model": "openai/gpt-4o"},
        "models": list(MODELS),
        "conditions": list(CONDITIONS),
    }
    return write_run(root / "run", manifest, responses, judgments)


def main(out_dir: Path) -> dict[str, Any]:
    run_dir = fabricate_run(out_dir)
    report_dir = out_dir / "report"
    start = time.perf_counter()
    build_report.fn(run_dirs=[str(run_dir)], out_dir=str(report_dir), settings=ReportSettings())
    seconds = time.perf_counter() - start
    judged = pq.read_table(run_dir / "judgments.parquet", columns=["model", "condition"])
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    opened = time_page_open(chromium, report_dir / "index.html") if chromium else None
    return {
        "models": len(MODELS),
        "conditions": len(CONDITIONS),
        "turns": judged.num_rows,
        "turns_per_model_condition": judged.num_rows / (len(MODELS) * len(CONDITIONS)),
        "seconds": seconds,
        "target_seconds": TARGET_SECONDS,
        "html_mib": (report_dir / "index.html").stat().st_size / 2**20,
        "target_html_mib": TARGET_PAGE_MIB,
        "open_seconds": opened["open_ms"] / 1000 if opened else None,
        "open_timings_ms": opened,
        "target_open_seconds": TARGET_OPEN_SECONDS,
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    return [
        f"run: {results['models']} models x {results['conditions']} conditions, {results['turns']:,} turns "
        f"(~{results['turns_per_model_condition']:,.0f} per model and condition)",
        f"report (10,000 bootstrap resamples, figures, HTML): {results['seconds']:.1f} s "
        f"(target < {results['target_seconds']:.0f} s)",
        f"index.html: {results['html_mib']:.2f} MiB (target < {results['target_html_mib']:.0f} MiB)",
        _open_line(results),
    ]


def _open_line(results: dict[str, Any]) -> str:
    if results["open_seconds"] is None:
        return "page open time: not measured, chromium is not installed (make browser)"
    runs = ", ".join(f"{ms / 1000:.2f}" for ms in results["open_timings_ms"]["runs_ms"])
    return (
        f"page opens in headless Chromium in {results['open_seconds']:.2f} s, the slowest of {runs} s "
        f"(target < {results['target_open_seconds']:.0f} s)"
    )
