"""Whether a run folder's finished run was made with the inputs of a new one: the dataset and the settings
of the run id (tasks/evals/plan.py run_id_for). A command that would replace a run made with other inputs
refuses, naming what differs, unless told to replace it."""

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tasks.core.preflight import UserError
from tasks.evals.config import RunConfig

# A manifest value longer than this is cut in a message (a fingerprint, a list of models with their params).
SHOWN_VALUE_CHARS = 40


HEX_DIGEST = re.compile(r"[0-9a-f]{40,}")


def _shown_value(value: Any) -> str:
    """Models by name, a digest by its first 12 characters (as git shows them), text as it is, the rest as
    JSON; cut to SHOWN_VALUE_CHARS."""
    if isinstance(value, list) and all(isinstance(item, dict) and "model" in item for item in value):
        text = ",".join(item.get("name") or item["model"] for item in value)
    elif isinstance(value, str):
        text = value[:12] + "…" if HEX_DIGEST.fullmatch(value) else value
    else:
        text = json.dumps(value, sort_keys=True)
    return text if len(text) <= SHOWN_VALUE_CHARS else text[: SHOWN_VALUE_CHARS - 1] + "…"


def _run_id_settings(config: RunConfig) -> dict[str, Any]:
    return config.model_dump(mode="json", exclude=config.not_in_run_id())


def changed_inputs(
    manifest: Mapping[str, Any], config: RunConfig, fingerprint: str, names: Mapping[str, str]
) -> list[str]:
    """How the inputs a run folder's manifest records differ from `config` over the dataset `fingerprint`:
    one 'name old -> new' per dataset or setting of the run id (tasks/evals/plan.py run_id_for, so settings
    that change no reply, such as concurrency, are left out); `names` gives a setting its option's name.
    [] when they are the same run's inputs."""
    changes = []
    held_fingerprint = (manifest.get("dataset") or {}).get("fingerprint")
    if held_fingerprint != fingerprint:
        changes.append(f"dataset {_shown_value(held_fingerprint)} -> {_shown_value(fingerprint)}")
    new = _run_id_settings(config)
    try:
        old = _run_id_settings(type(config).model_validate(manifest.get("config") or {}))
    except ValidationError:  # written by another version: its settings as recorded, where these have one
        old = {name: value for name, value in (manifest.get("config") or {}).items() if name in new}
    for name in sorted(old.keys() | new.keys()):
        if old.get(name) != new.get(name):
            shown = f"{_shown_value(old.get(name))} -> {_shown_value(new.get(name))}"
            changes.append(f"{names.get(name, name)} {shown}")
    return changes


def check_same_inputs(
    run_dir: Path, config: RunConfig, fingerprint: str, names: Mapping[str, str], what: str
) -> None:
    """Raise UserError (of --out) when RUN_DIR holds a run (`what`, e.g. 'oracle data') made with other
    inputs, naming what differs: a run over it would replace it. A folder with no manifest holds no
    finished run (a new folder, or a run stopped before its end, which only its own inputs resume)."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        return
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        manifest = {}
    changes = changed_inputs(manifest, config, fingerprint, names)
    if changes:
        raise UserError(
            f"{run_dir} holds {what} made with other inputs ({'; '.join(changes)}): pass --replace to "
            "replace it, or another --out folder",
            "--out",
        )
