"""The deployments guide (deployments/README.md) run as written, with bash: its own server, `prefect deploy`,
process worker and every offline run, in a scratch copy of the checkout. The deployments' other end-to-end
tests share one server and worker (test_deployments.py); this one starts the guide's own, as a reader would.
"""

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import httpx
import pytest

from deployments.dead_runs import AUTOMATION_NAME
from tests.prefect_server import CLI_TIMEOUT_S, FLOW_RUN_ID, ManagedProcess, free_port

# Minutes of tests one after another: started first, beside the suite's other long chains (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.starts_first]

PROJECT_ROOT = Path(__file__).resolve().parents[2]
POOL = "threadmed-process"

GUIDE = PROJECT_ROOT / "deployments" / "README.md"
# The guide's section run here, and the headings in it of its bash blocks: the set-up, then the rest.
SECTION = "## Run with a process worker (the default)"
OFFLINE = "### Offline runs: every benchmark, no keys"
KEYED = "### Runs with your dumps and provider keys"  # created on a paused pool: the test has no keys
FLAKY = "### A flaky provider, by hand"
GUIDE_TEST_SALT = "0123456789abcdef" * 4  # its 10,000-post demo build holds 7 answered test threads
# What a checkout of the guide's reader holds that the runs read; their outputs go to folders of its own.
CHECKOUT = ("deployments", "flows", "prefect.yaml", "pyproject.toml", "sql", "tasks", "tests")
GUIDE_TIMEOUT_S = 3600.0  # a liveness bound only: the guide's fourteen runs on a machine many times busier
FENCE = re.compile(r"^```(\w*)\s*$")


def bash_blocks(section: str) -> dict[str, list[str]]:
    """The bash blocks of a Markdown section by the heading they are under, in order."""
    blocks: dict[str, list[str]] = defaultdict(list)
    heading, language, lines = "", None, []
    for line in section.splitlines():
        if fence := FENCE.match(line):
            if language is None:
                language, lines = fence.group(1), []
            else:
                if language == "bash":
                    blocks[heading].append("\n".join(lines))
                language = None
        elif language is not None:
            lines.append(line)
        elif line.startswith("#"):
            heading = line.strip()
    return dict(blocks)


def guide_section() -> str:
    text = GUIDE.read_text()
    start = text.index(f"{SECTION}\n")
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end >= 0 else len(text)]


