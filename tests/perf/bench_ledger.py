"""Call store benchmark (issue 36): N realistic ThReadMed calls recorded through the ledger's write path,
then what a user waits for that reads the ledger.

`python -m tests.perf ledger --calls N`. A synthetic answered dataset is sized so that 20 models x 2
conditions, each turn answered and judged, make about N calls (thread lengths as in the answered dataset,
questions and answers of realistic length: prompts grow with the thread's history). Its plan is walked as
the solver and the judge walk it, each call recorded by `CallLedger.write` as a success with a 60-word
reply, timed around the write alone. Then, each from a store no process has read yet (as a new process
finds it, not counting interpreter start-up and imports):

- end of run: the compaction of the run's segment into Parquet (`compact_ledger`);
- resume: the `--dry-run` of the same evaluate command (plan, estimate, the spending cap's check), which
  must find every recorded call in the ledger;
- every record read (`records()`), every recorded key looked up
  (`lookup`), the issue's own measures of the one-file-per-call ledger;
- the ledger totals a run's summary and the spending cap read (`run_calls`, `total_cost_usd`).

The end of the run also writes its job receipts (what the dry run reads instead of walking each job),
timed. The store's size on disk (allocated blocks) is printed before and after compaction. Writing a call is
compared with the one-file-per-call ledger it replaces (`write_text_atomic` per call, as it wrote them) on
the first 20,000 records. Last, the run's tables as a re-run of the finished run makes them (every job's
answer and judge step over the ledger, every call found, no Prefect), then its report (metrics with their
bootstraps, figures, HTML) and its export, each timed: the samples read from the run, written as one
Parquet table, and as the Inspect log of the first model alone (a twentieth of the Inspect export: its time
grows with a log's samples, tasks/export/inspect_log.py).
"""

import argparse
import json
import random
import shutil
import sys
import time
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flows.cli.evaluate import run_or_estimate
from tasks.benchmarks.registry import BENCHMARKS
from tasks.benchmarks.threadmed.report import ReportSettings, build_report
from tasks.benchmarks.threadmed.scorer import render_judge_messages
from tasks.benchmarks.threadmed.solver import ask_turns
from tasks.core.files import write_text_atomic
from tasks.evals.call_totals import ledger_calls, run_calls
from tasks.evals.config import EvalConfig, EvaluationSettings, JudgeSpec, ModelSpec
from tasks.evals.estimate import estimate_plan, record_receipts
from tasks.evals.outputs import JobOutcomes, write_manifest, write_run_outputs
from tasks.export.exports import write_export
from tasks.llm import call_store
from tasks.llm.ledger import CallLedger, CallRecord, compact_ledger
from tasks.llm.request import Prices
from tests.eval_fixtures import write_dataset
from tests.perf.bench_evaluation import THREAD_LENGTHS, WORDS

SEED = 36
MODELS = 20
CONDITIONS = ("baseline", "oracle")
REPLY_WORDS = 60
JUDGE_REPLY = "The answer covers the physician's main points and adds nothing unsafe. Score: 1"
PRICES = Prices(input_per_token=1e-6, output_per_token=3e-6)
# The one-file-per-call ledger is timed on this many records (it needs a file, and an inode, each).
OLD_LAYOUT_SAMPLE = 20_000
UNREACHABLE = "http://127.0.0.1:9/v1"  # nothing is called: every call is written by the benchmark
TARGETS = {"resume_s": 10.0, "report_s": 60.0, "store_bytes": 2**30}  # at 1,000,000 calls


def calls_of_thread(turns: int) -> int:
    """A thread's calls: every model answers its turns (baseline) and its turns after the first (oracle,
    whose first turn has no history: the baseline's answer is the oracle's), and each answer is judged."""
    return MODELS * (turns + turns - 1) * 2


