"""Build a benchmark's warehouse: run its SQL under sql/ into one DuckDB file, layer by layer, with audits.

The project (shared/spec/house-style.md, "SQL"), in the folders each source (tasks/data/sources.py) and
each benchmark's warehouse (declared in the benchmark's folder) name (`staging/reddit/`, `marts/threadmed/`):

- `sql/seeds/<owner>/<table>.csv`: small tables of rules (flair roles, bots, ...), typed by their contract;
- `sql/macros/<macro>.sql`: one `create macro` each (and the session variables it reads), shared, loaded next;
- `sql/<layer>/<owner>/<table>.sql`: one `select` each, built as `create or replace table`;
- `sql/audits/<owner>/<table>__<rule>.sql`: a `select` of the rows that break a rule; it must return none.
  The key, not-null and reference audits are generated from each table's contract (tasks/data/audits.py).

Each SQL file opens with a header comment: its name, its purpose, then one `field: value` line per field.
`upstream:` lists the tables a file reads (for a macro: the macros it calls and the seeds it reads) and
orders the build; models also give `grain:` and `contract:` (a contract of the modules of the warehouse
and its sources, tasks/data/sources.py). A model with `variants: a, b` is built once per variant, as
tables `a_<name>` and `b_<name>`, with the variant as the parameter `$variant`. Settings reach the SQL
only as DuckDB named parameters (`$min_words`); the only text pasted into SQL is table names and file
paths.
"""

import csv
import glob
import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import duckdb
import pyarrow as pa

from tasks.data.audits import contract_audits
from tasks.data.contracts import Contract
from tasks.data.sources import MACRO_FOLDER, BenchmarkWarehouse

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
MODEL_LAYERS = ("staging", "intermediate", "marts")
HEADER_FIELDS = ("grain", "contract", "upstream", "variants")
REQUIRED_MODEL_FIELDS = ("grain", "contract", "upstream")
AUDIT_SAMPLE_ROWS = 5

_DUCKDB_TYPES = {
    pa.string(): "varchar",
    pa.int64(): "bigint",
    pa.bool_(): "boolean",
    pa.float64(): "double",
    pa.timestamp("us", tz="UTC"): "timestamptz",
}
# One pass finds string literals and comments, so that neither `'$5'` nor `-- it's` confuses the other.
_LITERAL_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|--[^\n]*")
_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_FIELD_START = re.compile(r"^([a-z_]+):\s*(.*)$")


class ProjectError(ValueError):
    """The SQL project is malformed: a bad header, an unknown upstream, a dependency cycle."""


class ContractError(ValueError):
    """A built table's columns or types differ from its contract."""


class AuditError(RuntimeError):
    """An audit returned rows: the build broke one of its rules."""


@dataclass(frozen=True)
class SqlFile:
    """One SQL file of the project and its header: a macro, a model or an audit."""

    name: str
    kind: str
    path: Path
    text: str
    purpose: str
    fields: Mapping[str, str] = field(default_factory=dict)
    variant: str | None = None
    generated: bool = False
    contract: Contract | None = None  # a model's, resolved by load_project

    @property
    def upstream(self) -> tuple[str, ...]:
        return _names(self.fields.get("upstream", ""))

    @property
    def variants(self) -> tuple[str, ...]:
        return _names(self.fields.get("variants", ""))

    @property
    def file_name(self) -> str:
        """The name its file's header gives (a variant's table name adds the variant in front)."""
        return self.name.removeprefix(f"{self.variant}_") if self.variant else self.name

    @property
    def parameters(self) -> frozenset[str]:
        return referenced_parameters(self.text)


def _names(value: str) -> tuple[str, ...]:
    return tuple(name for name in re.split(r"[,\s]+", value) if name and name != "(none)")


