"""The declared sources and warehouses: contracts are found in one place, folders exist."""

from tasks.data.sources import CONTRACT_MODULES, REDDIT, THREADMED, WAREHOUSES, declared_contracts
from tasks.data.warehouse import SQL_DIR


def test_every_contract_is_declared_once_and_resolvable_by_name():
    contracts = declared_contracts()
    assert contracts["THREADS"].name == "threads"
    assert contracts["RAW_COMMENTS"] is REDDIT.lake_tables["comments"]
    assert len({id(module) for module in CONTRACT_MODULES}) == len(CONTRACT_MODULES)


def test_declared_sql_folders_exist():
    for warehouse in WAREHOUSES.values():
        folders = warehouse.folders
        for folder in (*folders.seeds, *folders.models, *folders.audits):
            assert (SQL_DIR / folder).is_dir(), folder


def test_a_benchmark_reads_its_sources_raw_tables():
    assert [contract.name for contract in THREADMED.raw_contracts] == [
        "raw_reddit__submissions",
        "raw_reddit__comments",
        "raw_reddit__rejects",
    ]