def commands(block: str) -> list[str]:
    """A block's commands, a `\\` continuation joined, comments and blank lines left out."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def scratch_checkout(root: Path) -> Path:
    """A checkout to follow the guide in: links to this one's code and configs and to the test's venv,
    folders of its own for every output, and `../shared` beside it as beside this checkout."""
    checkout = root / "checkout"
    checkout.mkdir(parents=True)
    for name in CHECKOUT:
        (checkout / name).symlink_to(PROJECT_ROOT / name)
    (checkout / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    (root / "shared").symlink_to(PROJECT_ROOT.parent / "shared", target_is_directory=True)
    return checkout


def test_the_guides_salt_line_makes_a_private_salt_once(tmp_path):
    [line] = [command for command in commands(bash_blocks(guide_section())[SECTION][0]) if "threadmed-salt" in
              command and command.startswith("test -s")]  # fmt: skip
    env = {"HOME": str(tmp_path), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run(["bash", "-c", line], env=env, check=True)
    salt = tmp_path / ".threadmed-salt"
    first = salt.read_text()
    mode = oct(salt.stat().st_mode & 0o777)
    assert (re.fullmatch(r"[0-9a-f]{64}\n", first) is not None, mode) == (True, "0o600")
    subprocess.run(["bash", "-c", line], env=env, check=True)
    assert salt.read_text() == first  # made once per machine: builds with another salt name people otherwise


def test_the_guide_runs_as_written(tmp_path):
    blocks = bash_blocks(guide_section())
    assert sorted(blocks) == sorted([SECTION, OFFLINE, KEYED, FLAKY]), "a new block of the guide: run it here"
    assert [len(blocks[heading]) for heading in (SECTION, OFFLINE, KEYED, FLAKY)] == [1, 1, 1, 1]
    api_port, llm_port = free_port(), free_port()
    # The one change to what is written: free ports, as other servers may hold 4200 and 8000 here.
    script = "\n".join(["set -euo pipefail", *(blocks[heading][0] for heading in (SECTION, OFFLINE, FLAKY))])
    script = re.sub(r"\b4200\b", str(api_port), re.sub(r"\b8000\b", str(llm_port), script))
    checkout = scratch_checkout(tmp_path)
    home = tmp_path / "home"  # where the guide's ~/.threadmed-salt goes
    home.mkdir()
    # A fixed salt, kept by the guide's `test -s` line: splits are drawn from salted pseudonyms, and a random
    # salt leaves the small demo build's test split empty about once in a hundred runs (that line's own
    # work is tested apart, below).
    (home / ".threadmed-salt").write_text(GUIDE_TEST_SALT + "\n")
    unset = {"PREFECT_API_URL", "PREFECT_HOME", "THREADMED_PSEUDONYM_SALT"}
    env = {
        **{key: value for key, value in os.environ.items() if key not in unset},
        "HOME": str(home),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(tmp_path / "results"),  # no other test's cached results
        # Neither the UI nor cron runs (the monthly rebuild could fire mid-test); quicker pick-up.
        "PREFECT_SERVER_UI_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
        "PREFECT_WORKER_QUERY_SECONDS": "1",
        "PREFECT_CLI_WRAP_LINES": "false",
    }
    log = tmp_path / "guide.log"
    with log.open("wb") as output:
        shell = subprocess.Popen(
            ["bash", "-c", script], cwd=checkout, env=env, stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    guide = ManagedProcess("guide", shell, log)  # its process group holds the servers and the worker
    api = f"http://127.0.0.1:{api_port}/api"
    try:
        try:
            shell.wait(timeout=GUIDE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"the guide did not end in {GUIDE_TIMEOUT_S:.0f} s\n{guide.tail(80)}"
            ) from None
        assert shell.returncode == 0, guide.tail(80)

        flaky = httpx.get(f"http://127.0.0.1:{llm_port}/stats", timeout=30).json()
        assert flaky["requests"] > flaky["ok"] > 0 and flaky["max_ok_per_body"] == 1, flaky
        automations = httpx.post(f"{api}/automations/filter", json={}, timeout=30).json()
        assert [automation["name"] for automation in automations] == [AUTOMATION_NAME]
        deployments = {
            d["id"]: d["name"] for d in httpx.post(f"{api}/deployments/filter", json={}, timeout=30).json()
        }
        flows = {f["id"]: f["name"] for f in httpx.post(f"{api}/flows/filter", json={}, timeout=30).json()}
        runs = httpx.post(f"{api}/flow_runs/filter", json={}, timeout=30).json()
        started = [
            f"{flows[run['flow_id']]}/{deployments[run['deployment_id']]}"
            for run in runs
            if run["deployment_id"]
        ]
        shown = [
            command.split()[3]
            for heading in (OFFLINE, FLAKY)
            for command in commands(blocks[heading][0])
            if command.startswith("prefect deployment run ")
        ]
        # Should another run appear (a client's retry, a schedule, an automation), say which and from whom.
        described = [
            (name, run["state"]["name"], run["created"], (run.get("created_by") or {}).get("type"),
             run["auto_scheduled"], run["parent_task_run_id"], run["idempotency_key"])
            for name, run in zip(started, [run for run in runs if run["deployment_id"]], strict=True)
        ]  # fmt: skip
        assert sorted(started) == sorted(shown), described
        assert {run["state"]["type"] for run in runs} == {"COMPLETED"}, [run["state"] for run in runs]

        build = json.loads((checkout / "build" / "build.json").read_text())
        assert build["pseudonyms"]["publishable"] is True  # the guide's worker read the salt file
        assert (home / ".threadmed-salt").read_text() == GUIDE_TEST_SALT + "\n"  # and kept it as it was
        written = ["runs/demo/report/index.html", "runs/demo/compare/compare.md",
                   "runs/snomed-demo/report/index.html", "runs/consult-demo/report/index.html"]  # fmt: skip
        assert [path for path in written if not (checkout / path).is_file()] == []

        # The guide's shell, as the set-up left it, for the commands run one by one below.
        bin_dir = str(Path(sys.executable).parent)
        api_env = {**env, "PREFECT_API_URL": api, "PREFECT_HOME": str(checkout / ".prefect"),
                   "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}"}  # fmt: skip

        def run(command: str) -> str:
            done = subprocess.run(
                ["bash", "-c", re.sub(r"\b8000\b", str(llm_port), command)], cwd=checkout, env=api_env,
                capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
            )  # fmt: skip
            assert done.returncode == 0, f"{command}\n{done.stdout}{done.stderr}"
            return done.stdout

        # "Run the same command again and neither count moves": every call is in the run's ledger.
        [flaky_run] = [line for line in commands(blocks[FLAKY][0]) if line.startswith("prefect deployment")]
        run(flaky_run)
        assert httpx.get(f"http://127.0.0.1:{llm_port}/stats", timeout=30).json() == flaky

        # The runs that need your data or keys: each deployment accepts its parameters (runs wait, unpicked).
        run(f"prefect work-pool pause {POOL}")
        for command in commands(blocks[KEYED][0]):
            match = FLOW_RUN_ID.search(run(command.replace(" --watch", "")))
            assert match is not None, command
            state = httpx.get(f"{api}/flow_runs/{match.group(1)}", timeout=30).json()["state"]
            assert state["type"] == "SCHEDULED", (command, state)
    finally:
        guide.stop(terms=2)
