"""Start-up benchmark: how soon a `threadmed` command prints its first line, what it costs beyond its work.

Runs `threadmed synth --posts 200`, `threadmed build` on the demo's dump (12,000 posts, seed 7), an
`evaluate --dry-run` of two baselines and a judge on that build and the same evaluation run on two threads
(`--limit 2`), as a user would (a new process each, its output piped), first with no Prefect server running
(each command starts a temporary one), then with one kept running by `threadmed server start`. For each it
records the time from launch to the first line on stdout or stderr, the total wall time, and the overhead:
the wall time less the time its flow run took (start to end, as the Prefect server recorded it; a dry run
starts no flow, so all of it is overhead). The machine's load average is recorded beside each command.

The commands share one PREFECT_HOME made beforehand by one command (a new home's database is migrated by
its first command: seconds, once) and a port of their own, so no other server on the machine is used.
"""

import json
import os
import selectors
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

from tasks.synth.generator import generate_dumps

THREADMED = str(Path(sys.executable).with_name("threadmed"))
DEMO_POSTS, DEMO_SEED = 12_000, 7  # `threadmed demo`'s dump (flows/cli/demo.py)
ROUNDS = 2
FIRST_LINE_TARGET_S, OVERHEAD_TARGET_S = 3.0, 2.0  # on a quiet machine (issue 34)
COMMAND_TIMEOUT_S = 900
DUMPS = [
    "--submissions",
    "demo-dumps/AskDocs_submissions.zst",
    "--comments",
    "demo-dumps/AskDocs_comments.zst",
]
BASELINES = "threadmed/retrieval,threadmed/deferral"
# (label, the command's arguments, the flow it runs or None)
COMMANDS = (
    ("synth --posts 200", ["synth", "--posts", "200", "--out", "dumps"], "synthesize-dumps"),
    ("build (demo dump)", ["build", *DUMPS, "--out", "build", "--lake", "lake"], "build-dataset"),
    (
        "evaluate --dry-run",
        ["evaluate", "--dataset", "build", "--out", "run", "--models", BASELINES,
         "--judge", "threadmed/overlap-judge", "--dry-run"],
        None,
    ),
    (
        "evaluate --limit 2",
        ["evaluate", "--dataset", "build", "--out", "run", "--models", BASELINES,
         "--judge", "threadmed/overlap-judge", "--limit", "2", "--no-report"],
        "evaluate-models",
    ),
)  # fmt: skip

ROUND_OUTPUTS = ("dumps", "build", "lake", "run")  # what a round's commands write, removed before it


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def timed(arguments: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run `threadmed` with `arguments`, its stdout and stderr piped: seconds to its first line on either,
    that line, total seconds, exit status and the load average before it."""
    load = os.getloadavg()[0]
    started = time.perf_counter()
    first_line_s, first_line = None, None
    with subprocess.Popen(
        [THREADMED, *arguments], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as process, selectors.DefaultSelector() as selector:  # fmt: skip
        selector.register(process.stdout, selectors.EVENT_READ)
        selector.register(process.stderr, selectors.EVENT_READ)
        output = {process.stdout: b"", process.stderr: b""}
        while selector.get_map():
            for key, _ in selector.select(timeout=COMMAND_TIMEOUT_S):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                output[key.fileobj] += chunk
                if first_line_s is None and b"\n" in output[key.fileobj]:
                    first_line_s = time.perf_counter() - started
                    first_line = output[key.fileobj].split(b"\n")[0].decode(errors="replace")
        returncode = process.wait(timeout=COMMAND_TIMEOUT_S)
    total_s = time.perf_counter() - started
    if returncode != 0:
        raise RuntimeError(f"threadmed {' '.join(arguments)} exited {returncode}: {output[process.stderr]!r}")
    return {"first_line_s": first_line_s, "first_line": first_line, "total_s": total_s, "load": load}


def filtered(api_url: str, what: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of a kind (flows, flow_runs) that the Prefect server at `api_url` holds matching `body`."""
    request = urllib.request.Request(
        f"{api_url}/{what}/filter",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=COMMAND_TIMEOUT_S) as reply:
        return json.loads(reply.read())


def top_flow_runs(api_url: str) -> list[tuple[str, float]]:
    """(flow name, seconds from start to end) of every top-level flow run the server holds, oldest first."""
    names = {flow["id"]: flow["name"] for flow in filtered(api_url, "flows", {})}
    top_level = {"flow_runs": {"parent_task_run_id": {"is_null_": True}}, "sort": "START_TIME_ASC"}
    return [
        (names[run["flow_id"]], (seconds(run["end_time"]) - seconds(run["start_time"])))
        for run in filtered(api_url, "flow_runs", top_level)
    ]


def seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp).timestamp()


