"""The flat SAMPLES table of every benchmark's run, round-tripped through Parquet and CSV."""

import csv
import json
from pathlib import Path

import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.registry import BENCHMARKS
from tasks.core.safe_text import original_cell
from tasks.export.flat import SAMPLES, flat_table, write_flat
from tests.tasks.benchmarks.threadmed.test_report import words
from tests.tasks.export.runs import make_runs


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_runs(tmp_path_factory.mktemp("runs"))


@pytest.mark.parametrize("benchmark", ["threadmed", "snomed", "consult"])
def test_parquet_and_csv_read_back_as_written(runs, benchmark, tmp_path) -> None:
    run = BENCHMARKS[benchmark].export(runs[benchmark])
    expected = flat_table(run).to_pylist()
    parquet = pq.read_table(write_flat(run, tmp_path, "parquet"))
    options = pa_csv.ConvertOptions(column_types=SAMPLES.schema, strings_can_be_null=True)
    read = pa_csv.read_csv(write_flat(run, tmp_path, "csv"), convert_options=options)
    assert parquet.schema == SAMPLES.schema
    assert parquet.to_pylist() == expected
    # CSV has no null string apart from the empty one: an empty text reads back as null.
    assert read.to_pylist() == [{k: None if v == "" else v for k, v in row.items()} for row in expected]
    assert len(expected) == sum(len(samples) for samples in run.samples.values())


def test_a_threadmed_row_whole(runs) -> None:
    rows = flat_table(BENCHMARKS["threadmed"].export(runs["threadmed"])).to_pylist()
    row = next(r for r in rows if (r["model"], r["sample_id"]) == ("alpha", "c3/baseline/turn-2"))
    assert row == {
        "benchmark": "threadmed", "run_id": "r1", "model": "alpha", "model_id": "alpha",
        "sample_id": "c3/baseline/turn-2", "item_id": "c3", "turn": 2, "condition": "baseline", "epoch": 0,
        "status": "ok", "input": "question c3 2", "output": " ".join(["word"] * words("alpha", "c3", 2)),
        "finish_reason": None,
        "target": "w w w ", "score_name": "judge", "score": None, "unscored": "unparseable",
        "explanation": "reason c3 2", "scores": json.dumps({"judge": None}), "input_tokens": 0,
        "output_tokens": 0, "cost_usd": 0.003, "other_roles_cost_usd": 0.01, "error": None,
        "metadata": json.dumps({
            "thread_id": "c3", "turn": 2, "condition": "baseline", "epoch": 0, "call_key": None,
            "judge_call_key": None, "judge_parse_status": "unparseable", "judge_model": None,
            "rubric_version": None,
        }),
    }  # fmt: skip


def test_the_csv_neutralises_formulas_in_text_cells_and_keeps_numbers_as_numbers(runs, tmp_path) -> None:
    """The issue's cells: a model named by a formula and answers that start one are written with a quote in
    front (OWASP's rule); a number column is typed, so a negative score stays a number."""
    run = BENCHMARKS["threadmed"].export(runs["threadmed"])
    model = '=HYPERLINK("http://example.com/x","open")'
    first = run.samples[run.models[0].name]
    samples = [
        sample.model_copy(update={"output": "+cmd|' /C calc'!A0", "explanation": "@SUM(A1)", "score": -0.5})
        for sample in first
    ]
    run = run.model_copy(
        update={"models": [run.models[0].model_copy(update={"name": model})], "samples": {model: samples}}
    )
    path = write_flat(run, tmp_path, "csv")
    with path.open(newline="") as file:
        rows = list(csv.reader(file))
    header, body = rows[0], rows[1:]
    cells = [dict(zip(header, row, strict=True)) for row in body]
    assert {(row["model"], row["output"], row["explanation"], row["score"]) for row in cells} == {
        ("'" + model, "'+cmd|' /C calc'!A0", "'@SUM(A1)", "-0.5")
    }
    assert '"\'=HYPERLINK(""http://example.com/x"",""open"")"' in path.read_text()
    assert ",-0.5," in path.read_text()  # a number, unquoted
    text_columns = [field.name for field in SAMPLES.schema if field.type == "string"]
    written = flat_table(run).to_pylist()
    assert [{name: original_cell(row[name]) for name in text_columns} for row in cells] == [
        {name: row[name] or "" for name in text_columns} for row in written
    ]