@dataclass(frozen=True)
class Project:
    """One benchmark's SQL: raw tables, seed files, macros and models in build order, audits.

    Audits are the hand-written ones and those generated from the contracts of the seeds and models.
    """

    raw: tuple[Contract, ...]
    seeds: tuple[Path, ...]
    macros: tuple[SqlFile, ...]
    models: tuple[SqlFile, ...]
    audits: tuple[SqlFile, ...]
    contracts: Mapping[str, Contract]  # the warehouse's, by attribute name (`THREADS`)

    def seed_contract(self, path: Path) -> Contract:
        return seed_contract(path, self.contracts)

    def audits_of(self, tables: Iterable[str]) -> list[SqlFile]:
        """The audits of the given tables (an audit belongs to the table before `__` + rule)."""
        names = set(tables)
        return [audit for audit in self.audits if audit_target(audit) in names]

    @property
    def marts(self) -> list[str]:
        return [model.name for model in self.models if model.kind == "marts"]

    def ancestors(self, tables: Iterable[str]) -> list[SqlFile]:
        """The models that build `tables` (model names): them and every model upstream, in build order."""
        by_name = {model.name: model for model in self.models}
        wanted = list(tables)
        unknown = sorted(set(wanted) - set(by_name))
        if unknown:
            raise ProjectError(f"no model builds {', '.join(unknown)}")
        needed: set[str] = set()
        while wanted:
            name = wanted.pop()
            if name in by_name and name not in needed:
                needed.add(name)
                wanted += by_name[name].upstream
        return [model for model in self.models if model.name in needed]


def referenced_parameters(sql: str) -> frozenset[str]:
    """The `$name` parameters a SQL text uses, outside string literals and comments."""
    return frozenset(_PARAMETER.findall(_LITERAL_OR_COMMENT.sub(" ", sql)))


def parse_sql_file(path: Path, kind: str) -> SqlFile:
    """Read a SQL file and its header: name line, purpose lines, `field: value` lines.

    A field's value may continue on following comment lines indented by four spaces or more.
    """
    text = path.read_text(encoding="utf-8")
    header = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        header.append(line[2:])
    if not header:
        raise ProjectError(f"{path}: no header comment")
    name, purpose, fields, current = header[0].strip(), [], {}, None
    for line in header[1:]:
        match = _FIELD_START.match(line.strip())
        if match and match.group(1) in HEADER_FIELDS:
            current = match.group(1)
            fields[current] = match.group(2)
        elif current and line.startswith("    "):
            fields[current] += " " + line.strip()
        else:
            current = None
            if not fields:
                purpose.append(line.strip())
    return SqlFile(name, kind, path, text, " ".join(purpose).strip(), fields)


def contract_for(model: SqlFile, contracts: Mapping[str, Contract]) -> Contract:
    """The contract a model's header names (`contract: contracts.THREADS`), from the warehouse's."""
    attribute = model.fields.get("contract", "").removeprefix("contracts.")
    found = contracts.get(attribute)
    if found is None:
        raise ProjectError(f"{model.path}: unknown contract {model.fields.get('contract')!r}")
    return found


def seed_contract(path: Path, contracts: Mapping[str, Contract]) -> Contract:
    """The contract of a seed file: the warehouse's contract named after the file."""
    for contract in contracts.values():
        if contract.name == path.stem:
            return contract
    raise ProjectError(f"{path}: no registered contract named {path.stem!r}")


def audit_target(audit: SqlFile) -> str:
    """The table an audit checks: its name up to the last `__` (`full_threads__key_unique`)."""
    return audit.name.rsplit("__", 1)[0]


def order_by_upstream(files: Sequence[SqlFile], sources: Iterable[str] = ()) -> list[SqlFile]:
    """Order files so that each comes after the files it names upstream; other names must be sources."""
    by_name = {sql_file.name: sql_file for sql_file in files}
    known = set(by_name) | set(sources)
    sorter: TopologicalSorter[str] = TopologicalSorter()
    for sql_file in sorted(files, key=lambda f: f.name):
        unknown = [name for name in sql_file.upstream if name not in known]
        if unknown:
            raise ProjectError(f"{sql_file.path}: unknown upstream {', '.join(unknown)}")
        sorter.add(sql_file.name, *(name for name in sql_file.upstream if name in by_name))
    try:
        return [by_name[name] for name in sorter.static_order()]
    except CycleError as error:
        raise ProjectError(f"dependency cycle: {' -> '.join(error.args[1])}") from error