def synthetic_threads(calls: int, rng: random.Random) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """Test-split threads of the answered dataset's length mix, enough for about `calls` calls."""
    threads: dict[str, tuple[str, list[tuple[str, str]]]] = {}
    planned = 0
    while planned < calls:
        turns = rng.choices(list(THREAD_LENGTHS), weights=list(THREAD_LENGTHS.values()))[0]
        pairs = [
            (" ".join(rng.choices(WORDS, k=100)), " ".join(rng.choices(WORDS, k=50))) for _ in range(turns)
        ]
        threads[f"t{len(threads):06d}"] = ("test", pairs)
        planned += calls_of_thread(turns)
    return threads


def settings(dataset: Path, run_dir: Path) -> EvaluationSettings:
    models = [
        ModelSpec(name=f"m{i:02d}", model=f"openai/m{i:02d}", api_base=UNREACHABLE, prices=PRICES)
        for i in range(1, MODELS + 1)
    ]
    judge = JudgeSpec(name="judge", model="openai/judge", api_base=UNREACHABLE, prices=PRICES)
    # A cap the run is far from: the dry run then reads what the ledger has spent, as a capped run does.
    return EvaluationSettings(
        dataset_dir=dataset,
        run_dir=run_dir,
        config=EvalConfig(models=models, judge=judge, conditions=list(CONDITIONS), max_cost_usd=1e9),
    )


def success(key: str, model: str, text: str, prompt_words: int) -> CallRecord:
    now = datetime.now(UTC)
    completion = len(text.split())
    return CallRecord(
        key=key,
        model=model,
        status="ok",
        text=text,
        finish_reason="stop",
        prompt_tokens=prompt_words,
        completion_tokens=completion,
        input_cost_usd=prompt_words * 1e-6,
        output_cost_usd=completion * 3e-6,
        latency_s=0.8,
        attempts=1,
        response_id=f"chatcmpl-{key[:24]}",
        started_at=now,
        finished_at=now,
    )


class Recorder:
    """Records a plan's calls through `CallLedger.write`, timing the writes alone."""

    def __init__(self, ledger: CallLedger, rng: random.Random) -> None:
        self.ledger, self.rng = ledger, rng
        self.records: list[CallRecord] = []  # the first OLD_LAYOUT_SAMPLE, for the old layout's timing
        self.keys: list[str] = []
        self.write_s = 0.0

    def write(self, record: CallRecord) -> CallRecord:
        start = time.perf_counter()
        self.ledger.write(record)
        self.write_s += time.perf_counter() - start
        self.keys.append(record.key)
        if len(self.records) < OLD_LAYOUT_SAMPLE:
            self.records.append(record)
        return record

    def record_plan(self, plan: Any) -> None:
        for job in plan.jobs:

            def answer(messages: list[dict[str, str]], job: Any = job) -> CallRecord:
                request = job.solve.model.request(messages)
                reply = " ".join(self.rng.choices(WORDS, k=REPLY_WORDS))
                words = sum(len(message["content"].split()) for message in messages)
                return self.write(success(request.key(), request.model, reply, words))

            for turn, record in ask_turns(job.solve, answer):
                thread = job.score.thread
                messages = render_judge_messages(
                    job.score.rubric, thread.questions[turn], thread.answers[turn], record.text
                )
                request = job.score.request(messages)
                words = sum(len(message["content"].split()) for message in messages)
                self.write(success(request.key(), request.model, JUDGE_REPLY, words))


def old_layout_write_s(records: list[CallRecord], folder: Path) -> float:
    """Seconds to write `records` as the one-file-per-call ledger did (one atomic file each)."""
    start = time.perf_counter()
    for record in records:
        path = folder / record.status / record.key[:2] / f"{record.key}.json"
        write_text_atomic(path, record.model_dump_json())
    return time.perf_counter() - start


def found_keys(ledger: CallLedger, keys: list[str]) -> int:
    """How many of `keys` the ledger has a success of, each looked up (its record read)."""
    return sum(ledger.lookup(key) is not None for key in keys)


