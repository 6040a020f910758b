"""The Prefect settings of a `threadmed` process: the project's defaults where the user set none, set before
Prefect reads them, and the API of a server already running for the project's state."""

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.cli.prefect_env import (
    API_URL,
    HOME,
    apply_project_defaults,
    project_defaults,
    server_address,
    use_running_server,
)
from tests.flows.cli.terminal import COMMAND_TIMEOUT_S, THREADMED, run_in_terminal

ROOT = Path("/project")
DEFAULTS = project_defaults(ROOT)
# Variables that would hide what the entry point does: Prefect's own, telemetry opt-outs and CI markers.
CLIENT_TELEMETRY = ("DO_NOT_TRACK", "CI", "GITHUB_ACTIONS", "GITLAB_CI", "JENKINS_URL", "BUILDKITE")


def test_the_defaults_are_the_project_s():
    assert DEFAULTS == {
        "PREFECT_HOME": "/project/.prefect",
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": "/project/data_lake/.prefect_results",
        "PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS": "16",
        "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "50",
        "PREFECT_API_REQUEST_TIMEOUT": "300",
    }


def test_a_variable_the_user_set_is_kept_and_the_others_are_filled():
    environ = {"PREFECT_LOGGING_LEVEL": "DEBUG", "PATH": "/bin", HOME: "/nowhere/home"}
    applied = apply_project_defaults(environ, ROOT)
    assert environ == {**DEFAULTS, "PREFECT_LOGGING_LEVEL": "DEBUG", "PATH": "/bin", HOME: "/nowhere/home"}
    user_set = ("PREFECT_LOGGING_LEVEL", HOME)
    assert applied == {name: value for name, value in DEFAULTS.items() if name not in user_set}


# What an environment variable holds as Python reads it: any bytes but NUL (which ends a C string), decoded
# as UTF-8 with the bytes that are not UTF-8 as the lone surrogates U+DC80-U+DCFF (surrogateescape); no other
# lone surrogate can come from the environment.
ENVIRONMENT_TEXT = st.characters(codec="utf-8", exclude_characters="\x00") | st.characters(
    min_codepoint=0xDC80, max_codepoint=0xDCFF
)


@given(
    users=st.dictionaries(
        st.sampled_from(sorted(DEFAULTS)), st.text(ENVIRONMENT_TEXT, min_size=1, max_size=8)
    ),
    others=st.dictionaries(
        st.sampled_from(["PATH", "LANG", "PREFECT_API_KEY"]), st.text(ENVIRONMENT_TEXT, max_size=8)
    ),
)
def test_every_default_fills_exactly_what_the_user_left_unset(users, others):
    users = {**users, HOME: users.get(HOME, "/nowhere/home")}  # a home with no profile in it
    environ = {**others, **users}
    applied = apply_project_defaults(environ, ROOT)
    assert environ == {**DEFAULTS, **others, **users}
    assert applied == {name: value for name, value in DEFAULTS.items() if name not in users}
    assert apply_project_defaults(environ, ROOT) == {}  # a second time: nothing left to fill


def test_a_setting_of_the_active_profile_counts_as_the_user_s(tmp_path):
    (tmp_path / "profiles.toml").write_text(
        'active = "dev"\n'
        '[profiles.dev]\nPREFECT_LOGGING_LEVEL = "INFO"\n'
        '[profiles.quiet]\nDO_NOT_TRACK = "0"\n'
    )
    defaults_after = {}
    for profile, chosen in {"active": {}, "quiet": {"PREFECT_PROFILE": "quiet"}}.items():
        defaults_after[profile] = sorted(apply_project_defaults({HOME: str(tmp_path), **chosen}, ROOT))
    everything_but = {name: sorted(set(DEFAULTS) - {HOME, name}) for name in DEFAULTS}
    assert defaults_after == {
        "active": everything_but["PREFECT_LOGGING_LEVEL"],
        "quiet": everything_but["DO_NOT_TRACK"],
    }


SETTINGS_AS_PREFECT_READS_THEM = """
import sys
from pathlib import Path

import flows.cli
from flows.cli import prefect_env

prefect_env.CHECKOUT = Path(sys.argv[1])  # a checkout of the project without its state


def command():  # what every command's flow reads, once, when it imports Prefect
    from prefect.settings import get_current_settings

    settings = get_current_settings()
    print(settings.home, settings.logging.level, settings.server.analytics_enabled,
          settings.server.ephemeral.startup_timeout_seconds)


flows.cli.app = command
flows.cli.main()
"""


