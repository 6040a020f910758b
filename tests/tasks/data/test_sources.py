"""The declared sources and warehouses: contracts are found in one place, folders exist."""

import pytest

from tasks.benchmarks.registry import BENCHMARKS
from tasks.benchmarks.threadmed.warehouse import WAREHOUSE
from tasks.data.reddit import contracts as reddit_contracts
from tasks.data.sources import REDDIT, BenchmarkWarehouse, SqlFolders
from tasks.data.warehouse import SQL_DIR


def test_a_warehouse_declares_its_own_and_its_sources_contracts_by_name():
    contracts = WAREHOUSE.declared_contracts()
    assert contracts["THREADS"].name == "threads"
    assert contracts["RAW_COMMENTS"] is REDDIT.lake_tables["comments"]


def test_a_contract_declared_twice_is_refused():
    twice = BenchmarkWarehouse(name="twice", contracts=reddit_contracts, sources=(REDDIT,), sql=SqlFolders())
    with pytest.raises(
        ValueError, match=r"^contracts\.RAW_SUBMISSIONS is declared twice \(tasks\.data\.reddit\.contracts\)$"
    ):
        twice.declared_contracts()


def test_every_benchmark_lists_its_warehouse_and_its_sql_folders_exist():
    warehouses = {name: bench.warehouse for name, bench in BENCHMARKS.items() if bench.warehouse is not None}
    assert warehouses == {"threadmed": WAREHOUSE}
    folders = WAREHOUSE.folders
    for folder in (*folders.seeds, *folders.models, *folders.audits):
        assert (SQL_DIR / folder).is_dir(), folder


def test_a_benchmark_reads_its_sources_raw_tables():
    assert [contract.name for contract in WAREHOUSE.raw_contracts] == [
        "raw_reddit__submissions",
        "raw_reddit__comments",
        "raw_reddit__rejects",
    ]