def with_variants(model: SqlFile) -> list[SqlFile]:
    """A model as the tables it builds: itself, or one `<variant>_<name>` table per variant."""
    if not model.variants:
        return [model]
    return [replace(model, name=f"{variant}_{model.name}", variant=variant) for variant in model.variants]


def generated_audits(
    models: Sequence[SqlFile], seeds: Sequence[Path], contracts: Mapping[str, Contract]
) -> list[SqlFile]:
    """The contract audits of every seed and model table; a variant's references resolve to its variant."""
    tables = [(path.stem, seed_contract(path, contracts), path, None) for path in seeds]
    tables += [(model.name, model.contract, model.path, model.variant) for model in models]
    variant_tables = {(model.variant, model.file_name): model.name for model in models if model.variant}
    audits = []
    for table, contract, path, variant in tables:
        resolve = {base: name for (other, base), name in variant_tables.items() if other == variant}
        for audit in contract_audits(table, contract, resolve):
            fields = {"upstream": ", ".join(audit.upstream)}
            audits.append(
                SqlFile(audit.name, "audit", path, audit.sql, audit.purpose, fields, generated=True)
            )
    return audits


def load_project(warehouse: BenchmarkWarehouse, sql_dir: Path = SQL_DIR) -> Project:
    """Discover and check a benchmark's SQL: headers, names, contracts, upstream references, layering."""
    folders = warehouse.folders
    contracts = warehouse.declared_contracts()
    macros = [parse_sql_file(path, "macro") for path in sorted((sql_dir / MACRO_FOLDER).glob("*.sql"))]
    seeds = tuple(path for folder in folders.seeds for path in sorted((sql_dir / folder).glob("*.csv")))
    files = [
        parse_sql_file(path, Path(folder).parts[0])
        for folder in folders.models
        for path in sorted((sql_dir / folder).glob("*.sql"))
    ]
    handwritten = [
        parse_sql_file(path, "audit")
        for folder in folders.audits
        for path in sorted((sql_dir / folder).glob("*.sql"))
    ]
    for sql_file in (*macros, *files, *handwritten):
        if sql_file.name != sql_file.path.stem:
            raise ProjectError(f"{sql_file.path}: header names {sql_file.name!r}, not the file's stem")
    for model in files:
        missing = [name for name in REQUIRED_MODEL_FIELDS if not model.fields.get(name)]
        if model.kind not in MODEL_LAYERS or missing or not model.purpose:
            raise ProjectError(f"{model.path}: header lacks {', '.join(missing) or 'a purpose'} or a layer")
    typed = [replace(model, contract=contract_for(model, contracts)) for model in files]
    models = [table for model in typed for table in with_variants(model)]
    for model in models:
        _check_layering(model, models)
    sources = [*(contract.name for contract in warehouse.raw_contracts), *(path.stem for path in seeds)]
    ordered_models = order_by_upstream(models, sources)
    tables = {*sources, *(model.name for model in models)}
    for audit in handwritten:
        if audit_target(audit) not in tables or not set(audit.upstream) <= tables:
            raise ProjectError(f"{audit.path}: audits an unknown table or reads one")
    audits = (*handwritten, *generated_audits(ordered_models, seeds, contracts))
    return Project(
        warehouse.raw_contracts,
        seeds,
        tuple(order_by_upstream(macros, sources)),
        tuple(ordered_models),
        audits,
        contracts,
    )


def _check_layering(model: SqlFile, models: Sequence[SqlFile]) -> None:
    """A model reads sources or models of its own layer or a lower one, never a higher one."""
    rank = {layer: index for index, layer in enumerate(MODEL_LAYERS)}
    layer_of = {other.name: other.kind for other in models}
    higher = [name for name in model.upstream if rank.get(layer_of.get(name, ""), -1) > rank[model.kind]]
    if higher:
        raise ProjectError(f"{model.path}: reads a higher layer: {', '.join(higher)}")


