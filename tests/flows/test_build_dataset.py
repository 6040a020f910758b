"""build-dataset end to end under Prefect: generated dumps in, the generator's known dataset out."""

import json
import shutil
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from flows.build_dataset import build_dataset
from tasks.contracts import QA_PAIRS, THREADS
from tasks.lake import source_key
from tasks.reader import iter_line_blocks
from tasks.synth import generate_dumps
from tests.tasks.test_reader import write_zstd

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_harness")]

KEY = ["thread_id", "turn", "question_id", "answer_id"]


def turn_key(row: dict) -> tuple[str, int]:
    return row["thread_id"], row["turn"]


def truth_rows(truth_qa_pairs: Path, dataset: str) -> list[dict]:
    rows = pq.read_table(truth_qa_pairs).to_pylist()
    return sorted(({k: r[k] for k in KEY} for r in rows if r["dataset"] == dataset), key=turn_key)


def built_rows(out: Path, dataset: str) -> list[dict]:
    rows = pq.read_table(out / "dataset" / dataset / "qa_pairs.parquet", columns=KEY).to_pylist()
    return sorted(rows, key=turn_key)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    return generate_dumps(tmp_path_factory.mktemp("dumps"), posts=1500, seed=11)


def test_build_publishes_exactly_the_generators_dataset(dumps, tmp_path):
    submissions, comments = map(str, dumps.files)
    out = Path(build_dataset([submissions], [comments], str(tmp_path / "out"), str(tmp_path / "lake")))

    for dataset in ("full", "answered"):
        assert built_rows(out, dataset) == truth_rows(dumps.truth_qa_pairs, dataset)
        assert pq.read_schema(out / "dataset" / dataset / "threads.parquet") == THREADS.schema
        assert pq.read_schema(out / "dataset" / dataset / "qa_pairs.parquet") == QA_PAIRS.schema
    stats = json.loads((out / "stats.json").read_text())
    assert (stats["full"]["threads"], stats["answered"]["threads"]) == (
        dumps.full_threads,
        dumps.answered_threads,
    )
    funnel = json.loads((out / "funnel.json").read_text())
    passed_on = {row["stage"]: row["count_rows"] for row in funnel if row["reason"] is None}
    assert (passed_on["threads_full"], passed_on["threads_answered"]) == (
        dumps.full_threads,
        dumps.answered_threads,
    )
    lines_read = sum(r["count_rows"] for r in funnel if r["stage"].startswith("ingest") and r["reason"])
    assert lines_read == sum(dumps.records.values())
    assert (out / "README.md").read_text().startswith("---\npretty_name:")
    assert (out / "funnel.png").read_bytes()[:4] == b"\x89PNG"
    with duckdb.connect(str(out / "dataset.duckdb"), read_only=True) as views:
        views.execute("set file_search_path = ?", [str(out)])
        counted = views.execute("select count(*) from answered_threads").fetchall()
    assert counted == [(dumps.answered_threads,)]


def test_same_named_dumps_in_two_folders_are_both_built(dumps, tmp_path):
    submissions, comments = dumps.files
    lines = [line for block in iter_line_blocks(comments) for line in block.lines]
    halves = []
    for year, part in (("2019", lines[: len(lines) // 2]), ("2020", lines[len(lines) // 2 :])):
        (tmp_path / year).mkdir()
        halves.append(str(write_zstd(tmp_path / year / comments.name, b"\n".join(part) + b"\n")))
    out = Path(build_dataset([str(submissions)], halves, str(tmp_path / "out"), str(tmp_path / "lake")))
    for dataset in ("full", "answered"):
        assert built_rows(out, dataset) == truth_rows(dumps.truth_qa_pairs, dataset)


def test_same_inputs_give_the_same_bytes_and_are_not_read_twice(dumps, tmp_path):
    submissions, comments = map(str, dumps.files)
    lake = tmp_path / "lake"
    first = Path(build_dataset([submissions], [comments], str(tmp_path / "a"), str(lake)))
    receipts = sorted(lake.glob("raw/*/*/_ingest.json"))
    written = [receipt.stat().st_mtime_ns for receipt in receipts]
    second = Path(build_dataset([submissions], [comments], str(tmp_path / "b"), str(lake)))
    assert [receipt.stat().st_mtime_ns for receipt in receipts] == written  # skipped: already in the lake
    for name in ("full/threads", "full/qa_pairs", "answered/threads", "answered/qa_pairs"):
        assert (first / f"dataset/{name}.parquet").read_bytes() == (
            second / f"dataset/{name}.parquet"
        ).read_bytes()


def test_a_new_monthly_file_is_ingested_alone_and_published_as_a_new_version(tmp_path):
    generated = generate_dumps(tmp_path / "generated", posts=1500, seed=4, layout="monthly")
    incoming = tmp_path / "monthly"
    incoming.mkdir()
    months = sorted({p.name[3:10] for p in generated.files if p.name[3:7] == "2019"})
    for month in months[:-1]:
        for kind in ("RS", "RC"):
            shutil.copy(generated.files[0].parent / f"{kind}_{month}.zst", incoming)
    patterns = ([str(incoming / "RS_*.zst")], [str(incoming / "RC_*.zst")])
    lake, releases = tmp_path / "lake", tmp_path / "releases"

    first = Path(build_dataset(*patterns, str(releases), str(lake), versioned=True))
    receipts = {p.parent.name: p.stat().st_mtime_ns for p in lake.glob("raw/*/*/_ingest.json")}
    for kind in ("RS", "RC"):
        shutil.copy(generated.files[0].parent / f"{kind}_{months[-1]}.zst", incoming)
    second = Path(build_dataset(*patterns, str(releases), str(lake), versioned=True))

    after = {p.parent.name: p.stat().st_mtime_ns for p in lake.glob("raw/*/*/_ingest.json")}
    assert {name: after[name] for name in receipts} == receipts  # the old months were not read again
    assert sorted(set(after) - set(receipts)) == [
        f"source={source_key(incoming / f'RC_{months[-1]}.zst')}",
        f"source={source_key(incoming / f'RS_{months[-1]}.zst')}",
    ]
    assert first != second and first.parent == second.parent == releases / "versions"
    assert (releases / "latest").resolve() == second.resolve()
    assert (releases / "LATEST").read_text() == f"{second.name}\n"
    assert (
        pq.read_table(first / "dataset/full/threads.parquet").num_rows
        <= pq.read_table(second / "dataset/full/threads.parquet").num_rows
    )
    assert [v["version"] for v in json.loads((releases / "versions.json").read_text())] == [
        first.name,
        second.name,
    ]
