"""Reading a SNOMED report's runs: check a run folder, read its manifest, and merge the runs'
conversations, predictions and scores over one case set (RunData), each model coming from one run.
"""

from pathlib import Path
from typing import Any, NamedTuple

from tasks.benchmarks.snomed.cases.loading import case_set_fingerprint, load_case_set
from tasks.benchmarks.snomed.contracts import CONVERSATIONS, PREDICTIONS, SCORES
from tasks.core.preflight import UserError
from tasks.report.runs import check_mergeable, model_name, ordered_models, read_rows
from tasks.report.runs import check_run_folder as check_run_files
from tasks.report.runs import read_manifest as read_run_manifest

RUN_FILES = ("manifest.json", "conversations.parquet", "predictions.parquet", "scores.parquet")


class RunManifest(NamedTuple):
    """What a report needs from a run's manifest.json; config keys beyond models and patient are optional."""

    run_id: str
    run_dir: Path
    case_set_dir: Path
    fingerprint: str | None
    models: list[str]
    patient: str | None
    disclosure: str | None
    patient_prompt_form: str | None
    epochs: int | None
    max_turns: int | None
    case_set: dict[str, Any]


class RunData(NamedTuple):
    """The merged runs of one report: rows of the three run tables, and the case set's gold displays."""

    manifests: list[RunManifest]
    models: list[str]
    conversations: list[dict[str, Any]]
    predictions: list[dict[str, Any]]
    scores: list[dict[str, Any]]
    displays: dict[str, str]
    case_set_found: bool


def check_run_folder(run_dir: Path) -> None:
    """Raise UserError unless `run_dir` holds what a finished SNOMED run writes."""
    check_run_files(run_dir, RUN_FILES, "snomed", "SNOMED")


def read_manifest(run_dir: Path) -> RunManifest:
    """RUN_DIR/manifest.json -> the fields a report needs; a relative case-set dir may be the run's."""
    common = read_run_manifest(run_dir, "cases.parquet")
    patient = common.config.get("patient")
    return RunManifest(
        run_id=common.run_id,
        run_dir=run_dir,
        case_set_dir=common.case_set_dir,
        fingerprint=common.fingerprint,
        models=common.models,
        patient=None if patient is None else model_name(patient),
        disclosure=common.config.get("disclosure"),
        patient_prompt_form=common.config.get("patient_prompt_form"),
        epochs=common.config.get("epochs"),
        max_turns=common.config.get("max_turns"),
        case_set=common.raw.get("case_set") or {},
    )


def _case_displays(manifest: RunManifest) -> dict[str, str] | None:
    """Gold code -> display over the run's case set; None when the case set is not where the manifest says,
    or is no longer the one the run used (its fingerprint changed)."""
    try:
        cases = load_case_set(manifest.case_set_dir)
    except UserError:
        return None
    if case_set_fingerprint(manifest.case_set_dir) != manifest.fingerprint:
        return None
    return {code: display for c in cases for code, display in zip(c.gold_codes, c.gold_displays, strict=True)}


def check_runs(run_dirs: list[Path]) -> tuple[list[RunManifest], list[list[dict[str, Any]]]]:
    """The runs' manifests and predictions; UserError when a folder is not a finished run or the runs do not
    merge (different case sets, or a model in two runs). Cheap: a command checks it before its flow runs."""
    for run_dir in run_dirs:
        check_run_folder(run_dir)
    manifests = [read_manifest(run_dir) for run_dir in run_dirs]
    predictions_by_run = [read_rows(d / "predictions.parquet", PREDICTIONS) for d in run_dirs]
    check_mergeable(manifests, [{row["model"] for row in rows} for rows in predictions_by_run])
    return manifests, predictions_by_run


def load_runs(run_dirs: list[Path]) -> RunData:
    """Read and merge run folders; UserError when a folder is not a run or the runs do not merge."""
    manifests, predictions_by_run = check_runs(run_dirs)
    predictions = [row for rows in predictions_by_run for row in rows]
    if not predictions:
        raise UserError(f"no interviews in {', '.join(map(str, run_dirs))}: nothing to report", "RUN_DIRS...")
    displays = _case_displays(manifests[0])
    return RunData(
        manifests=manifests,
        models=ordered_models(
            {row["model"] for row in predictions}, [n for m in manifests for n in m.models]
        ),
        conversations=[
            row for d in run_dirs for row in read_rows(d / "conversations.parquet", CONVERSATIONS)
        ],
        predictions=predictions,
        scores=[row for d in run_dirs for row in read_rows(d / "scores.parquet", SCORES)],
        displays=displays or {},
        case_set_found=displays is not None,
    )
