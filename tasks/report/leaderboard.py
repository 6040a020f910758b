"""The leaderboard: one table per benchmark and setup, from stored runs (each run's manifest.json, and its
run tables for its status), each row a model with its headline scores and where they came from.

A row's scores are its run's summary (the manifest's `summary`: the score per condition or epoch, and the
cost of every call); its status comes from the run's rows: complete only when they hold every item the run
planned for its model (tasks/report/coverage.py) and no call or job failed. Rows share a table only when
their runs were measured alike: the same benchmark, the same items (dataset or case-set fingerprint, and
sample), the same graders (every role but the models under test, such as the judge or the simulated
patient: model and params as sent, and epoch), the same prompts (the judge's rubric among them, by sha256)
and the same benchmark settings. Runs that differ in any of these go to separate tables, each titled by
what its rows share: no table ranks scores that were not measured alike. What a run did not record (it was
written before the field existed) is shown as unknown, never guessed, and a run missing what decides its
table gets a table of its own.
"""

import json
import re
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from tasks.core.files import write_folder_atomic, write_text_atomic
from tasks.core.preflight import UserError
from tasks.core.provenance import artifact_key
from tasks.core.run_folder import run_folder_benchmark
from tasks.core.safe_text import csv_text, markdown_text, page_text
from tasks.llm.request import canonical_params
from tasks.report.coverage import RunCoverage
from tasks.report.html import render_page
from tasks.report.runs import check_each_run_once
from tasks.report.tables import Table, format_number, table_html, table_markdown

TEMPLATE = Path(__file__).with_name("leaderboard.html")
MARKDOWN_FILE, HTML_FILE = "leaderboard.md", "leaderboard.html"
# Settings that choose which score groups a run has (ThReadMed's conditions, the others' epochs): runs that
# differ in them fill different columns of one table.
GROUP_SETTINGS = frozenset({"conditions", "epochs"})
PROVENANCE = (
    "status",
    "counts",
    "run",
    "date",
    "project version",
    "commit",
    "config sha256",
    "prompts",
    "dataset fingerprint",
    "judge",
)
LONG_HASH = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{28,}\b")


def unknown(what: str) -> str:
    return f"unknown (run written before {what} were recorded)"


class StoredRun(NamedTuple):
    """A finished run as its folder holds it: the benchmark that took the folder (None before
    benchmark.json existed), its manifest, and what its rows lack of the items it planned (unverified until
    they are read)."""

    run_dir: Path
    benchmark: str | None
    manifest: dict[str, Any]
    coverage: RunCoverage = RunCoverage({}, "its rows were not read")


class Row(NamedTuple):
    """One model of one run: its scores by score column, the cost of its calls, and its provenance by
    column of PROVENANCE (full values; tables shorten long hashes)."""

    model: str
    scores: dict[str, float | None]
    cost_usd: float
    provenance: dict[str, str]


class Leaderboard(NamedTuple):
    """The rows measured alike (`setup`), best first by their first score column."""

    benchmark: str
    setup: dict[str, Any]
    rows: list[Row]
    score_columns: list[str]
    score_note: str