def parameters_for(sql_file: SqlFile, parameters: Mapping[str, object]) -> dict[str, object]:
    """The parameters a file references, and only those (DuckDB rejects unused named parameters).

    A model variant also gets its variant as `$variant`.
    """
    available = {**parameters, **({"variant": sql_file.variant} if sql_file.variant else {})}
    missing = sorted(sql_file.parameters - set(available))
    if missing:
        raise ProjectError(f"{sql_file.path}: no value for parameter(s) {', '.join(missing)}")
    return {name: available[name] for name in sorted(sql_file.parameters)}


def duckdb_type(data_type: pa.DataType) -> str:
    """The DuckDB column type of a contract's pyarrow type."""
    return _DUCKDB_TYPES[data_type]


def sql_string(value: str) -> str:
    """A SQL string literal, for the file paths the runner interpolates."""
    return "'" + value.replace("'", "''") + "'"


def raw_view_sql(contract: Contract, paths: Sequence[str]) -> str:
    """`create view` over Parquet files with the contract's columns; no files gives an empty view."""
    if not paths:
        columns = [f"cast(null as {duckdb_type(f.type)}) as {f.name}" for f in contract.schema]
        return (
            f"create or replace view {contract.name} as\nselect\n    "
            + ",\n    ".join(columns)
            + "\nwhere false"
        )
    columns = [f"cast({f.name} as {duckdb_type(f.type)}) as {f.name}" for f in contract.schema]
    files = ", ".join(sql_string(str(Path(path).resolve())) for path in paths)
    return (
        f"create or replace view {contract.name} as\nselect\n    "
        + ",\n    ".join(columns)
        + f"\nfrom read_parquet([{files}], union_by_name = true, hive_partitioning = false)"
    )


def seed_table_sql(contract: Contract, path: Path) -> str:
    """`create table` from a seed CSV, typed by its contract."""
    columns = ", ".join(f"{sql_string(f.name)}: {sql_string(duckdb_type(f.type))}" for f in contract.schema)
    return (
        f"create or replace table {contract.name} as\nselect * from read_csv({sql_string(str(path))}, "
        f"header = true, delim = ',', quote = '\"', escape = '\"', columns = {{{columns}}})"
    )


def prepare_connection(con: duckdb.DuckDBPyConnection) -> None:
    """Session settings every build relies on: timestamps are UTC; progress is the flow's to report."""
    con.execute("set TimeZone = 'UTC'")
    con.execute("set enable_progress_bar = false")


def expand_files(patterns: Sequence[str]) -> list[str]:
    """The files named by paths and glob patterns: a pattern may match nothing, a plain path must exist."""
    files = []
    for pattern in patterns:
        if any(character in pattern for character in "*?["):
            files += sorted(glob.glob(pattern))
        elif Path(pattern).is_file():
            files.append(pattern)
        else:
            raise FileNotFoundError(pattern)
    return files


def create_raw_views(
    con: duckdb.DuckDBPyConnection, raw_files: Mapping[str, Sequence[str]], raw: Sequence[Contract]
) -> None:
    """Create the raw views over their Parquet files or globs (a missing entry means no files)."""
    unknown = set(raw_files) - {contract.name for contract in raw}
    if unknown:
        raise ProjectError(f"unknown raw tables: {', '.join(sorted(unknown))}")
    for contract in raw:
        con.execute(raw_view_sql(contract, expand_files(raw_files.get(contract.name, []))))


def load_macros(con: duckdb.DuckDBPyConnection, macros: Iterable[SqlFile]) -> None:
    """Create the macros, callees first (after the seeds: a macro may read one)."""
    for macro in macros:
        con.execute(macro.text)


def load_seeds(
    con: duckdb.DuckDBPyConnection, seeds: Iterable[Path], contracts: Mapping[str, Contract]
) -> None:
    """Load each seed CSV into a table named after it, after checking its header against its contract."""
    for path in seeds:
        contract = seed_contract(path, contracts)
        with path.open(encoding="utf-8", newline="") as handle:
            header = next(csv.reader(handle), [])
        if header != contract.columns:
            raise ContractError(f"{path}: columns {header} differ from the contract's {contract.columns}")
        con.execute(seed_table_sql(contract, path))


