"""The patient bench's report: the patients side by side (metrics.json, report.md, scores.csv) and the
table the command prints."""

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from tasks.benchmarks.snomed.oracle.answers import STANCE_RULES_VERSION
from tasks.benchmarks.snomed.patient_bench.contracts import PATIENT_SCORES
from tasks.benchmarks.snomed.patient_bench.scoring import patient_metrics
from tasks.core.files import write_json_atomic, write_text_atomic
from tasks.core.preflight import UserError
from tasks.core.provenance import artifact_key, folder_tag
from tasks.core.safe_text import csv_text
from tasks.core.strict import StrictModel
from tasks.report.files import default_report_dir
from tasks.report.tables import Table, format_number, format_percent, table_markdown

# Row label and metric; lower is better for hallucination and leak.
ROWS = (
    ("disclosure %", "disclosure"),
    ("hallucination %", "hallucination"),
    ("leak %", "leak"),
    ("lay language %", "lay_language"),
    ("mean words", "mean_words"),
    ("consistency %", "consistency"),
    ("faithful % (judge)", "faithful"),
    ("answers", "answers"),
    ("answers not read whole", "unread"),
    ("answers saying both", "mixed"),
    ("answers judged", "judged"),
    ("failed calls", "failed"),
    ("judge replies unparseable", "n_judge_unparseable"),
    ("judge calls failed", "n_judge_failed"),
    ("judge replies cut", "n_judge_cut"),
)
CAPTION = (
    "disclosure: positive questions answered with the record's fact; hallucination: negative questions "
    "answered with a claim instead of 'not sure' or 'no'; leak: answers naming a condition of the record; "
    "lay language: answers without a clinical term; leak and lay language leave out the answers not read "
    "whole (letters of a script other than Latin, naming nothing read); disclosure and hallucination leave "
    "out the answers saying both (a denial or not knowing, and a claim: 'No, but I get a rash'); "
    "consistency: questions with the "
    "same verdicts on every asking; faithful: the judge's, a share of the answers judged (— without a "
    "judge); failed calls: the patient's; answers the judge left ungraded: its last reply unparseable, its "
    "call failed, or its last reply cut at its max_tokens. Rules: "
    "tasks/benchmarks/snomed/patient_bench/scoring.py."
)


class BenchReportSettings(StrictModel):
    """The bench's report has no settings: every number is a share over the run's answers."""


def metrics_by_patient(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each patient's metrics, in the order of the rows (the table's: by patient name)."""
    by_patient: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_patient[row["model"]].append(row)
    return {patient: patient_metrics(patient_rows) for patient, patient_rows in by_patient.items()}


def _cell(key: str, metrics: dict[str, Any]) -> str:
    if key in (
        "answers",
        "unread",
        "mixed",
        "judged",
        "failed",
        "n_judge_unparseable",
        "n_judge_failed",
        "n_judge_cut",
    ):
        return f"{metrics[key]:,}"
    return format_number(metrics[key]) if key == "mean_words" else format_percent(metrics[key])


def bench_table(metrics: dict[str, dict[str, Any]]) -> Table:
    """The patients side by side: one column per patient, one row per metric."""
    rows = [[label, *(_cell(key, m) for m in metrics.values())] for label, key in ROWS]
    columns = ["metric", *metrics]
    return Table("patient-bench", "Patient bench", columns, rows,
                 CAPTION, right_aligned=tuple(columns[1:]))  # fmt: skip


def metrics_csv(metrics: dict[str, dict[str, Any]]) -> str:
    """One row per patient: its name (text, neutralised against formulas), then its metrics (numbers)."""
    fields = list(next(iter(metrics.values()), {}))
    rows = ([patient, *(values.get(field) for field in fields)] for patient, values in metrics.items())
    return csv_text(["patient", *fields], rows)


def _scored_rows(run_dir: Path) -> list[dict[str, Any]]:
    table = pq.read_table(run_dir / f"{PATIENT_SCORES.name}.parquet")
    missing = [name for name in PATIENT_SCORES.columns if name not in table.column_names]
    if missing:
        # Scored by rules that did not yet record these (unread_letters: the leak and lay verdicts of an
        # answer in another script were given as clean); scoring again makes no call.
        raise UserError(
            f"{run_dir} was scored before its answers recorded {', '.join(missing)}: run its "
            "`threadmed snomed patient-eval` command again to score it again (every call is recorded; none "
            "is made again)"
        )
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("stance_rules_version") != STANCE_RULES_VERSION:
        # Scored by a stance rule that read an answer saying both ("No, but I get a rash") by its first part.
        raise UserError(
            f"{run_dir} was scored before answers saying both a denial and a claim were counted apart: run "
            "its `threadmed snomed patient-eval` command again to score it again (every call is recorded; "
            "none is made again)"
        )
    return table.select(PATIENT_SCORES.columns).to_pylist()


@task(name="build-patient-bench-report", cache_policy=NO_CACHE)
def build_bench_report(run_dirs: list[str], out_dir: str, settings: BenchReportSettings) -> str:
    """RUN_DIR/patient_scores.parquet → metrics.json, report.md and scores.csv in `out_dir`."""
    rows = [row for run_dir in run_dirs for row in _scored_rows(Path(run_dir))]
    metrics = metrics_by_patient(rows)
    report_dir = Path(out_dir)
    write_json_atomic(report_dir / "metrics.json", {"patients": metrics, "runs": run_dirs})
    write_text_atomic(
        report_dir / "report.md", f"# Patient bench\n\n{table_markdown(bench_table(metrics), None)}"
    )
    write_text_atomic(report_dir / "scores.csv", metrics_csv(metrics))
    return str(report_dir)


@task(name="publish-patient-bench-report", cache_policy=NO_CACHE)
def publish_bench_report(report_dir: str) -> None:
    """The report's table as a Markdown artifact."""
    metrics = json.loads((Path(report_dir) / "metrics.json").read_text())
    create_markdown_artifact(
        key=artifact_key("patient-bench", Path(report_dir).parent.name, folder_tag(report_dir)),
        markdown=table_markdown(bench_table(metrics["patients"]), None),
        description="Patient simulators side by side",
    )


def bench_report(run_dirs: list[str], out_dir: str | None, settings: Any) -> str:
    report_dir = build_bench_report(
        run_dirs=run_dirs,
        out_dir=out_dir or default_report_dir(run_dirs),
        settings=settings or BenchReportSettings(),
    )
    publish_bench_report(report_dir=report_dir)
    return report_dir