def write_tables(bench: Any, plan: Any, run: EvaluationSettings) -> int:
    """The run's tables and manifest as a re-run of the finished run writes them: each job's answer and judge
    step over the ledger (every call found, none made), without Prefect. Returns the rows written."""
    outcomes = JobOutcomes([], [], [])
    for job in plan.jobs:
        solved = bench.solve(job.solve, plan.ledger_dir)
        outcomes.solved_rows.extend(solved)
        outcomes.scored_rows.extend(bench.score(job.score, solved, plan.ledger_dir))
    write_manifest.fn(run, plan, write_run_outputs.fn(plan, outcomes, bench.tables, bench.summarize))
    return len(outcomes.solved_rows) + len(outcomes.scored_rows)


def disk_bytes(folder: Path) -> int:
    """Bytes allocated on disk to the files under `folder` (blocks, as `du` counts them)."""
    return sum(path.stat().st_blocks * 512 for path in folder.rglob("*") if path.is_file())


def as_a_new_process() -> None:
    """Forget every store this process has read: the next read starts from the files, as a new process."""
    for store in call_store._stores.values():
        store.close()
    call_store._stores = OrderedDict()


def timed(step: str, action: Any, new_process: bool = True) -> tuple[float, Any]:
    """Seconds `action` took, and its value; the step and its time are printed as soon as it ends (a run at
    a million calls takes a while)."""
    if new_process:
        as_a_new_process()
    start = time.perf_counter()
    value = action()
    seconds = time.perf_counter() - start
    print(f"  {step}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return seconds, value


def main(out_dir: Path, calls: int = 100_000) -> dict[str, Any]:
    rng = random.Random(SEED)
    shutil.rmtree(out_dir, ignore_errors=True)
    dataset = write_dataset(out_dir / "build", synthetic_threads(calls, rng))
    run_dir = out_dir / "run"
    run = settings(dataset, run_dir)
    bench = BENCHMARKS["threadmed"]
    plan = bench.plan(run)
    ledger_dir = plan.ledger_dir
    recorder = Recorder(CallLedger(ledger_dir), rng)
    start = time.perf_counter()
    recorder.record_plan(plan)
    record_s = time.perf_counter() - start
    segments_bytes = disk_bytes(ledger_dir)

    # By the process that wrote the segment, as at the end of a run (its segment is sealed then).
    receipts_s, receipts = timed(
        "end of run: receipts", lambda: record_receipts(plan, bench.estimate_job), new_process=False
    )
    compact_s, compaction = timed(
        "end of run: compaction", lambda: compact_ledger(ledger_dir), new_process=False
    )
    store_bytes = disk_bytes(ledger_dir)
    resume_s, _ = timed(
        "resume (--dry-run)",
        lambda: run_or_estimate(bench.card, lambda: bench, run, run_dir, True, lambda: None),
    )
    _, estimates = timed(
        "estimate again (what it found)", lambda: estimate_plan(bench.plan(run), bench.estimate_job)
    )  # what it found
    found = sum(estimate.cached for estimate in estimates)
    to_make = sum(estimate.calls for estimate in estimates)
    read_all_s, records = timed("every record read", lambda: sum(1 for _ in CallLedger(ledger_dir).records()))
    lookup_s, looked_up = timed(
        "every key looked up", lambda: found_keys(CallLedger(ledger_dir), recorder.keys)
    )
    totals_s, totals = timed(
        "ledger totals",
        lambda: (run_calls(ledger_dir, ledger_calls(ledger_dir)), CallLedger(ledger_dir).total_cost_usd()),
    )

    tables_s, rows = timed("the run's tables", lambda: write_tables(bench, plan, run))
    report_dir = out_dir / "report"
    report_s, _ = timed(
        "report",
        lambda: build_report.fn(run_dirs=[str(run_dir)], out_dir=str(report_dir), settings=ReportSettings()),
    )
    read_export_s, exported = timed("export: samples read", lambda: bench.export(run_dir))
    flat_s, _ = timed(
        "export: Parquet table",
        lambda: write_export(exported, out_dir / "flat", "parquet"),
        new_process=False,
    )
    one_model = exported.model_copy(update={"models": exported.models[:1]})
    inspect_s, _ = timed(
        "export: one model's Inspect log",
        lambda: write_export(one_model, out_dir / "inspect", "inspect"),
        new_process=False,
    )
    samples = sum(len(model_samples) for model_samples in exported.samples.values())
    first_model_samples = len(exported.samples[exported.models[0].name])

    old_dir = out_dir / "old-layout"
    old_write_s = old_layout_write_s(recorder.records, old_dir)
    old_bytes = disk_bytes(old_dir)
    sample = len(recorder.records)
    return {
        "calls": len(recorder.keys),
        "threads": len(plan.jobs) // (MODELS * len(CONDITIONS)),
        "record_s": record_s,
        "write_ms_per_call": recorder.write_s / len(recorder.keys) * 1000,
        "old_layout_write_ms_per_call": old_write_s / sample * 1000,
        "old_layout_bytes_per_call": old_bytes / sample,
        "segments_bytes": segments_bytes,
        "receipts_s": receipts_s,
        "receipts": receipts,
        "compact_s": compact_s,
        "compacted_records": compaction.records if compaction else 0,
        "store_bytes": store_bytes,
        "resume_s": resume_s,
        "resume_found": found,
        "resume_to_make": to_make,
        "read_all_s": read_all_s,
        "read_all_records": records,
        "lookup_every_key_s": lookup_s,
        "looked_up": looked_up,
        "totals_s": totals_s,
        "run_calls": totals[0].run["single"].calls,
        "spent_usd": totals[1],
        "tables_s": tables_s,
        "table_rows": rows,
        "report_s": report_s,
        "export_read_s": read_export_s,
        "export_samples": samples,
        "export_parquet_s": flat_s,
        "export_inspect_one_model_s": inspect_s,
        "export_inspect_one_model_samples": first_model_samples,
        "targets": TARGETS,
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    calls = results["calls"]
    return [
        f"{calls:,} calls ({results['threads']:,} threads x {MODELS} models x 2 conditions, answered and "
        f"judged) recorded in {results['record_s']:.1f} s; a write {results['write_ms_per_call']:.3f} ms "
        f"(one file per call: {results['old_layout_write_ms_per_call']:.3f} ms)",
        f"end of run: {results['receipts']:,} job receipts written in {results['receipts_s']:.1f} s",
        f"store on disk: {results['segments_bytes'] / 2**20:,.0f} MiB of segments, "
        f"{results['store_bytes'] / 2**20:,.0f} MiB compacted in {results['compact_s']:.1f} s "
        f"(one file per call: {results['old_layout_bytes_per_call'] * calls / 2**20:,.0f} MiB) "
        f"(target < {TARGETS['store_bytes'] / 2**30:.0f} GiB at 1M)",
        f"resume (--dry-run): {results['resume_s']:.1f} s, {results['resume_found']:,} calls found, "
        f"{results['resume_to_make']:,} to make (target < {TARGETS['resume_s']:.0f} s at 1M)",
        f"every record read: {results['read_all_s']:.1f} s; every key looked up: "
        f"{results['lookup_every_key_s']:.1f} s ({results['looked_up']:,} found); ledger totals (summary, "
        f"spending cap): {results['totals_s']:.1f} s",
        f"the run's tables as a re-run writes them ({results['table_rows']:,} rows, every call found): "
        f"{results['tables_s']:.1f} s; report {results['report_s']:.1f} s (target < "
        f"{TARGETS['report_s']:.0f} s at 1M)",
        f"export: the run's {results['export_samples']:,} samples read in {results['export_read_s']:.1f} s, "
        f"written as one Parquet table in {results['export_parquet_s']:.1f} s; one model's Inspect log "
        f"({results['export_inspect_one_model_samples']:,} samples) in "
        f"{results['export_inspect_one_model_s']:.1f} s",
    ]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=100_000)
    outcome = main(Path("data_lake/bench/ledger"), parser.parse_args().calls)
    print(json.dumps(outcome, indent=2))
    print("\n".join(summary_lines(outcome)))
