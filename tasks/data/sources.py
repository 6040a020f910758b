"""Where a warehouse's tables come from, declared once: each data source, and what a benchmark's warehouse is.

A source (Reddit now) owns its raw tables, which its ingest writes to the lake, and the SQL that stages
them; a benchmark's warehouse owns the SQL that turns staged sources into its marts, and is declared in
the benchmark's own folder (tasks/benchmarks/threadmed/warehouse.py), listed by its `Benchmark` record.
Each names the module defining its contracts (a model header's `contract: contracts.THREADS` is looked up
in the modules of the warehouse and its sources) and the folders of its SQL under sql/; the macros in
sql/macros/ are shared by all.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

from tasks.data.contracts import Contract
from tasks.data.reddit import contracts as reddit_contracts

MACRO_FOLDER = "macros"


@dataclass(frozen=True)
class SqlFolders:
    """Folders under sql/: seed CSVs, models (the first part of a folder names its layer), audits."""

    seeds: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    audits: tuple[str, ...] = ()


@dataclass(frozen=True)
class Source:
    """A source of raw data: its lake tables (per dump kind), its quarantine table, contracts and SQL."""

    name: str
    contracts: ModuleType
    lake_tables: Mapping[str, Contract]
    rejects: Contract
    sql: SqlFolders

    @property
    def raw_contracts(self) -> tuple[Contract, ...]:
        """The raw tables the warehouse reads as views over the lake's Parquet files."""
        return (*self.lake_tables.values(), self.rejects)


@dataclass(frozen=True)
class BenchmarkWarehouse:
    """The SQL of one benchmark's dataset, the sources it reads, and its contracts."""

    name: str
    contracts: ModuleType
    sources: tuple[Source, ...]
    sql: SqlFolders

    @property
    def folders(self) -> SqlFolders:
        """Its own SQL folders and those of its sources, sources first."""
        parts = (*(source.sql for source in self.sources), self.sql)
        return SqlFolders(
            seeds=tuple(folder for part in parts for folder in part.seeds),
            models=tuple(folder for part in parts for folder in part.models),
            audits=tuple(folder for part in parts for folder in part.audits),
        )

    @property
    def raw_contracts(self) -> tuple[Contract, ...]:
        return tuple(contract for source in self.sources for contract in source.raw_contracts)

    def declared_contracts(self) -> dict[str, Contract]:
        """Every contract of its sources' modules and its own by attribute name (`THREADS`), each declared
        once."""
        found: dict[str, Contract] = {}
        for module in (*(source.contracts for source in self.sources), self.contracts):
            for attribute, value in vars(module).items():
                if isinstance(value, Contract):
                    if attribute in found:
                        raise ValueError(f"contracts.{attribute} is declared twice ({module.__name__})")
                    found[attribute] = value
        return found


REDDIT = Source(
    name="reddit",
    contracts=reddit_contracts,
    lake_tables={"submissions": reddit_contracts.RAW_SUBMISSIONS, "comments": reddit_contracts.RAW_COMMENTS},
    rejects=reddit_contracts.RAW_REJECTS,
    sql=SqlFolders(seeds=("seeds/reddit",), models=("staging/reddit",), audits=("audits/reddit",)),
)
