"""Build benchmark on full-scale generated dumps, everything measured side by side in one run.

Per-subreddit layout (AskDocs_{submissions,comments}.zst, 1.86M records, every line of the subreddit):
- floor: `zstd -dc --long=31 FILE > /dev/null` (python-zstandard to /dev/null when the CLI is missing);
- DuckDB one-liner: `zstd -dc --long=31 FILE | python -c` DuckDB `copy (select <the raw columns the build
  keeps, as VARCHAR> from read_ndjson('/dev/stdin', columns=..., ignore_errors=true) where
  lower(subreddit)='askdocs') to 'x.parquet'`, what a user could write in an afternoon;
- baseline: a reader in the style of Watchful1's PushshiftDumps scripts (one process, 128 MiB decoded
  chunks, `json.loads` per line, nothing written);
- ingest: this project's ingest, writing Parquet, as the build does (one file at a time, decompressed in
  a thread, parsed by one worker thread per core); its seconds are timed inside the process, so
  without the interpreter's start and Prefect's import;
- build: the whole `threadmed build` command (ingest + SQL + publish), wall time and peak memory.
Monthly layout (RS_/RC_YYYY-MM.zst of 2019-2022, AskDocs about 0.3% of the lines): the floor and the
ingest on the same files. Each command runs ROUNDS times, alternating, and the fastest run counts: the
machine is shared, and the ratios are between commands of the same round (each round's are printed too).

Peak memory is the largest sum of RSS over a command's whole process tree, sampled every 50 ms.
"""

import json
import shlex
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
MONTHLY_POSTS = 1_500
MONTHLY_YEARS = ("2019", "2020", "2021", "2022")
ROUNDS = 3
BASELINE_CHUNK = 2**27
TARGETS = {"ingest_vs_duckdb": 1.5, "monthly_ingest_vs_floor": 0.8, "ingest_vs_baseline": 2.0}
# The raw columns the build keeps, read as text by the DuckDB one-liner.
DUCKDB_COLUMNS = {
    "submissions": [
        "id",
        "subreddit",
        "author",
        "title",
        "selftext",
        "created_utc",
        "is_self",
        "domain",
        "url",
        "post_hint",
        "is_gallery",
        "is_video",
        "removed_by_category",
        "banned_by",
        "banned_at_utc",
        "distinguished",
        "stickied",
        "num_comments",
        "score",
        "author_flair_text",
        "author_flair_richtext",
        "link_flair_text",
        "edited",
        "retrieved_on",
        "retrieved_utc",
    ],
    "comments": [
        "id",
        "subreddit",
        "link_id",
        "parent_id",
        "author",
        "body",
        "created_utc",
        "distinguished",
        "stickied",
        "is_submitter",
        "banned_by",
        "removed_by_category",
        "author_flair_text",
        "author_flair_richtext",
        "score",
        "edited",
        "retrieved_on",
        "retrieved_utc",
    ],
}


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


def kind_of(path: str) -> str:
    return "submissions" if Path(path).name.startswith(("RS_", "AskDocs_submissions")) else "comments"


def ingest_like_the_build(files: list[str], lake: str) -> str:
    """Ingest the dumps as build-dataset does (one at a time, every core parsing): "<lines> <seconds>"."""
    from tasks.data.reddit.ingest import DEFAULT_WORKERS, ingest_dump
    from tasks.data.reddit.records import IngestFilter

    shutil.rmtree(lake, ignore_errors=True)
    keep = IngestFilter("AskDocs", date(2015, 1, 1), date(2023, 7, 1))
    started = time.perf_counter()
    receipts = [
        ingest_dump(Path(path), kind_of(path), Path(lake), keep, workers=DEFAULT_WORKERS) for path in files
    ]
    seconds = time.perf_counter() - started
    return f"{sum(receipt['summary']['lines'] for receipt in receipts)} {seconds}"


def floor_command(path: str) -> list[str]:
    if shutil.which("zstd"):
        return ["bash", "-c", f"zstd -dc --long=31 {shlex.quote(path)} > /dev/null"]
    return python_step(
        "import shutil, zstandard; "
        f"reader = zstandard.ZstdDecompressor(max_window_size=2**31).stream_reader(open({path!r}, 'rb')); "
        "shutil.copyfileobj(reader, open('/dev/null', 'wb'), 1 << 22)"
    )


