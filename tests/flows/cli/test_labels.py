"""`threadmed labels sample | simulate | import`, the real command (in this process: no
flow), on a hand-written run."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.threadmed.contracts import LABEL_ITEMS, RATINGS
from tests.flows.cli.terminal import assert_usage_error, error_lines, threadmed_here
from tests.tasks.benchmarks.threadmed.labels.fixtures import N_JUDGED, write_labels_run

HEADER = "item_id,rater,rater_kind,grade,note,rated_at"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_labels_run(tmp_path_factory.mktemp("labels-cli"))


@pytest.fixture(scope="module")
def labels(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A sample of 12 of the run's 27 judged turns."""
    out = tmp_path_factory.mktemp("labels") / "round-1"
    result = threadmed_here(
        "labels", "sample", run_dir, "--n", 12, "--seed", 3, "--out", out, cwd=run_dir.parent
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines()[0].startswith("Sampled 12 judged turns of run run-labels-fixture in ")
    return out


def test_sample_writes_the_folder_and_its_contracts(labels: Path) -> None:
    assert sorted(p.name for p in labels.iterdir()) == ["items.parquet", "rate.html", "sample.json"]
    items = pq.read_table(labels / "items.parquet")
    assert items.schema == LABEL_ITEMS.schema
    assert items["position"].to_pylist() == list(range(12))
    info = json.loads((labels / "sample.json").read_text())
    assert (info["n"], info["requested_n"], info["seed"], sum(info["strata"].values())) == (12, 12, 3, 12)


def test_a_folder_holding_another_sample_is_refused(run_dir: Path, labels: Path) -> None:
    other = threadmed_here(
        "labels", "sample", run_dir, "--n", 12, "--seed", 4, "--out", labels, cwd=run_dir.parent
    )
    assert_usage_error(
        other,
        f"Invalid value for '--out': {labels} already holds another sample (run run-labels-fixture, seed 3, "
        "12 items): pass a new --out folder, or delete this one to start over",
    )


def test_more_than_the_run_holds_is_a_warning_that_gives_them_all(run_dir: Path, tmp_path: Path) -> None:
    result = threadmed_here("labels", "sample", run_dir, "--n", 200, "--out", tmp_path / "all", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.strip() == (
        f"Warning: {run_dir} has {N_JUDGED} judged turns, fewer than --n 200: the sample holds them all"
    )
    assert pq.read_table(tmp_path / "all" / "items.parquet").num_rows == N_JUDGED


def test_a_simulated_and_a_second_rater_are_imported_and_counted(labels: Path, tmp_path: Path) -> None:
    result = threadmed_here(
        "labels", "simulate", labels, "--rater", "sim-a", "--out", tmp_path / "a.csv", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "a.csv").read_text().splitlines()
    assert lines[0] == HEADER and len(lines) == 13
    assert all(
        ",sim-a,simulated," in line and "simulated rater, not a clinician" in line for line in lines[1:]
    )
    (tmp_path / "b.csv").write_text(
        "\n".join([HEADER, *(line.replace(",sim-a,", ",sim-b,") for line in lines[1:6])])
    )
    result = threadmed_here("labels", "import", labels, tmp_path / "a.csv", tmp_path / "b.csv", cwd=tmp_path)
    assert (result.returncode, result.stdout.splitlines()) == (
        0,
        [
            f"Imported 17 ratings into {labels / 'ratings.parquet'}.",
            "  sim-a (simulated): 12 of 12 items",
            "  sim-b (simulated): 5 of 12 items",
            "Items rated by 2 raters or more: 5 of 12.",
        ],
    )
    ratings = pq.read_table(labels / "ratings.parquet")
    assert ratings.schema == RATINGS.schema and set(ratings["rater_kind"].to_pylist()) == {"simulated"}
    (tmp_path / "b.csv").write_text("\n".join([HEADER, lines[1].replace(",sim-a,", ",sim-b,")]))
    replaced = threadmed_here("labels", "import", labels, tmp_path / "b.csv", "--replace", cwd=tmp_path)
    assert replaced.stdout.splitlines()[1:] == [
        "  sim-a (simulated): 12 of 12 items",
        "  sim-b (simulated): 1 of 12 items",
        "Items rated by 2 raters or more: 1 of 12.",
    ]


def test_bad_rows_are_one_line_each_and_nothing_is_written(labels: Path, tmp_path: Path) -> None:
    item_id = pq.read_table(labels / "items.parquet")["item_id"][0].as_py()
    bad = tmp_path / "dr-x.csv"
    bad.write_text(
        f"{HEADER}\n"
        "not-an-item,dr-x,clinician,1,,2026-11-26T04:00:00Z\n"
        f"{item_id},dr-x,clinician,2,,2026-11-26T04:00:00Z\n"
        f"{item_id},dr-x,clinician,1,,2026-11-26T04:00:00Z\n"
        f"{item_id},dr-x,clinician,1,,2026-11-26T04:00:00Z\n"
    )
    before = (labels / "ratings.parquet").read_bytes() if (labels / "ratings.parquet").exists() else None
    result = threadmed_here("labels", "import", labels, bad, cwd=tmp_path)
    assert result.returncode == 2
    assert error_lines(result) == [
        f"Error: {bad}:2: item_id 'not-an-item' is not in this sample: export the CSV again from the "
        "folder's rate.html",
        f"Error: {bad}:3: grade '2' is not one of 0, 0.5, 1: correct it",
        f"Error: {bad}:4: rater 'dr-x' rated item {item_id} twice (also {bad}:3): keep one row",
        f"Error: {bad}:5: rater 'dr-x' rated item {item_id} twice (also {bad}:3): keep one row",
        "Nothing imported: 4 errors.",
    ]
    after = (labels / "ratings.parquet").read_bytes() if (labels / "ratings.parquet").exists() else None
    assert after == before


def test_a_simulated_rater_named_by_a_formula_is_refused_and_writes_nothing(
    labels: Path, tmp_path: Path
) -> None:
    out = tmp_path / "formula.csv"
    assert_usage_error(
        threadmed_here("labels", "simulate", labels, "--rater", "@SUM(A1)", "--out", out, cwd=tmp_path),
        "Invalid value for '--rater': rater '@SUM(A1)' starts with '@', which a spreadsheet runs as a "
        "formula: give the rater an id that starts with a letter or a digit",
    )
    assert not out.exists()
