"""Reading run folders for a report, shared by the benchmarks whose runs come from flows/evaluate_models.py:
the check that a folder is a finished run, the manifest's common fields, the rows of a run table, and the
rule for merging runs (one case set, each model from one run)."""

import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

import pyarrow.parquet as pq

from tasks.core.preflight import UserError
from tasks.core.run_folder import REPORT_FIX, check_run_folder_benchmark
from tasks.data.contracts import Contract


class RunManifest(NamedTuple):
    """A run's manifest.json: the fields every report reads, and the whole `config` for the rest."""

    run_id: str
    run_dir: Path
    case_set_dir: Path
    fingerprint: str | None
    models: list[str]
    config: dict[str, Any]
    raw: dict[str, Any]


class RunIdentity(Protocol):
    """What merging needs of a manifest (a benchmark may keep its own manifest tuple with these fields)."""

    @property
    def run_id(self) -> str: ...
    @property
    def run_dir(self) -> Path: ...
    @property
    def case_set_dir(self) -> Path: ...
    @property
    def fingerprint(self) -> str | None: ...


Run = TypeVar("Run", bound=RunIdentity)


def check_run_folder(run_dir: Path, run_files: Sequence[str], benchmark: str, label: str) -> None:
    """Raise UserError unless `run_dir` is a run of `benchmark` (tasks/core/run_folder.py) holding every file
    of `run_files` (what a finished run writes); `label` names the benchmark in the message."""
    check_run_folder_benchmark(run_dir, benchmark, REPORT_FIX)
    missing = next((name for name in run_files if not (run_dir / name).is_file()), None)
    if missing is not None:
        raise UserError(
            f"{run_dir} is not a finished {label} run (no {missing}): pass a run's --out folder, "
            "or re-run the run to finish it",
            "RUN_DIRS...",
        )


def model_name(spec: str | dict[str, Any]) -> str:
    """A role of the config (a name, or {"name", "model", ...}) -> the name the run tables use."""
    return spec if isinstance(spec, str) else spec.get("name") or spec["model"]


def read_manifest(run_dir: Path, case_file: str) -> RunManifest:
    """RUN_DIR/manifest.json -> its common fields; a relative case-set dir may be the run's (it is when
    `case_file` is found under RUN_DIR/dir and not under dir)."""
    raw = json.loads((run_dir / "manifest.json").read_text())
    config = raw.get("config", {})
    declared = Path(raw["dataset"]["dir"])
    case_set_dir = next((d for d in (declared, run_dir / declared) if (d / case_file).exists()), declared)
    return RunManifest(
        run_id=raw["run_id"],
        run_dir=run_dir,
        case_set_dir=case_set_dir,
        fingerprint=raw["dataset"].get("fingerprint"),
        models=[model_name(spec) for spec in config.get("models", [])],
        config=config,
        raw=raw,
    )


def run_label(manifest: RunIdentity) -> str:
    return f"{manifest.run_id} ({manifest.run_dir})"


def read_run_id(run_dir: Path) -> str:
    """The run id in RUN_DIR/manifest.json (every benchmark's run writes one)."""
    return json.loads((run_dir / "manifest.json").read_text())["run_id"]


def check_each_run_once(runs: Sequence[tuple[str, Path]]) -> None:
    """Raise UserError when one run (its run id, wherever its folder: `a a`, `a ./a/`, a copy of `a`) is
    given twice: merged with itself, its rows would count twice and its intervals narrow for nothing."""
    folders_of: defaultdict[str, list[str]] = defaultdict(list)
    for run_id, run_dir in runs:
        folders_of[run_id].append(str(run_dir.resolve()))
    repeated = {run_id: folders for run_id, folders in folders_of.items() if len(folders) > 1}
    if repeated:
        named = "; ".join(f"{run_id} in {', '.join(folders)}" for run_id, folders in sorted(repeated.items()))
        raise UserError(f"the same run is given more than once ({named}): give each run once", "RUN_DIRS...")


