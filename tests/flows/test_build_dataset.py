"""build-dataset end to end under Prefect: generated dumps in, the generator's known dataset out."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.settings import PREFECT_RESULTS_LOCAL_STORAGE_PATH, PREFECT_SERVER_DATABASE_CONNECTION_URL

from flows.build_dataset import build_dataset
from tasks.benchmarks.threadmed.contracts import QA_PAIRS, THREADS
from tasks.data.lake import source_key
from tasks.data.reddit.pseudonym_salt import SALT_VARIABLE, read_pseudonym_salt
from tasks.data.reddit.reader import iter_line_blocks
from tasks.synth.generator import generate_dumps
from tests.tasks.data.reddit.test_reader import write_zstd

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
    generated = generate_dumps(
        tmp_path / "generated", posts=1500, seed=4, layout="monthly", others_per_line=2
    )
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


CANARY = "canary-salt-7d1e0c9a"


def files_holding(text: str, *roots: Path) -> list[Path]:
    return [
        p
        for root in roots
        for p in sorted(root.rglob("*"))
        if p.is_file() and text.encode() in p.read_bytes()
    ]


def stored_flow_run(flow_run_id) -> tuple[str, str]:
    """Prefect's record of a flow run and of its task runs, as JSON."""
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(flow_run_id)
        task_runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id]))
        )
    return flow_run.model_dump_json(), "".join(task_run.model_dump_json() for task_run in task_runs)


def test_the_salt_is_written_nowhere_and_changes_only_the_pseudonyms(dumps, tmp_path, monkeypatch):
    submissions, comments = map(str, dumps.files)
    monkeypatch.delenv(SALT_VARIABLE, raising=False)
    default = Path(
        build_dataset([submissions], [comments], str(tmp_path / "default"), str(tmp_path / "lake0"))
    )
    monkeypatch.setenv(SALT_VARIABLE, CANARY)
    state = build_dataset(
        [submissions], [comments], str(tmp_path / "out"), str(tmp_path / "lake"), return_state=True
    )
    out = Path(state.result())

    assert files_holding(CANARY, out, tmp_path / "lake") == []
    assert files_holding("NOT SAFE TO PUBLISH", out) == []
    flow_run, task_runs = stored_flow_run(state.state_details.flow_run_id)
    assert CANARY not in flow_run and CANARY not in task_runs
    database = Path(PREFECT_SERVER_DATABASE_CONNECTION_URL.value().split(":///")[1])
    assert files_holding(CANARY, database.parent, Path(PREFECT_RESULTS_LOCAL_STORAGE_PATH.value())) == []

    secret = read_pseudonym_salt({SALT_VARIABLE: CANARY}).describe()
    assert json.loads((out / "build.json").read_text())["pseudonyms"] == secret
    (manifest,) = (tmp_path / "lake" / "_runs" / "build-dataset").glob("*.json")
    assert {key: json.loads(manifest.read_text())["settings"][key] for key in secret} == secret
    assert (
        json.loads((default / "build.json").read_text())["pseudonyms"] == read_pseudonym_salt({}).describe()
    )
    assert files_holding("NOT SAFE TO PUBLISH", default) == [default / "README.md"]

    for dataset in ("full", "answered"):
        salted = pq.read_table(out / "dataset" / dataset / "qa_pairs.parquet")
        public = pq.read_table(default / "dataset" / dataset / "qa_pairs.parquet")
        assert salted.drop_columns(["physician"]) == public.drop_columns(["physician"])
        pairs = zip(salted["physician"].to_pylist(), public["physician"].to_pylist(), strict=True)
        assert all(mine != theirs for mine, theirs in pairs if mine is not None)


def test_the_build_flow_imports_no_plotting_library_before_it_runs():
    """matplotlib took a third of a second of every `threadmed build`'s start, for the one plot it draws."""
    script = "import sys, flows.build_dataset; print('matplotlib' in sys.modules)"
    imported = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert (imported.returncode, imported.stdout) == (0, "False\n"), imported.stderr
