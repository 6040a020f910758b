"""litellm is imported by the first call, price or batch, never by a module that only reads records."""

import subprocess
import sys

# Flows and modules that read, build or count but make no call: reports, comparisons, cases, builds, the CLI.
READERS = [
    "flows.cli", "flows.report", "flows.compare", "flows.consult_report", "flows.snomed_report",
    "flows.consult_cases", "flows.snomed_cases", "flows.build_dataset", "flows.judge_agreement",
    "tasks.llm.call", "tasks.llm.batches", "tasks.llm.errors", "tasks.evals.spending",
]  # fmt: skip


def test_modules_that_make_no_call_import_no_litellm_and_its_first_use_loads_it_quiet():
    """Importing litellm took 2.5-3 s of CPU in every report, export and comparison."""
    script = (
        f"import importlib, sys\nfor name in {READERS!r}: importlib.import_module(name)\n"
        "print('litellm' in sys.modules)\n"
        "from tasks.llm.sdk import litellm_sdk\n"
        "print(litellm_sdk().suppress_debug_info, litellm_sdk() is sys.modules['litellm'])\n"
    )
    imported = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert (imported.returncode, imported.stdout) == (0, "False\nTrue True\n"), imported.stderr


def test_a_process_whose_first_call_fails_on_the_direct_route_prints_no_litellm_banner(tmp_path):
    """The direct route imports litellm itself; the banner litellm prints on a provider error stays off."""
    script = (
        "from tasks.llm.call import complete\n"
        "from tasks.llm.ledger import CallLedger\n"
        "from tasks.llm.request import CallOptions, ChatRequest, RetryPolicy\n"
        "asked = ChatRequest(model='openai/m', messages=({'role': 'user', 'content': 'hi'},),"
        " api_base='http://127.0.0.1:9/v1')\n"
        "options = CallOptions(provider='test', retry=RetryPolicy(max_attempts=1))\n"
        f"record = complete(asked, options, CallLedger({str(tmp_path)!r}))\n"
        "print(record.status, record.error_kind)\n"
    )
    called = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert (called.returncode, called.stdout, "Give Feedback" in called.stderr) == (
        0,
        "failed connection\n",
        False,
    )
