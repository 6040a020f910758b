"""Where a run folder stands, read without torch: its manifest, its last checkpoint, and what a re-run of the
same command does next. A run is never trained past its --max-steps: resuming transformers' trainer from a
checkpoint that already ended the training trains one more step (at learning rate 0), so such a run is
finished from that checkpoint without training, and a finished run only gets the outputs it lacks."""

import json
import re
from pathlib import Path
from typing import Any, Literal

from tasks.benchmarks.snomed.oracle_train.settings import OracleTrainSettings, changed_settings
from tasks.core.preflight import UserError

MANIFEST = "manifest.json"
CHECKPOINTS = "checkpoints"
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")  # transformers' checkpoint folders, named by their step
TRAINER_STATE = "trainer_state.json"  # in each checkpoint: its step and the run's planned steps
# The setting OUT/base is made from (a GGUF base, dequantised once and kept for every re-run).
UNPACKED_BASE_SETTING = "base"
# nothing: the run is finished with every output asked; export: finished, some asked output missing;
# finish: its last checkpoint ended the training, the rest (losses, adapter, outputs) is missing; train.
NextStep = Literal["nothing", "export", "finish", "train"]


def recorded_manifest(out: Path) -> dict[str, Any] | None:
    path = out / MANIFEST
    return json.loads(path.read_text()) if path.is_file() else None


def last_checkpoint(out: Path) -> Path | None:
    """The checkpoint of the highest step under OUT/checkpoints, as transformers finds it; None if none."""
    folder = out / CHECKPOINTS
    found = [
        (int(match[1]), path)
        for path in (folder.iterdir() if folder.is_dir() else [])
        if (match := CHECKPOINT.match(path.name)) and path.is_dir()
    ]
    return max(found)[1] if found else None


def checkpoint_step(checkpoint: Path | None) -> int:
    return int(CHECKPOINT.match(checkpoint.name)[1]) if checkpoint else 0  # type: ignore[index]


def trained_steps(out: Path) -> int:
    """How far the folder's run was trained: its last checkpoint's step, or its manifest's if further."""
    recorded = recorded_manifest(out) or {}
    return max(checkpoint_step(last_checkpoint(out)), recorded.get("global_step") or 0)


def check_resumable(out: Path, settings: OracleTrainSettings) -> None:
    """A UserError when `out` holds a run with other settings (its checkpoints would not fit this one), or
    one trained past --max-steps (a run is not untrained). A run that trained nothing (refused, e.g. by its
    --max-length, or stopped before its first checkpoint) binds only its base: `base/` is all it kept."""
    recorded = recorded_manifest(out)
    changed = changed_settings(recorded["settings"], settings) if recorded else []
    trained = trained_steps(out)
    if not trained:
        changed = [name for name in changed if name == UNPACKED_BASE_SETTING]
    if changed:
        raise UserError(
            f"{out} holds a run with other {', '.join(changed)}; resume it with its settings "
            f"(see {out / MANIFEST}) or choose another --out",
            "--out",
        )
    if settings.max_steps is not None and trained > settings.max_steps:
        raise UserError(
            f"{out} holds a run trained {trained} steps, past --max-steps {settings.max_steps}: give "
            f"--max-steps {trained} or more, or choose another --out",
            "--max-steps",
        )


def recorded_loss_before(
    recorded: dict[str, Any] | None, settings: OracleTrainSettings, data_sha256: dict[str, str]
) -> float | None:
    """The base model's held-out loss that the folder's earlier run recorded, if it was measured on the same
    data files with the same settings (a resume may only train longer, which does not change it); else None,
    and the run measures it. A resume thus skips a pass over the validation split (minutes for a 7B base)."""
    if recorded is None or recorded.get("data", {}).get("sha256") != data_sha256:
        return None
    if changed_settings(recorded["settings"], settings):
        return None
    before = recorded.get("eval_loss", {}).get("before")
    return before if isinstance(before, float) else None


def wanted_outputs(export: bool, gguf: bool) -> frozenset[str]:
    """The exports asked: the merged model, and the GGUF converted from it."""
    if gguf and not export:
        raise UserError("--gguf-converter converts the merged model: drop --no-export", "--gguf-converter")
    return frozenset(name for name, asked in (("merged", export), ("gguf", gguf)) if asked)


def planned_steps(settings: OracleTrainSettings, state: dict[str, Any]) -> int | None:
    """The optimizer steps the run trains to: --max-steps, else what the checkpoint's trainer planned for
    the same --epochs (other epochs plan other steps, known only to the trainer)."""
    if settings.max_steps is not None:
        return settings.max_steps
    return state["max_steps"] if state.get("num_train_epochs") == settings.epochs else None


def training_ended_at(checkpoint: Path | None, settings: OracleTrainSettings) -> bool:
    """Whether `checkpoint` (the folder's last) already ends the training these settings ask for."""
    if checkpoint is None:
        return False
    state = json.loads((checkpoint / TRAINER_STATE).read_text())
    planned = planned_steps(settings, state)
    return planned is not None and state["global_step"] >= planned


def next_step(
    recorded: dict[str, Any] | None,
    settings: OracleTrainSettings,
    wanted: frozenset[str],
    export_only: bool,
    ended: bool,
) -> NextStep:
    """What a run of these settings does with the folder's `recorded` manifest, given whether its last
    checkpoint `ended` the training; `export_only` refuses (a UserError) anything that would train."""
    trained = (
        recorded is not None
        and recorded["status"] == "done"
        and recorded["settings"] == settings.model_dump(mode="json")
    )
    if trained:
        return "export" if wanted - set(recorded["outputs"]) else "nothing"  # type: ignore[index]
    if ended:
        return "finish"
    if export_only:
        stands = (
            "no run"
            if recorded is None
            else "an unfinished run"
            if recorded["status"] != "done"
            else "a run trained for other --max-steps or --epochs"
        )
        raise UserError(
            f"nothing to export without training: the folder holds {stands}; run the same command without "
            "--export-only to train it",
            "--export-only",
        )
    return "train"