def duckdb_command(path: str, out: str) -> list[str]:
    columns = DUCKDB_COLUMNS[kind_of(path)]
    spec = "{" + ", ".join(f"'{column}': 'VARCHAR'" for column in columns) + "}"
    code = (
        f"import duckdb; duckdb.sql(\"copy (select {', '.join(columns)} from read_ndjson('/dev/stdin', "
        f"columns={spec}, ignore_errors=true) where lower(subreddit)='askdocs') to '{out}'\")"
    )
    return ["bash", "-c", f"zstd -dc --long=31 {shlex.quote(path)} | {sys.executable} -c {shlex.quote(code)}"]


def run_measured(command: list[str]) -> dict[str, Any]:
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


def run_files(commands: list[list[str]]) -> dict[str, Any]:
    """Run one command per file in turn; their seconds add up, the peak is the largest."""
    runs = [run_measured(command) for command in commands]
    return {"seconds": sum(r["seconds"] for r in runs), "peak_mib": max(r["peak_mib"] for r in runs)}


def run_ingest(files: list[str], lake: Path) -> dict[str, Any]:
    measured = run_measured(python_step(
        "from tests.perf.bench_build import ingest_like_the_build as run; "
        f"print(run({files!r}, {str(lake)!r}))"
    ))  # fmt: skip
    lines, seconds = measured["output"].strip().splitlines()[-1].split()
    return {"seconds": float(seconds), "process_seconds": measured["seconds"],
            "peak_mib": measured["peak_mib"], "lines": int(lines)}  # fmt: skip


