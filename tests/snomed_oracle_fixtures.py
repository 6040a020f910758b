"""Runs of oracle-data and patient-eval without Prefect: every job's solve and score step in order, the tables
written as the flow writes them. What the flow adds (threads, progress, the whole manifest) is tested by the
CLI."""

import json
from pathlib import Path
from typing import Any

from tasks.evals.config import EvaluationSettings, RunConfig
from tasks.evals.job_state import rows_of
from tasks.evals.outputs import write_table
from tasks.evals.protocol import Benchmark


def run_inline(
    bench: Benchmark, cases_dir: Path, run_dir: Path, config: RunConfig
) -> dict[str, list[dict[str, Any]]]:
    """The run's solve and score rows, also written as its tables in `run_dir` (with the manifest's facts
    the report checks)."""
    settings = EvaluationSettings[type(config)](dataset_dir=cases_dir, run_dir=run_dir, config=config)
    plan = bench.plan(settings)
    solved, scored = [], []
    for job in plan.jobs:
        rows = rows_of(bench.solve(job=job.solve, ledger_dir=plan.ledger_dir))
        solved += rows
        scored += rows_of(bench.score(job=job.score, solved=rows, ledger_dir=plan.ledger_dir))
    for rows, contracts in ((solved, bench.tables.solved), (scored, bench.tables.scored)):
        for contract in contracts:
            write_table(rows, contract, run_dir / f"{contract.name}.parquet")
    (run_dir / "manifest.json").write_text(json.dumps(plan.manifest_facts, default=str), encoding="utf-8")
    return {"solved": solved, "scored": scored}
