"""An exported run as one flat table for pandas and R: one row per sample (ThReadMed-QA: per model, condition,
thread and turn; SNOMED and consultation: per model, case and epoch), as Parquet or CSV.

The columns are `SAMPLES`, the same for every benchmark and both formats; what varies by benchmark is
packed as JSON text (`scores`, `metadata`) or joined into one string (`target`). tasks/export/README.md
lists them.
"""

import json
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa

from tasks.core.files import write_parquet_atomic
from tasks.core.safe_text import write_csv_table
from tasks.data.contracts import Contract, schema
from tasks.export.samples import ExportedRun, ExportSample

FlatFormat = Literal["parquet", "csv"]

SAMPLES = Contract(
    "samples",
    schema(
        ("benchmark", pa.string()),
        ("run_id", pa.string()),
        ("model", pa.string()),  # the model's name in the run
        ("model_id", pa.string()),  # the litellm model string it called
        ("sample_id", pa.string()),
        ("item_id", pa.string()),  # thread or case
        ("turn", pa.int64()),  # ThReadMed-QA only
        ("condition", pa.string()),  # ThReadMed-QA only
        ("epoch", pa.int64()),  # from 0, as in the run tables
        ("status", pa.string()),  # of the answer, as the run recorded it
        ("input", pa.string()),  # the last message the model was first sent (the question or opening)
        ("output", pa.string()),  # its final reply
        ("finish_reason", pa.string()),
        ("target", pa.string()),  # the reference; a list's items joined by " | "
        ("score_name", pa.string()),
        ("score", pa.float64()),  # the headline score, 0-1; null when not given
        ("unscored", pa.string()),  # why `score` is null
        ("explanation", pa.string()),  # the judge's reasons, or how the score was reached
        ("scores", pa.string()),  # JSON object: every score of the sample by name (null: not given)
        ("input_tokens", pa.int64()),  # of the model under test
        ("output_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("other_roles_cost_usd", pa.float64()),  # judge and simulated patient
        ("error", pa.string()),
        ("metadata", pa.string()),  # JSON object: the benchmark's facts of the sample
    ),
    key=("run_id", "model", "sample_id", "epoch"),
    not_null=("benchmark", "status", "score_name"),
)


def sample_row(run: ExportedRun, model: str, model_id: str, sample: ExportSample) -> dict[str, Any]:
    """One SAMPLES row."""
    answer = sample.usage.get("model")
    others = [usage for role, usage in sample.usage.items() if role != "model"]
    target = sample.target if isinstance(sample.target, str) else " | ".join(sample.target)
    return {
        "benchmark": run.benchmark,
        "run_id": run.run_id,
        "model": model,
        "model_id": model_id,
        "sample_id": sample.sample_id,
        "item_id": sample.item_id,
        "turn": sample.turn,
        "condition": sample.condition,
        "epoch": sample.epoch,
        "status": sample.status,
        "input": sample.input[-1].content if sample.input else None,
        "output": sample.output,
        "finish_reason": sample.finish_reason,
        "target": target,
        "score_name": run.score_name,
        "score": sample.score,
        "unscored": sample.unscored,
        "explanation": sample.explanation,
        "scores": json.dumps(sample.scores),
        "input_tokens": answer.input_tokens if answer else None,
        "output_tokens": answer.output_tokens if answer else None,
        "cost_usd": answer.cost_usd if answer else None,
        "other_roles_cost_usd": sum(usage.cost_usd for usage in others),
        "error": sample.error,
        "metadata": json.dumps(sample.metadata, default=str),
    }


def flat_table(run: ExportedRun) -> pa.Table:
    """Every sample of the run as a SAMPLES table, models in the run's order."""
    rows = [
        sample_row(run, role.name, role.model, sample)
        for role in run.models
        for sample in run.samples.get(role.name, [])
    ]
    return pa.Table.from_pylist(rows, schema=SAMPLES.schema)


def flat_file_name(run: ExportedRun, file_format: FlatFormat) -> str:
    return f"{run.benchmark}_{run.run_id}_samples.{file_format}"


def write_flat(run: ExportedRun, out_dir: Path, file_format: FlatFormat) -> Path:
    """The run's SAMPLES table as `<benchmark>_<run id>_samples.<parquet|csv>` under `out_dir` -> its path. In
    the CSV, text cells starting with a formula character get a `'` in front (tasks/core/safe_text.py)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / flat_file_name(run, file_format)
    table = flat_table(run)
    if file_format == "parquet":
        return write_parquet_atomic(path, table)
    return write_csv_table(path, table)