def python_step(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def fastest(runs: list[dict[str, Any]]) -> dict[str, Any]:
    return min(runs, key=lambda run: run["seconds"])


def generated(folder: Path, posts: int, layout: str) -> Path:
    if not (folder / "truth" / "threads.parquet").exists():
        print(f"generating a {layout} dump ({posts:,} posts) in {folder} ...", flush=True)
        generate_dumps(folder, posts, SEED, layout)  # type: ignore[arg-type]
    return folder


def main(out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    dumps = generated(out_dir / f"dumps-{FULL_SCALE_POSTS}-{SEED}", FULL_SCALE_POSTS, "subreddit")
    files = [str(dumps / "AskDocs_submissions.zst"), str(dumps / "AskDocs_comments.zst")]
    monthly = generated(out_dir / f"monthly-{MONTHLY_POSTS}-{SEED}", MONTHLY_POSTS, "monthly")
    months = [str(p) for p in sorted(monthly.glob("R[SC]_*.zst")) if p.name[3:7] in MONTHLY_YEARS]
    duckdb_out = out_dir / "duckdb.parquet"

    rounds: dict[str, list[dict[str, Any]]] = {"floor": [], "duckdb": [], "ingest": [],
                                               "monthly_floor": [], "monthly_ingest": []}  # fmt: skip
    for round_number in range(1, ROUNDS + 1):
        print(f"round {round_number}: floor, DuckDB one-liner, ingest; monthly floor, ingest ...", flush=True)
        rounds["floor"].append(run_files([floor_command(f) for f in files]))
        rounds["duckdb"].append(run_files([duckdb_command(f, str(duckdb_out)) for f in files]))
        rounds["ingest"].append(run_ingest(files, out_dir / "lake"))
        rounds["monthly_floor"].append(run_files([floor_command(f) for f in months]))
        rounds["monthly_ingest"].append(run_ingest(months, out_dir / "monthly-lake"))
    best = {name: fastest(runs) for name, runs in rounds.items()}

    print("baseline reader (Watchful1 style) ...", flush=True)
    baseline = run_measured(python_step(
        "from tests.perf.bench_build import watchful_style_count as count; "
        f"print(count({files!r}))"
    ))  # fmt: skip
    baseline_records = int(baseline["output"].strip().splitlines()[-1])

    print("whole build (threadmed build) ...", flush=True)
    threadmed = str(Path(sys.executable).with_name("threadmed"))
    build = run_measured([
        threadmed, "build", "--submissions", files[0], "--comments", files[1],
        "--out", str(out_dir / "build"), "--lake", str(out_dir / "build-lake"),
    ])  # fmt: skip
    stats = json.loads((out_dir / "build" / "stats.json").read_text())

    ingest, records = best["ingest"], best["ingest"]["lines"]
    results = {
        "load_average": psutil.getloadavg(),
        "floor_tool": "zstd CLI" if shutil.which("zstd") else "python-zstandard",
        "dump_mib": sum(Path(f).stat().st_size for f in files) / 2**20,
        "records": records,
        "monthly_files": len(months),
        "monthly_mib": sum(Path(f).stat().st_size for f in months) / 2**20,
        "monthly_records": best["monthly_ingest"]["lines"],
        **{name: _numbers(run) for name, run in best.items()},
        "all_rounds": {name: [round(run["seconds"], 2) for run in runs] for name, runs in rounds.items()},
        "baseline": {"records_per_s": baseline_records / baseline["seconds"], **_numbers(baseline)},
        "ingest_records_per_s": records / ingest["seconds"],
        "build": _numbers(build),
        "table1": {name: stats[name] for name in ("full", "answered")},
    }
    results["ingest_vs_duckdb"] = best["duckdb"]["seconds"] / ingest["seconds"]
    results["monthly_ingest_vs_floor"] = best["monthly_floor"]["seconds"] / best["monthly_ingest"]["seconds"]
    results["ingest_vs_baseline"] = results["ingest_records_per_s"] / results["baseline"]["records_per_s"]
    results["ratios_per_round"] = {
        "ingest_vs_duckdb": [
            round(d["seconds"] / i["seconds"], 2)
            for d, i in zip(rounds["duckdb"], rounds["ingest"], strict=True)
        ],
        "monthly_ingest_vs_floor": [
            round(f["seconds"] / i["seconds"], 2)
            for f, i in zip(rounds["monthly_floor"], rounds["monthly_ingest"], strict=True)
        ],
    }
    (out_dir / "build.json").write_text(json.dumps(results, indent=2))
    return results


def _numbers(measured: dict[str, Any]) -> dict[str, float]:
    return {"seconds": round(measured["seconds"], 2), "peak_mib": round(measured["peak_mib"], 1)}


def summary_lines(results: dict[str, Any]) -> list[str]:
    baseline, ingest, build = results["baseline"], results["ingest"], results["build"]
    load = ", ".join(f"{value:.1f}" for value in results["load_average"])
    return [
        f"load average at the end (1, 5, 15 min): {load} on {psutil.cpu_count()} cores",
        f"per-subreddit dump: {results['dump_mib']:,.0f} MiB compressed, {results['records']:,} records",
        f"  floor ({results['floor_tool']} to /dev/null): {results['floor']['seconds']:.1f} s",
        f"  DuckDB one-liner: {results['duckdb']['seconds']:.1f} s, "
        f"peak {results['duckdb']['peak_mib']:,.0f} MiB",
        f"  ingest (writes Parquet, all cores): {ingest['seconds']:.1f} s, "
        f"{results['ingest_records_per_s']:,.0f} records/s, peak {ingest['peak_mib']:,.0f} MiB",
        f"  baseline reader (Watchful1 style, json.loads, writes nothing): {baseline['seconds']:.1f} s, "
        f"{baseline['records_per_s']:,.0f} records/s",
        f"monthly dumps: {results['monthly_files']} files of {', '.join(MONTHLY_YEARS)}, "
        f"{results['monthly_mib']:,.0f} MiB compressed, {results['monthly_records']:,} lines",
        f"  floor: {results['monthly_floor']['seconds']:.1f} s; "
        f"ingest: {results['monthly_ingest']['seconds']:.1f} s",
        *(
            f"{name.replace('_', ' ')}: {results[name]:.2f}x (target >= {target}x)"
            f"{'' if results[name] >= target else '  << short of target'}"
            for name, target in TARGETS.items()
        ),
        *(
            f"{name.replace('_', ' ')} per round: {', '.join(f'{r:.2f}x' for r in ratios)}"
            for name, ratios in results["ratios_per_round"].items()
        ),
        f"whole build: {build['seconds']:.1f} s (target < 180 s), peak {build['peak_mib']:,.0f} MiB "
        "(target < 2048 MiB)",
    ]