def without_prefect_settings() -> dict[str, str]:
    """This environment less every Prefect setting and telemetry opt-out (the tests' conftest sets some)."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PREFECT_") and name not in CLIENT_TELEMETRY
    }


def test_the_entry_point_sets_the_defaults_before_prefect_reads_its_settings(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    read = subprocess.run(
        [sys.executable, "-c", SETTINGS_AS_PREFECT_READS_THEM, str(tmp_path)],
        capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=True, env=without_prefect_settings(),
    )  # fmt: skip
    assert read.stdout == f"{tmp_path / '.prefect'} WARNING False 90\n"


def test_a_command_on_a_terminal_prints_only_its_own_lines(tmp_path):
    """No usage-data notice (Prefect shows one on a terminal to a new home), no INFO line of the flow run."""
    environment = {
        **without_prefect_settings(),
        "PREFECT_HOME": str(tmp_path / "home"),  # a new home: Prefect's notice would show
        API_URL: os.environ[API_URL],  # this worker's API (tests/flows/cli/conftest.py)
        "COLUMNS": "200",
    }
    shown = run_in_terminal([THREADMED, "synth", "--posts", "5", "--out", "dumps"], tmp_path, environment)
    lines = [line.rstrip() for line in shown.splitlines() if line.strip()]
    dumps = tmp_path / "dumps"
    assert lines[0] == "Writing dumps of 5 r/AskDocs posts (seed 0, subreddit layout) to dumps"
    assert lines[1].startswith("Wrote ") and lines[1].endswith(" s")
    assert lines[2:] == [f"  {dumps.relative_to(tmp_path) / name}" for name in SUBREDDIT_DUMPS]


SUBREDDIT_DUMPS = ("AskDocs_submissions.zst", "AskDocs_comments.zst")


class SettingsReply(BaseHTTPRequestHandler):
    """Prefect's /api/admin/settings, saying whose state the server holds (`home`, None: not JSON)."""

    home: str | None = None

    def do_GET(self) -> None:
        body = b"<html>not Prefect</html>" if self.home is None else json.dumps({"home": self.home}).encode()
        self.send_response(200 if self.path == "/api/admin/settings" else 404)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        return


@pytest.fixture
def server_at() -> Iterator[tuple[int, type[SettingsReply]]]:
    """A stand-in for a Prefect server on a free port, and the handler class whose `home` it reports."""
    handler = type("Reply", (SettingsReply,), {})
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield server.server_address[1], handler
        server.shutdown()


def test_a_server_holding_this_state_is_used_and_any_other_is_not(tmp_path, server_at):
    port, handler = server_at
    home = tmp_path / "home"
    chosen = {}
    homes = {"same": str(home), "other": str(tmp_path / "elsewhere"), "not Prefect": None}
    for case, served in homes.items():
        handler.home = served
        environ = {HOME: str(home), "PREFECT_SERVER_API_PORT": str(port)}
        use_running_server(environ)
        chosen[case] = environ.get(API_URL)
    assert chosen == {"same": f"http://127.0.0.1:{port}/api", "other": None, "not Prefect": None}


def test_the_user_s_api_wins_over_a_running_server(tmp_path, server_at):
    port, handler = server_at
    handler.home = str(tmp_path)
    environ = {HOME: str(tmp_path), "PREFECT_SERVER_API_PORT": str(port), API_URL: "http://example:1/api"}
    assert use_running_server(environ) is None
    assert environ[API_URL] == "http://example:1/api"
    (tmp_path / "profiles.toml").write_text(
        'active = "a"\n[profiles.a]\nPREFECT_API_URL = "http://b:2/api"\n'
    )
    del environ[API_URL]
    assert use_running_server(environ) is None
    assert API_URL not in environ


def test_no_server_listening_is_none_at_once(tmp_path):
    environ = {HOME: str(tmp_path), "PREFECT_SERVER_API_PORT": "9"}  # discard: nothing listens
    assert use_running_server(environ) is None
    assert environ == {HOME: str(tmp_path), "PREFECT_SERVER_API_PORT": "9"}


@pytest.mark.parametrize(
    ("settings", "address"),
    [
        ({}, "http://127.0.0.1:4200/api"),
        (
            {"PREFECT_SERVER_API_HOST": "0.0.0.0", "PREFECT_SERVER_API_PORT": "4300"},
            "http://127.0.0.1:4300/api",
        ),
        ({"PREFECT_SERVER_API_HOST": "::1"}, "http://[::1]:4200/api"),
    ],
)
def test_the_server_address_is_prefect_s(tmp_path, settings, address):
    assert server_address({HOME: str(tmp_path), **settings}) == address
