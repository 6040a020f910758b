"""ThReadMed-QA's cases: answered Reddit threads from a dataset build, sampled by split and stratum."""

import hashlib
import random
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from pydantic import BaseModel

from tasks.benchmarks.threadmed.contracts import QA_PAIRS, THREADS
from tasks.core.preflight import UserError, remedy
from tasks.evals.config import EvalConfig, SampleSpec


class ThreadCase(BaseModel, frozen=True):
    """One sampled thread: its patient questions and the physician answers, turn by turn."""

    thread_id: str
    stratum: str
    questions: tuple[str, ...]
    answers: tuple[str, ...]


def answered_dir(dataset_dir: Path) -> Path:
    return Path(dataset_dir) / "dataset" / "answered"


def check_dataset_build(dataset_dir: Path) -> None:
    """Raise UserError unless `dataset_dir` holds the answered dataset that `threadmed build` publishes."""
    files = [answered_dir(dataset_dir) / f"{contract.name}.parquet" for contract in (THREADS, QA_PAIRS)]
    missing = next((path for path in files if not path.is_file()), None)
    if missing is None:
        return
    fix = remedy("pass the --out folder of `threadmed build`", "pass the out_dir of a build-dataset run")
    if answered_dir(dataset_dir / "latest").is_dir():
        latest = Path(dataset_dir) / "latest"
        fix = remedy(
            f"pass {latest} (the newest version of a --versioned build)",
            f"pass {latest} (the newest version of a build with versioned: true)",
        )
    relative = missing.relative_to(dataset_dir)
    raise UserError(f"{dataset_dir} is not a dataset build (no {relative}); {fix}", "--dataset")


def check_split(dataset_dir: Path, split: str) -> None:
    """Raise UserError listing the dataset's splits when `split` holds no answered thread."""
    threads = pq.read_table(answered_dir(dataset_dir) / "threads.parquet", columns=["split"])
    counts = Counter(threads["split"].to_pylist())
    if split in counts:
        return
    choices = ", ".join(f"{name} ({n} thread{'s' * (n != 1)})" for name, n in sorted(counts.items()))
    raise UserError(
        f"{dataset_dir} has no thread in split '{split}'; choose one of: {choices or 'none, it is empty'}",
        "--split",
    )


def check_sample_split(dataset_dir: Path, config: EvalConfig) -> None:
    """Raise UserError when the run's sampled split holds no answered thread of the dataset."""
    check_split(dataset_dir, config.sample.split)


def draw_sample(threads: list[dict[str, Any]], spec: SampleSpec) -> list[str]:
    """Thread ids of the sample, in a seeded order (so a larger --limit extends a smaller one)."""
    in_split = sorted((t for t in threads if t["split"] == spec.split), key=lambda t: t["thread_id"])
    rng = random.Random(spec.seed)
    if spec.quotas is None:
        chosen = [t["thread_id"] for t in in_split]
    else:
        by_stratum: dict[str, list[str]] = defaultdict(list)
        for t in in_split:
            by_stratum[t["stratum"]].append(t["thread_id"])
        chosen = []
        for stratum, quota in sorted(spec.quotas.items()):
            pool = by_stratum[stratum]
            chosen += rng.sample(pool, min(quota, len(pool)))
        chosen.sort()
    rng.shuffle(chosen)
    return chosen[: spec.limit]


def load_sample(dataset_dir: Path, spec: SampleSpec) -> list[ThreadCase]:
    """Read the answered dataset and return the sampled threads with their QA pairs in turn order."""
    folder = answered_dir(dataset_dir)
    threads = pq.read_table(folder / "threads.parquet", columns=["thread_id", "split", "stratum"]).to_pylist()
    strata = {t["thread_id"]: t["stratum"] for t in threads}
    ids = draw_sample(threads, spec)
    wanted = set(ids)
    pairs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in pq.read_table(
        folder / "qa_pairs.parquet", columns=["thread_id", "turn", "question", "answer"]
    ).to_pylist():
        if row["thread_id"] in wanted:
            pairs[row["thread_id"]].append(row)
    return [_thread_case(thread_id, strata[thread_id], pairs[thread_id]) for thread_id in ids]


def _thread_case(thread_id: str, stratum: str, rows: list[dict[str, Any]]) -> ThreadCase:
    rows = sorted(rows, key=lambda r: r["turn"])
    if [r["turn"] for r in rows] != list(range(len(rows))) or any(r["answer"] is None for r in rows):
        raise ValueError(f"thread {thread_id}: turns must be 0..n-1, each with a physician answer")
    return ThreadCase(
        thread_id=thread_id,
        stratum=stratum,
        questions=tuple(r["question"] for r in rows),
        answers=tuple(r["answer"] for r in rows),
    )


def dataset_fingerprint(dataset_dir: Path) -> str:
    """sha256 over the answered dataset's two parquet files (the manifest's proof of what was evaluated)."""
    return folder_fingerprint(answered_dir(dataset_dir))


def folder_fingerprint(folder: Path) -> str:
    """sha256 over a dataset folder's `threads.parquet` and `qa_pairs.parquet` (the retrieval baseline's
    corpus is such a folder)."""
    digest = hashlib.sha256()
    for contract in (THREADS, QA_PAIRS):
        digest.update((folder / f"{contract.name}.parquet").read_bytes())
    return digest.hexdigest()
