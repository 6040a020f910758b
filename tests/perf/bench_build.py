"""Build benchmark on a full-scale generated dump, everything measured side by side in one run.

- baseline: a reader in the style of Watchful1's PushshiftDumps scripts (one process, 128 MiB decoded
  chunks, `json.loads` per line, nothing written), over both dump files;
- ingest: this project's ingest of the same files, writing Parquet (as the build does: one file at a
  time, decompressed here, parsed by one worker process per core);
- build: the whole `threadmed build` command (ingest + SQL + publish), wall time and peak memory.

Peak memory is the largest sum of RSS over a command's whole process tree, sampled every 50 ms.
"""

import json
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import psutil

from tasks.synth.generator import generate_dumps
from tasks.synth.plans import FULL_SCALE_POSTS

SEED = 2024
BASELINE_CHUNK = 2**27


def watchful_style_count(paths: list[str]) -> int:
    """Count records the way the PushshiftDumps scripts read them (the baseline; writes nothing)."""
    import json as stdlib_json

    import zstandard

    records = 0
    for path in paths:
        with open(path, "rb") as handle:
            reader = zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(handle)
            buffer = ""
            while True:
                chunk = reader.read(BASELINE_CHUNK)
                if not chunk:
                    break
                lines = (buffer + chunk.decode("utf-8", "replace")).split("\n")
                for line in lines[:-1]:
                    try:
                        stdlib_json.loads(line)
                        records += 1
                    except ValueError:
                        pass
                buffer = lines[-1]
    return records


def ingest_like_the_build(files: list[str], lake: str) -> int:
    """Ingest the dumps as build-dataset does (one at a time, every core parsing); return lines read."""
    from tasks.data.reddit.ingest import DEFAULT_WORKERS, ingest_dump
    from tasks.data.reddit.records import IngestFilter

    shutil.rmtree(lake, ignore_errors=True)
    keep = IngestFilter("AskDocs", date(2015, 1, 1), date(2023, 7, 1))
    receipts = [
        ingest_dump(Path(path), kind, Path(lake), keep, workers=DEFAULT_WORKERS)
        for path, kind in zip(files, ("submissions", "comments"), strict=True)
    ]
    return sum(receipt["summary"]["lines"] for receipt in receipts)


def run_measured(command: list[str]) -> dict[str, float]:
    """Run a command; return its wall time and the peak RSS of its whole process tree (MiB)."""
    started = time.perf_counter()
    process = psutil.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peak = 0
    while process.poll() is None:
        try:
            tree = [process, *process.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.05)
    output = process.stdout.read().decode() if process.stdout else ""
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{output[-4000:]}")
    return {"seconds": time.perf_counter() - started, "peak_mib": peak / 2**20, "output": output}


def python_step(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def main(out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    dumps = out_dir / f"dumps-{FULL_SCALE_POSTS}-{SEED}"
    if not (dumps / "truth" / "threads.parquet").exists():
        print(f"generating a full-scale dump ({FULL_SCALE_POSTS:,} posts) in {dumps} ...", flush=True)
        generate_dumps(dumps, FULL_SCALE_POSTS, SEED, "subreddit")
    files = [str(dumps / "AskDocs_submissions.zst"), str(dumps / "AskDocs_comments.zst")]
    lake = out_dir / "lake"

    print("baseline reader (Watchful1 style) ...", flush=True)
    baseline = run_measured(python_step(
        "from tests.perf.bench_build import watchful_style_count as count; "
        f"print(count({files!r}))"
    ))  # fmt: skip
    baseline_records = int(baseline["output"].strip().splitlines()[-1])

    print("this project's ingest (writes Parquet) ...", flush=True)
    ingest = run_measured(python_step(
        "from tests.perf.bench_build import ingest_like_the_build as run; "
        f"print(run({files!r}, {str(lake)!r}))"
    ))  # fmt: skip
    ingest_lines = int(ingest["output"].strip().splitlines()[-1])

    print("whole build (threadmed build) ...", flush=True)
    threadmed = str(Path(sys.executable).with_name("threadmed"))
    build = run_measured([
        threadmed, "build", "--submissions", files[0], "--comments", files[1],
        "--out", str(out_dir / "build"), "--lake", str(out_dir / "build-lake"),
    ])  # fmt: skip
    stats = json.loads((out_dir / "build" / "stats.json").read_text())

    results = {
        "dump_mib": sum(Path(f).stat().st_size for f in files) / 2**20,
        "records": ingest_lines,
        "baseline": {"records_per_s": baseline_records / baseline["seconds"], **_numbers(baseline)},
        "ingest": {"records_per_s": ingest_lines / ingest["seconds"], **_numbers(ingest)},
        "build": _numbers(build),
        "table1": {name: stats[name] for name in ("full", "answered")},
    }
    results["ingest_speedup_vs_baseline"] = (
        results["ingest"]["records_per_s"] / results["baseline"]["records_per_s"]
    )
    (out_dir / "build.json").write_text(json.dumps(results, indent=2))
    return results


def _numbers(measured: dict[str, Any]) -> dict[str, float]:
    return {"seconds": round(measured["seconds"], 2), "peak_mib": round(measured["peak_mib"], 1)}


def summary_lines(results: dict[str, Any]) -> list[str]:
    baseline, ingest, build = results["baseline"], results["ingest"], results["build"]
    return [
        f"dump: {results['dump_mib']:,.0f} MiB compressed, {results['records']:,} records",
        f"baseline reader (Watchful1 style, json.loads, writes nothing): {baseline['records_per_s']:,.0f} "
        f"records/s, {baseline['seconds']:.1f} s, peak {baseline['peak_mib']:,.0f} MiB",
        f"ingest (orjson, writes Parquet, all cores): {ingest['records_per_s']:,.0f} records/s, "
        f"{ingest['seconds']:.1f} s, peak {ingest['peak_mib']:,.0f} MiB",
        f"ingest speed-up vs baseline: {results['ingest_speedup_vs_baseline']:.2f}x (target >= 2x)",
        f"whole build: {build['seconds']:.1f} s (target < 180 s), peak {build['peak_mib']:,.0f} MiB "
        "(target < 2048 MiB)",
    ]