def graders(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every role but the models under test, by role: its model and params as sent (canonical_params: a
    `temperature: 0.0` is another run's `0`), and its epoch if it has one. Runs written before the manifest
    recorded what was sent give each role's configured spec."""
    config = manifest.get("config", {})
    sent = manifest.get("sent")
    if sent is None:
        specs = {role: spec for role, spec in config.items() if isinstance(spec, dict) and "model" in spec}
    else:
        specs = {role: next(iter(by_name.values())) for role, by_name in sent.items() if role != "models"}
    roles = {}
    for role, spec in specs.items():
        epoch = (config.get(role) or {}).get("epoch")
        roles[role] = {
            "model": spec["model"],
            "params": canonical_params(spec.get("params") or {}),
            **({} if epoch is None else {"epoch": epoch}),
        }
    return dict(sorted(roles.items()))


def run_setup(run: StoredRun, common_settings: Collection[str]) -> dict[str, Any]:
    """What rows must share to be ranked together (see the module docstring), as JSON values.
    `common_settings`: the settings every benchmark's run config has (the models under test, how calls are
    made, the sample, compared on its own), which are not benchmark settings."""
    manifest, config = run.manifest, run.manifest.get("config", {})
    roles = graders(manifest)
    own = f"unknown (run {manifest['run_id']} recorded none)"  # a table of its own: nothing to match
    prompts = manifest.get("prompts")
    return {
        "benchmark": run.benchmark or "unknown benchmark (run written before benchmark.json)",
        "dataset": manifest.get("dataset", {}).get("fingerprint") or own,
        "sample": config.get("sample"),
        "graders": roles,
        "prompts": own
        if prompts is None
        else {version: p["sha256"] for version, p in sorted(prompts.items())},
        # A prompt file's path is compared through the prompt's sha256.
        "settings": {
            name: value
            for name, value in sorted(config.items())
            if name not in {*common_settings, *GROUP_SETTINGS, *roles} and not name.endswith("_prompt")
        },
    }


def _rubric_text(manifest: dict[str, Any]) -> str:
    if "judge_rubric" not in manifest:
        return f"rubric {unknown('rubric versions')}"
    rubric = manifest["judge_rubric"]
    return "no rubric" if rubric is None else f"rubric {rubric['version']} (sha256 {rubric['sha256']})"


def graders_text(roles: dict[str, dict[str, Any]], manifest: dict[str, Any] | None = None) -> str:
    """The graders as one line, e.g. 'judge openai/gpt-4o {"temperature": 0} epoch 0'; with the manifest, the
    judge's rubric too."""
    parts = []
    for role, spec in roles.items():
        words = [role, spec["model"], json.dumps(spec["params"], sort_keys=True)]
        if role == "judge" and manifest is not None:
            words.append(_rubric_text(manifest))
        if "epoch" in spec:
            words.append(f"epoch {spec['epoch']}")
        parts.append(" ".join(words))
    return "; ".join(parts) if parts else "no judge"


def _sample_text(sample: dict[str, Any] | None) -> str:
    if sample is None:
        return "sample unknown"
    text = f"{sample['split']} split, seed {sample['seed']}"
    if sample.get("quotas"):
        text += ", quotas " + ", ".join(f"{k} {v}" for k, v in sorted(sample["quotas"].items()))
    return text + (f", first {sample['limit']}" if sample.get("limit") else "")


def setup_title(setup: dict[str, Any]) -> str:
    """What the rows of a table share, in one line."""
    prompts = setup["prompts"]
    parts = [
        setup["benchmark"],
        f"dataset {setup['dataset']}",
        _sample_text(setup["sample"]),
        graders_text(setup["graders"]),
        "prompts "
        + (prompts if isinstance(prompts, str) else ", ".join(f"{v} {sha}" for v, sha in prompts.items())),
    ]
    if setup["settings"]:
        parts.append(", ".join(f"{name} {json.dumps(value)}" for name, value in setup["settings"].items()))
    return abbreviate_hashes(" · ".join(parts))


def abbreviate_hashes(text: str) -> str:
    """Hex digests (40 characters or more: commits, sha256) cut to their first 12, as git shows them."""
    return LONG_HASH.sub(r"\1…", text)


def _commit_text(manifest: dict[str, Any]) -> str:
    git = manifest.get("git")
    if git is None:
        return unknown("commits")
    if git.get("commit") is None:
        return "none (not run from a git checkout)"
    return git["commit"] + (" (with uncommitted changes)" if git.get("dirty") else "")


def status_text(run: StoredRun, model: str) -> str:
    """A model's row is complete only when the run's rows hold every item it planned for the model and no
    call or job of the run failed; incomplete says what is missing or failed; unverified says why the rows
    could not be checked."""
    if run.coverage.unverified is not None:
        return f"unverified: {run.coverage.unverified}"
    summary = run.manifest["summary"]
    failed_calls = sum(summary.get("failed_calls", {}).values())
    failed_jobs = len(summary.get("failed_jobs", []))
    missing = run.coverage.missing.get(model, [])
    problems = [f"its rows lack planned items ({'; '.join(missing)})"] if missing else []
    if failed_calls or failed_jobs:
        problems.append(f"{failed_calls} failed calls, {failed_jobs} failed jobs")
    return f"incomplete: {', '.join(problems)}" if problems else "complete"


def counts_text(summary: dict[str, Any], model: str) -> str:
    """The run summary's counts of a model, per group: what each score is over and what it left out (a
    mean of 1 judged turn of 4, the others without a grade, reads so beside the score)."""
    return "; ".join(
        f"{group['group']}: " + ", ".join(f"{label} {count:,}" for label, count in group["counts"].items())
        for group in summary["groups"]
        if group["model"] == model and group["counts"]
    )


def run_provenance(run: StoredRun, model: str) -> dict[str, str]:
    """The provenance columns of a model's row of a run."""
    manifest = run.manifest
    prompts = manifest.get("prompts")
    source = (manifest.get("rejudge") or {}).get("source_run_id")
    return {
        "status": status_text(run, model),
        "counts": counts_text(manifest["summary"], model),
        "run": manifest["run_id"] + (f" (re-judges run {source})" if source else ""),
        "date": manifest.get("written_at") or unknown("dates"),
        "project version": (manifest.get("project") or {}).get("version") or unknown("project versions"),
        "commit": _commit_text(manifest),
        "config sha256": manifest.get("config_sha256") or unknown("config hashes"),
        "prompts": unknown("prompts")
        if prompts is None
        else "; ".join(f"{version} {p['sha256']}" for version, p in sorted(prompts.items())),
        "dataset fingerprint": manifest.get("dataset", {}).get("fingerprint") or unknown("fingerprints"),
        "judge": graders_text(graders(manifest), manifest),
    }


def score_column(summary: dict[str, Any], group: str) -> str:
    """A score column's name: the summary's score and group labels, e.g. 'mean · condition baseline'."""
    return f"{summary.get('score_label', 'mean')} · {summary.get('group_label', 'condition')} {group}"


def all_epochs_column(summary: dict[str, Any]) -> str:
    """The column of a by-epoch run's score over all its epochs, e.g. 'F1 · all epochs'."""
    return f"{summary.get('score_label', 'mean')} · all epochs"


def all_epochs_score(summary: dict[str, Any], model: str, groups: list[dict[str, Any]]) -> float | None:
    """A by-epoch run's score of a model over all its epochs, as the summary pooled it (the report's number).
    A run written before the summary recorded it: its one epoch's score, or None (unknown) over several."""
    if summary.get("overall") is not None:
        return summary["overall"].get(model)
    return groups[0]["score"] if len(groups) == 1 else None


def run_scores(summary: dict[str, Any], model: str, groups: list[dict[str, Any]]) -> dict[str, float | None]:
    """A model's score columns: by-epoch runs first pool their epochs (the column rows rank by), then each
    group (epoch or condition) of the summary."""
    pooled = {all_epochs_column(summary): all_epochs_score(summary, model, groups)}
    by_group = {score_column(summary, group["group"]): group["score"] for group in groups}
    return {**pooled, **by_group} if summary.get("group_label") == "epoch" else by_group


def run_rows(run: StoredRun) -> list[Row]:
    """A run's rows: one per model of its summary, in the summary's order."""
    summary = run.manifest["summary"]
    groups_of: dict[str, list[dict[str, Any]]] = {}
    for group in summary["groups"]:
        groups_of.setdefault(group["model"], []).append(group)
    return [
        Row(
            model=model,
            scores=run_scores(summary, model, groups),
            cost_usd=sum(group["cost_usd"] for group in groups),
            provenance=run_provenance(run, model),
        )
        for model, groups in groups_of.items()
    ]


def _rank_key(columns: list[str]) -> Any:
    def key(row: Row) -> tuple[bool, float, str]:
        first = row.scores.get(columns[0]) if columns else None
        return first is None, -(first or 0.0), row.model

    return key


def leaderboards(runs: Sequence[StoredRun], common_settings: Collection[str]) -> list[Leaderboard]:
    """The runs' rows grouped by setup (never mixed; `common_settings` as for run_setup), by benchmark, then
    in the order the runs were given."""
    grouped: dict[str, tuple[dict[str, Any], list[StoredRun]]] = {}
    for run in runs:
        setup = run_setup(run, common_settings)
        grouped.setdefault(json.dumps(setup, sort_keys=True), (setup, []))[1].append(run)
    boards = []
    for setup, members in grouped.values():
        rows = [row for run in members for row in run_rows(run)]
        columns = list(dict.fromkeys(column for row in rows for column in row.scores))
        notes = dict.fromkeys(run.manifest["summary"].get("score_note", "") for run in members)
        boards.append(
            Leaderboard(
                benchmark=setup["benchmark"],
                setup=setup,
                rows=sorted(rows, key=_rank_key(columns)),
                score_columns=columns,
                score_note=" / ".join(note for note in notes if note),
            )
        )
    order = list(dict.fromkeys(board.benchmark for board in boards))
    return sorted(boards, key=lambda board: order.index(board.benchmark))


def csv_names(boards: Sequence[Leaderboard]) -> list[str]:
    """Each table's CSV file: leaderboard-<benchmark>-<n>.csv, n counting the benchmark's tables."""
    names, count = [], dict.fromkeys((board.benchmark for board in boards), 0)
    for board in boards:
        count[board.benchmark] += 1
        names.append(f"{artifact_key('leaderboard', board.benchmark, str(count[board.benchmark]))}.csv")
    return names


def _shown(column: str, value: str) -> str:
    """A provenance cell for people: hashes cut to 12 characters, a date to the minute."""
    if column == "date":
        try:
            return datetime.fromisoformat(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
        except ValueError:
            return value
    return abbreviate_hashes(value)


def board_table(board: Leaderboard, csv_name: str) -> Table:
    """The board for people: scores to one decimal, cost to 4, long hashes cut to 12 characters."""
    columns = ["model", *board.score_columns, "USD", *PROVENANCE]
    rows = [
        [
            row.model,
            *(format_number(row.scores.get(column)) for column in board.score_columns),
            f"{row.cost_usd:,.4f}",
            *(_shown(name, row.provenance[name]) for name in PROVENANCE),
        ]
        for row in board.rows
    ]
    ranked_by = board.score_columns[0] if board.score_columns else ""
    pooled = (
        f"Ranked by {ranked_by}: the rows of every epoch pooled, as the report scores them (— also for a run "
        "of several epochs written before its summary pooled them). "
        if ranked_by.endswith(" · all epochs")
        else ""
    )
    caption = (
        f"{board.score_note}. {pooled}USD: every call the run made for that model, in any role. All digits: "
        f"{csv_name}."
    )
    return Table(csv_name.removesuffix(".csv"), setup_title(board.setup), columns, rows, caption)


def board_csv(board: Leaderboard) -> str:
    """The board with full values: scores and costs as stored (numbers), whole hashes, and on every row the
    setup its rows share (canonical JSON), so that the file alone says what was compared. Text cells are
    neutralised against formulas (tasks/core/safe_text.py)."""
    setup = json.dumps(board.setup, sort_keys=True)
    rows = [
        [
            row.model,
            *(row.scores.get(column) for column in board.score_columns),
            row.cost_usd,
            *(row.provenance[name] for name in PROVENANCE),
            setup,
        ]
        for row in board.rows
    ]
    return csv_text(["model", *board.score_columns, "cost_usd", *PROVENANCE, "setup"], rows)


INTRODUCTION = (
    "Scores and provenance are read from the runs' manifests; a row's status from its run's tables: "
    "complete only when they hold every item the run planned for the model and no call or job failed; its "
    "counts are the run summary's, per group: what each score is over, and the items it left out. Rows "
    "in one table were measured alike: same benchmark, items (dataset or case-set fingerprint, and sample), "
    "graders (judge or simulated patient, with their params and epoch), prompts (the rubric among them) and "
    "benchmark settings; runs that differ in any of these are in separate tables, never ranked together."
)


def leaderboard_markdown(boards: Sequence[Leaderboard], names: Sequence[str]) -> str:
    lines = ["# Leaderboard", "", INTRODUCTION, ""]
    for benchmark in dict.fromkeys(board.benchmark for board in boards):
        lines += [f"## {markdown_text(benchmark)}", ""]
        lines += [
            table_markdown(board_table(board, name), None)
            for board, name in zip(boards, names, strict=True)
            if board.benchmark == benchmark
        ]
    return "\n".join(lines)


def leaderboard_html(boards: Sequence[Leaderboard], names: Sequence[str]) -> str:
    sections = []
    for benchmark in dict.fromkeys(board.benchmark for board in boards):
        tables = "".join(
            table_html(board_table(board, name), None)
            for board, name in zip(boards, names, strict=True)
            if board.benchmark == benchmark
        )
        sections.append(f"<section><h2>{page_text(benchmark)}</h2>{tables}</section>")
    return render_page(
        {"title": "Leaderboard", "meta": page_text(INTRODUCTION), "tables": "".join(sections)}, TEMPLATE
    )


def read_stored_run(run_dir: Path) -> StoredRun:
    """RUN_DIR's benchmark and manifest; UserError (naming RUN_DIRS...) unless it is a finished run whose
    manifest holds its summary."""
    path = Path(run_dir) / "manifest.json"
    if not path.is_file():
        raise UserError(
            f"{run_dir} is not a finished evaluation run (no manifest.json): pass the --out folder of a "
            "finished evaluate",
            "RUN_DIRS...",
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UserError(f"{path} is not valid JSON ({error})", "RUN_DIRS...") from None
    if "summary" not in manifest or "run_id" not in manifest:
        raise UserError(
            f"{path} holds no run summary (written before manifests recorded one): re-run its evaluate "
            "command with the same --out to record it (no call is made again)",
            "RUN_DIRS...",
        )
    return StoredRun(Path(run_dir), run_folder_benchmark(Path(run_dir)), manifest)


def leaderboard_files(out_dir: Path) -> set[str]:
    """The files a leaderboard folder holds (a new leaderboard replaces them all, stale tables included)."""
    tables = {path.name for path in Path(out_dir).glob("leaderboard-*.csv")}
    return {MARKDOWN_FILE, HTML_FILE, *tables}


def write_leaderboard(
    run_dirs: Sequence[Path],
    out_dir: Path,
    coverage: Callable[[Path, dict[str, Any]], RunCoverage],
    common_settings: Collection[str],
) -> list[Leaderboard]:
    """Run folders -> OUT/leaderboard.md, leaderboard.html and a CSV per table, written as one folder (a
    reader sees the old leaderboard or the new one); returns the tables. `coverage(run_dir, manifest)` reads
    what a run's rows lack (its benchmark's run tables); `common_settings` as for run_setup. UserError for a
    folder that is not a finished run, a run given twice, or an --out holding other files."""
    runs = [read_stored_run(run_dir) for run_dir in run_dirs]
    runs = [run._replace(coverage=coverage(run.run_dir, run.manifest)) for run in runs]
    check_each_run_once([(run.manifest["run_id"], run.run_dir) for run in runs])
    boards = leaderboards(runs, common_settings)
    names = csv_names(boards)

    def write(folder: Path) -> None:
        write_text_atomic(folder / MARKDOWN_FILE, leaderboard_markdown(boards, names))
        write_text_atomic(folder / HTML_FILE, leaderboard_html(boards, names))
        for board, name in zip(boards, names, strict=True):
            write_text_atomic(folder / name, board_csv(board))

    try:
        write_folder_atomic(Path(out_dir), write, leaderboard_files(out_dir))
    except ValueError as error:
        raise UserError(str(error), "--out") from None
    return boards
