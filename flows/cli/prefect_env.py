"""The Prefect settings of a `threadmed` process, decided before Prefect is imported (it reads them once).

- The project's defaults, where the user set none (in the environment or the active Prefect profile):
  state in `.prefect/` of the checkout (results in `data_lake/.prefect_results/`), no telemetry and no
  usage-data notice, warnings and errors only, at most 16 task threads, a client that waits 5 minutes for a
  busy server (the Makefile's, for its other commands, are the same).
- The API: the user's PREFECT_API_URL if set; else the Prefect server already running for this state
  (`threadmed server start`, or `prefect server start` with the same PREFECT_HOME), found at the
  settings' address; else none, and the command starts a temporary server (flows/cli/temporary_server.py).

Standard library only: `threadmed --help` pays for every import here.
"""

import json
import os
import tomllib
import urllib.error
import urllib.request
from collections.abc import Mapping, MutableMapping
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
HOME, API_URL = "PREFECT_HOME", "PREFECT_API_URL"
RECORDER_BATCH = "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE"
DEFAULT_HOST, DEFAULT_PORT = "127.0.0.1", "4200"  # Prefect's own (PREFECT_SERVER_API_HOST, _PORT)
# How long a running server may take to say whose state it holds: a loaded machine answers in tens of ms.
PROBE_TIMEOUT_S = 5.0


def project_root() -> Path:
    """The checkout holding this code (an editable install, as the README's); installed elsewhere, the
    current folder."""
    return CHECKOUT if (CHECKOUT / "pyproject.toml").is_file() else Path.cwd()


def project_defaults(root: Path) -> dict[str, str]:
    """The Prefect settings of the project (what the Makefile used to export), by variable."""
    return {
        HOME: str(root / ".prefect"),  # the runs' history and the server's database, beside the project
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",  # the server's telemetry: offline, it logs an error
        "DO_NOT_TRACK": "1",  # the client's telemetry, and its first-run notice on a terminal
        "PREFECT_LOGGING_LEVEL": "WARNING",  # a flow's INFO lines would come between the command's own
        "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",  # a stopping server's tracebacks about queued events
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",  # a loaded machine starts it slowly
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(root / "data_lake" / ".prefect_results"),  # not ~/.prefect
        "PREFECT_TASKS_RUNNER_THREAD_POOL_MAX_WORKERS": "16",  # Prefect's default pool is unbounded
        # The server records task runs' states 50 to an insert, not one (Prefect's default): about a quarter
        # of its CPU per task run (tests/perf/README.md#the-prefect-servers-task-run-recorder).
        RECORDER_BATCH: "50",
        # Prefect's client sends a request again, a POST included, when no answer came within this (60 s by
        # default); a loaded SQLite server can hold its database locked longer (deployments/README.md).
        "PREFECT_API_REQUEST_TIMEOUT": "300",
    }


def profile_settings(environ: Mapping[str, str], home: str) -> dict[str, str]:
    """The settings of the active Prefect profile (PREFECT_PROFILE, else the file's `active`) in
    PREFECT_PROFILES_PATH, else `home`/profiles.toml; none when there is no such file. A file Prefect cannot
    read is left to Prefect, which names it."""
    path = Path(environ.get("PREFECT_PROFILES_PATH") or Path(home) / "profiles.toml")
    try:
        profiles = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    active = environ.get("PREFECT_PROFILE") or profiles.get("active")
    chosen = profiles.get("profiles", {}).get(active, {}) if isinstance(active, str) else {}
    return {str(key): str(value) for key, value in chosen.items()} if isinstance(chosen, dict) else {}


def settings(environ: Mapping[str, str]) -> dict[str, str]:
    """What Prefect will read: the environment over the active profile of PREFECT_HOME (set: after
    `apply_project_defaults`)."""
    return {**profile_settings(environ, environ[HOME]), **environ}


def apply_project_defaults(environ: MutableMapping[str, str], root: Path) -> dict[str, str]:
    """Set each project default the environment and the active profile leave unset; return those set."""
    defaults = project_defaults(root)
    home = environ.get(HOME, defaults[HOME])
    user_set = {*environ, *profile_settings(environ, home)}
    applied = {name: value for name, value in defaults.items() if name not in user_set}
    environ.update(applied)
    return applied


def server_address(environ: Mapping[str, str]) -> str:
    """The API where `prefect server start` (and `threadmed server start`) serve under these settings."""
    chosen = settings(environ)
    host = chosen.get("PREFECT_SERVER_API_HOST") or DEFAULT_HOST
    if host in ("0.0.0.0", "::"):  # every interface: this machine's loopback reaches it
        host = DEFAULT_HOST
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{chosen.get('PREFECT_SERVER_API_PORT') or DEFAULT_PORT}/api"


def same_home(home: str | None, environ: Mapping[str, str]) -> bool:
    """Whether a server's PREFECT_HOME is this process's."""
    own = Path(environ[HOME]).expanduser().resolve()
    return home is not None and Path(home).expanduser().resolve() == own


def server_home(api_url: str, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """The PREFECT_HOME of the Prefect server answering at `api_url`, or None when none answers (nothing
    listening, not Prefect, or no reply within `timeout_s`)."""
    try:
        with urllib.request.urlopen(f"{api_url}/admin/settings", timeout=timeout_s) as reply:
            home = json.loads(reply.read()).get("home")
    except (OSError, ValueError, AttributeError):  # refused, timed out, HTTP error, not JSON, not an object
        return None
    return home if isinstance(home, str) else None


def running_server(environ: Mapping[str, str]) -> str | None:
    """The API of the Prefect server at the settings' address if it holds this process's PREFECT_HOME (the
    same runs, the same database), else None."""
    api_url = server_address(environ)
    return api_url if same_home(server_home(api_url), environ) else None


def use_running_server(environ: MutableMapping[str, str]) -> str | None:
    """Point Prefect at the project's running server unless the user chose an API; return its URL, or None
    (the user's API, or none running: the command starts a temporary one)."""
    if API_URL in settings(environ):
        return None
    api_url = running_server(environ)
    if api_url is not None:
        environ[API_URL] = api_url
    return api_url


def prepare(environ: MutableMapping[str, str] = os.environ) -> None:
    """The `threadmed` process's Prefect settings: the project's defaults, then the API to use."""
    apply_project_defaults(environ, project_root())
    use_running_server(environ)