def check_mergeable(manifests: Sequence[RunIdentity], models_by_run: list[set[str]]) -> None:
    """Runs merge only when each is given once, over one case set, and a model name (`models_by_run`: a
    benchmark's unit, such as a model in one condition) comes from one run only. A run given twice is a
    usage error; otherwise the refusal names no option: each folder is a valid run, it is the set of them
    that does not merge."""
    check_one_case_set(manifests)
    check_each_unit_once(manifests, models_by_run)


def check_one_case_set(manifests: Sequence[RunIdentity]) -> None:
    """Raise UserError unless each run is given once and every run evaluated the same case set."""
    check_each_run_once([(m.run_id, m.run_dir) for m in manifests])
    fingerprints = {m.fingerprint or str(m.case_set_dir.resolve()) for m in manifests}
    if len(fingerprints) > 1:
        runs = ", ".join(f"{run_label(m)}: {m.fingerprint or m.case_set_dir}" for m in manifests)
        raise UserError(
            f"these runs use different case sets, so their scores are not comparable ({runs}): "
            "report them separately"
        )


def check_each_unit_once(manifests: Sequence[RunIdentity], models_by_run: list[set[str]]) -> None:
    """Raise UserError when a model name (a benchmark's unit) comes from more than one of the runs."""
    runs_of: defaultdict[str, list[str]] = defaultdict(list)
    for manifest, models in zip(manifests, models_by_run, strict=True):
        for model in models:
            runs_of[model].append(run_label(manifest))
    repeated = {model: runs for model, runs in runs_of.items() if len(runs) > 1}
    if repeated:
        named = "; ".join(f"{model!r} in {', '.join(runs)}" for model, runs in sorted(repeated.items()))
        raise UserError(
            f"a model appears in several runs ({named}): report those runs separately or rename the model"
        )


def read_rows(path: Path, contract: Contract) -> list[dict[str, Any]]:
    """A run table as rows with exactly the contract's columns and types."""
    return pq.read_table(path).select(contract.columns).cast(contract.schema).to_pylist()


def ordered_models(present: set[str], preferred: list[str]) -> list[str]:
    """The models with rows, in the runs' config order first, then any others by name."""
    head = [name for name in dict.fromkeys(preferred) if name in present]
    return head + sorted(present - set(head))


def model_runs(manifests: Sequence[Run], run_id_of: dict[str, str]) -> dict[str, Run]:
    """Model -> the manifest of the run it was evaluated in (`run_id_of`: model -> run id in its rows)."""
    by_id = {m.run_id: m for m in manifests}
    return {model: by_id[run_id] for model, run_id in run_id_of.items() if run_id in by_id}


class PanelRuns(NamedTuple):
    """What runs judged by several judges (a judge panel) must agree on, per run: its units (as for
    check_each_unit_once), the items it graded mapped to what makes them the same answer (call keys), and
    the name of its judge."""

    units: list[set[str]]
    graded: list[dict[Any, Any]]
    judge_names: list[str]


def check_same_graded(
    manifests: Sequence[RunIdentity],
    graders: dict[tuple[str, str], list[int]],
    runs: PanelRuns,
    judged: str,
    items: str,
) -> None:
    """Raise UserError unless every grader (a sample of a judge; `graders` maps it to its runs' indices)
    has each unit from one of its runs and graded the same items; the refusal says the runs were `judged`
    (differently, by other judges...) and that a panel needs the same `items`."""
    graded = []
    for indices in graders.values():
        check_each_unit_once([manifests[i] for i in indices], [runs.units[i] for i in indices])
        graded.append({key: value for i in indices for key, value in runs.graded[i].items()})
    if any(other != graded[0] for other in graded[1:]):
        judges = "; ".join(
            f"{run_label(m)}: {name}" for m, name in zip(manifests, runs.judge_names, strict=True)
        )
        raise UserError(
            f"these runs were judged {judged}, so their scores are not comparable ({judges}): report them "
            f"separately (a judge panel needs every judge to grade the same {items})",
            "RUN_DIRS...",
        )
