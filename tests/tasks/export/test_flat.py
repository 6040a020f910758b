"""The flat SAMPLES table of every benchmark's run, round-tripped through Parquet and CSV."""

import json
from pathlib import Path

import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.registry import BENCHMARKS
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
    csv = pa_csv.read_csv(write_flat(run, tmp_path, "csv"), convert_options=options)
    assert parquet.schema == SAMPLES.schema
    assert parquet.to_pylist() == expected
    # CSV has no null string apart from the empty one: an empty text reads back as null.
    assert csv.to_pylist() == [{k: None if v == "" else v for k, v in row.items()} for row in expected]
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