def check_contract(con: duckdb.DuckDBPyConnection, table: str, contract: Contract) -> None:
    """Raise ContractError unless the table has exactly the contract's columns, in order, with its types."""
    built = con.sql(f"select * from {table} limit 0").to_arrow_table().schema
    expected = [(f.name, f.type) for f in contract.schema]
    actual = [(f.name, f.type) for f in built]
    if actual != expected:
        differences = [f"{a} != {e}" for a, e in zip(actual, expected, strict=False) if a != e]
        if len(actual) != len(expected):
            differences.append(f"{len(actual)} columns instead of {len(expected)}")
        raise ContractError(f"{table} breaks contracts.{contract.name}: " + "; ".join(differences))


def count_rows(
    con: duckdb.DuckDBPyConnection, relation: str, parameters: Mapping[str, object] | None = None
) -> int:
    """Number of rows of a table name or a parenthesised query."""
    return con.execute(f"select count(*) from {relation}", parameters).fetchall()[0][0]


def run_model(con: duckdb.DuckDBPyConnection, model: SqlFile, parameters: Mapping[str, object]) -> None:
    """Build one model as a table, then check it against its contract."""
    con.execute(f"create or replace table {model.name} as\n{model.text}", parameters_for(model, parameters))
    check_contract(con, model.name, model.contract)


def run_audits(
    con: duckdb.DuckDBPyConnection, audits: Iterable[SqlFile], parameters: Mapping[str, object]
) -> None:
    """Run audits; the first that returns rows raises AuditError with its count and a few of them."""
    for audit in audits:
        values = parameters_for(audit, parameters)
        count = count_rows(con, f"(\n{audit.text}\n)", values)
        if count:
            sample = con.execute(f"select * from (\n{audit.text}\n) limit {AUDIT_SAMPLE_ROWS}", values)
            columns = [column[0] for column in sample.description]
            rows = "\n".join(f"  {dict(zip(columns, row, strict=True))}" for row in sample.fetchall())
            raise AuditError(f"audit {audit.name} failed: {count} violating row(s), e.g.\n{rows}")


def build(
    con: duckdb.DuckDBPyConnection,
    raw_files: Mapping[str, Sequence[str]],
    parameters: Mapping[str, object],
    marts: Collection[str] | None = None,
    *,
    project: Project,
) -> dict[str, int]:
    """Build `marts` (default: every mart) and the models upstream of them into `con`; return row counts.

    The seeds are audited first, then each layer once built; an audit that reads a table this build
    skipped is skipped with it.
    """
    models = project.ancestors(project.marts if marts is None else marts)
    prepare_connection(con)
    create_raw_views(con, raw_files, project.raw)
    load_seeds(con, project.seeds, project.contracts)
    load_macros(con, project.macros)
    built = {*(contract.name for contract in project.raw), *(path.stem for path in project.seeds)}
    run_audits(con, project.audits_of(path.stem for path in project.seeds), parameters)
    for layer in MODEL_LAYERS:
        layer_models = [model for model in models if model.kind == layer]
        for model in layer_models:
            run_model(con, model, parameters)
        built |= {model.name for model in layer_models}
        audits = project.audits_of(model.name for model in layer_models)
        run_audits(con, [audit for audit in audits if set(audit.upstream) <= built], parameters)
    return {model.name: count_rows(con, model.name) for model in models}


def build_database(
    db_path: str,
    raw_files: Mapping[str, Sequence[str]],
    parameters: Mapping[str, object],
    warehouse: BenchmarkWarehouse,
) -> dict[str, int]:
    """Build every model of `warehouse` into the DuckDB file db_path (one writer), auditing each layer;
    return row counts."""
    target = Path(db_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    # Built under a temporary name and renamed when complete: an existing file is always a whole build.
    # A failed earlier attempt may have left its write-ahead log, which DuckDB would replay.
    for leftover in (partial, partial.with_name(partial.name + ".wal")):
        leftover.unlink(missing_ok=True)
    with duckdb.connect(str(partial)) as con:
        counts = build(con, raw_files, parameters, project=load_project(warehouse))
    os.replace(partial, target)
    return counts
