"""End to end: dumps from the generator, through the ingest and every SQL model, give its known dataset."""

from pathlib import Path

import duckdb
import pytest

from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.benchmarks.threadmed.warehouse import sql_parameters
from tasks.data import warehouse
from tasks.data.reddit.ingest import ingest_dump
from tasks.data.reddit.pseudonym_salt import DEFAULT_SALT
from tasks.data.reddit.records import IngestFilter
from tasks.synth.generator import generate_dumps
from tests.sql.conftest import PROJECT

POSTS = 1_000


@pytest.mark.parametrize("layout", ["subreddit", "monthly"])
def test_build_reproduces_the_generators_truth(tmp_path: Path, layout):
    # Two popular-subreddit lines per line of the subreddit keep the monthly files small here.
    summary = generate_dumps(tmp_path / "dumps", POSTS, seed=5, layout=layout, others_per_line=2)
    settings = BuildSettings()
    keep = IngestFilter(settings.subreddit, settings.start, settings.end)
    for dump in summary.files:
        kind = "submissions" if dump.name.startswith(("RS_", "AskDocs_submissions")) else "comments"
        ingest_dump(dump, kind, tmp_path / "lake", keep)
    raw = tmp_path / "lake" / "raw"
    raw_files = {table.name: sorted(str(p) for p in table.glob("*/*.parquet")) for table in raw.iterdir()}
    with duckdb.connect(":memory:") as con:
        warehouse.build(con, raw_files, sql_parameters(settings, DEFAULT_SALT), project=PROJECT)
        con.execute(f"create table truth as select * from read_parquet('{summary.truth_qa_pairs}')")
        for dataset in ("full", "answered"):
            built = con.sql(
                f"select thread_id, turn, question_id, answer_id from {dataset}_qa_pairs"
            ).fetchall()
            truth = con.sql(
                f"select thread_id, turn, question_id, answer_id from truth where dataset = '{dataset}'"
            ).fetchall()
            assert sorted(built) == sorted(truth), dataset
    assert summary.full_threads > 0 and summary.answered_threads > 0
