"""Report folders and stats tables."""

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.report.files import default_report_dir, write_stats_table


def test_one_run_reports_in_its_folder_several_in_the_first_runs():
    assert default_report_dir(["runs/a"]) == "runs/a/report"
    assert default_report_dir(["runs/a", "runs/b"]) == "runs/a/report-merged"


def test_stats_rows_keep_the_given_schema_even_when_empty(tmp_path):
    schema = pa.schema([("model", pa.string()), ("f1", pa.float64())])
    path = write_stats_table([], tmp_path / "stats_x.parquet", schema)
    assert pq.read_table(path).schema == schema
    write_stats_table([{"model": "m", "f1": None}], path, schema)
    assert pq.read_table(path).to_pylist() == [{"model": "m", "f1": None}]