def measure_rounds(out_dir: Path, env: dict[str, str], *, server: bool) -> list[dict[str, Any]]:
    """Every command of COMMANDS, ROUNDS times, each round from no outputs."""
    measured = []
    for round_ in range(ROUNDS):
        subprocess.run(["rm", "-rf", *(str(out_dir / name) for name in ROUND_OUTPUTS)], check=True)
        for label, arguments, flow in COMMANDS:
            result = timed(arguments, out_dir, env)
            measured.append({"command": label, "server": server, "round": round_, "flow": flow, **result})
            print(f"  {label}, {'running' if server else 'temporary'} server: {result}", flush=True)
    return measured


def main(out_dir: Path) -> dict[str, Any]:
    out_dir = out_dir.resolve()
    if out_dir.exists():
        subprocess.run(["rm", "-rf", str(out_dir)], check=True)
    out_dir.mkdir(parents=True)
    generate_dumps(out_dir / "demo-dumps", posts=DEMO_POSTS, seed=DEMO_SEED)
    env = {
        **{name: value for name, value in os.environ.items() if name != "PREFECT_API_URL"},
        "PREFECT_HOME": str(out_dir / "prefect-home"),
        "PREFECT_SERVER_API_PORT": str(free_port()),  # where a command looks for a running server
    }
    timed(["synth", "--posts", "20", "--out", "warm-up"], out_dir, env)  # the new home's database made
    measured = measure_rounds(out_dir, env, server=False)
    env["PREFECT_SERVER_API_PORT"] = str(port := free_port())  # free now: temporary servers took ports
    timed(["server", "start"], out_dir, env)
    try:
        measured += measure_rounds(out_dir, env, server=True)
        flow_runs = top_flow_runs(f"http://127.0.0.1:{port}/api")
    finally:
        timed(["server", "stop"], out_dir, env)
    with_flows = [row for row in measured if row["flow"] is not None]
    made = [name for name, _ in flow_runs[1:]]  # the first: the warm-up
    if made != [row["flow"] for row in with_flows]:
        raise RuntimeError(f"flow runs {made} are not the commands' {[row['flow'] for row in with_flows]}")
    for row, (_, flow_s) in zip(with_flows, flow_runs[1:], strict=True):
        row["flow_s"] = flow_s
    for row in measured:
        row["overhead_s"] = row["total_s"] - row.get("flow_s", 0.0)
    return {
        "measured_at": datetime.now().astimezone().isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "rounds": measured,
        "first_line_target_s": FIRST_LINE_TARGET_S,
        "overhead_target_s": OVERHEAD_TARGET_S,
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = [f"{results['cores']} cores; first line target < {results['first_line_target_s']:g} s, overhead "
             f"< {results['overhead_target_s']:g} s (quiet machine)"]  # fmt: skip
    for row in results["rounds"]:
        server = "running server" if row["server"] else "temporary server"
        flow = f", flow {row['flow_s']:.1f} s" if "flow_s" in row else ""
        lines.append(
            f"{row['command']:<19} {server:<16} first line {row['first_line_s']:5.2f} s, total "
            f"{row['total_s']:6.1f} s{flow}, overhead {row['overhead_s']:5.1f} s (load {row['load']:.1f}): "
            f"{row['first_line']}"
        )
    return lines
