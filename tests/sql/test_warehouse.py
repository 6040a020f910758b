"""The runner (tasks/data/warehouse.py): discovery, ordering, parameters, raw views, contracts, audits."""

from pathlib import Path

import duckdb
import pytest

from tasks.benchmarks.threadmed.contracts import THREADS
from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.benchmarks.threadmed.warehouse import WAREHOUSE, sql_parameters
from tasks.data import warehouse
from tasks.data.reddit.contracts import RAW_REJECTS, RAW_SUBMISSIONS
from tests.sql.conftest import CONTRACTS, PROJECT
from tests.sql.rows import write_parquet


def sql_file(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.sql"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_referenced_parameters_skip_literals_and_comments():
    sql = "select $min_words, '$not_me', 'it''s $quoted' -- and $commented\nfrom t where x < $seed"
    assert warehouse.referenced_parameters(sql) == {"min_words", "seed"}


def test_header_fields_may_continue_on_indented_lines(tmp_path):
    path = sql_file(tmp_path, "int_x__y", (
        "-- int_x__y\n-- What it is,\n-- on two lines.\n-- grain: x_id\n-- contract: contracts.THREADS\n"
        "-- upstream: a, b,\n--     c\n-- Why it is so.\n\nselect 1 as x_id\n"
    ))  # fmt: skip
    parsed = warehouse.parse_sql_file(path, "intermediate")
    assert (parsed.name, parsed.purpose, parsed.upstream) == (
        "int_x__y",
        "What it is, on two lines.",
        ("a", "b", "c"),
    )
    assert parsed.fields["grain"] == "x_id"
    assert warehouse.contract_for(parsed, PROJECT.contracts) is THREADS


def test_order_by_upstream_puts_dependencies_first_and_rejects_unknowns_and_cycles(tmp_path):
    def model(name: str, upstream: str) -> warehouse.SqlFile:
        return warehouse.SqlFile(name, "marts", tmp_path / f"{name}.sql", "", "", {"upstream": upstream})

    ordered = warehouse.order_by_upstream(
        [model("c", "a, b"), model("b", "a, raw"), model("a", "raw")], ["raw"]
    )
    assert [m.name for m in ordered] == ["a", "b", "c"]
    with pytest.raises(warehouse.ProjectError, match="unknown upstream nowhere"):
        warehouse.order_by_upstream([model("a", "nowhere")])
    with pytest.raises(warehouse.ProjectError, match="dependency cycle"):
        warehouse.order_by_upstream([model("a", "b"), model("b", "a")])


@pytest.mark.parametrize(
    ("layer", "text", "error"),
    [
        ("staging", "-- stg_other\n-- Wrong name.\n", "not the file's stem"),
        ("staging", "-- stg_x\n-- No fields.\nselect 1\n", "header lacks grain, contract, upstream"),
        (
            "staging",
            "-- stg_x\n-- p\n-- grain: g\n-- contract: contracts.NOPE\n-- upstream: bots\nselect 1\n",
            "NOPE",
        ),
        (
            "staging",
            "-- stg_x\n-- p\n-- grain: g\n-- contract: contracts.THREADS\n-- upstream: m\nselect 1\n",
            "higher",
        ),
    ],
)
def test_load_project_rejects_malformed_models(tmp_path, layer, text, error):
    sql_file(
        tmp_path / "marts" / "threadmed",
        "m",
        "-- m\n-- p\n-- grain: g\n-- contract: contracts.THREADS\n-- upstream: bots\n",
    )
    sql_file(tmp_path / layer / "reddit", "stg_x", text)
    with pytest.raises(warehouse.ProjectError, match=error):
        warehouse.load_project(WAREHOUSE, sql_dir=tmp_path)


def test_a_file_gets_only_the_parameters_it_references(tmp_path):
    model = warehouse.parse_sql_file(sql_file(tmp_path, "m", "-- m\nselect $seed, $salt\n"), "marts")
    assert warehouse.parameters_for(model, {"seed": 1, "salt": "s", "min_words": 5}) == {
        "salt": "s",
        "seed": 1,
    }
    with pytest.raises(warehouse.ProjectError, match="no value for parameter"):
        warehouse.parameters_for(model, {"seed": 1})


def test_raw_views_follow_the_contract_even_without_files(duck, tmp_path):
    (tmp_path / "source=RS").mkdir()
    write_parquet(
        tmp_path / "source=RS" / "part-0.parquet", RAW_SUBMISSIONS, [{"id": "p1", "source_line": 1}]
    )
    raw = PROJECT.raw
    warehouse.create_raw_views(duck, {
        "raw_reddit__submissions": [str(tmp_path / "source=RS" / "*.parquet")],
        "raw_reddit__rejects": [str(tmp_path / "source=none" / "*.parquet")],
    }, raw)  # fmt: skip
    for table, rows in (
        ("raw_reddit__submissions", 1),
        ("raw_reddit__comments", 0),
        ("raw_reddit__rejects", 0),
    ):
        warehouse.check_contract(duck, table, CONTRACTS[table])
        assert warehouse.count_rows(duck, table) == rows
    with pytest.raises(warehouse.ProjectError, match="unknown raw tables"):
        warehouse.create_raw_views(duck, {"raw_reddit__posts": []}, raw)
    with pytest.raises(FileNotFoundError):
        warehouse.create_raw_views(duck, {"raw_reddit__comments": [str(tmp_path / "missing.parquet")]}, raw)


def test_a_table_that_breaks_its_contract_is_refused(duck):
    duck.execute("create table rejects as select 'f' as source_file, 1 as source_line, 'r' as reason")
    with pytest.raises(warehouse.ContractError, match="source_line"):
        warehouse.check_contract(duck, "rejects", RAW_REJECTS)


def test_a_seed_whose_header_differs_from_its_contract_is_refused(duck, tmp_path):
    path = tmp_path / "bots.csv"
    path.write_text("name\nSomeBot\n")
    with pytest.raises(warehouse.ContractError, match=r"bots\.csv: columns \['name'\]"):
        warehouse.load_seeds(duck, [path], PROJECT.contracts)


def test_a_failed_audit_names_itself_and_shows_rows(duck, tmp_path):
    text = "-- t__small\n-- Nothing below $limit.\nselect * from range(10) as r (n) where n < $limit"
    audit = warehouse.parse_sql_file(sql_file(tmp_path, "t__small", text), "audit")
    with pytest.raises(warehouse.AuditError, match=r"audit t__small failed: 3 violating row\(s\)") as error:
        warehouse.run_audits(duck, [audit], {"limit": 3, "seed": 1})
    assert "{'n': 0}" in str(error.value)
    warehouse.run_audits(duck, [audit], {"limit": 0})


def test_a_build_runs_only_the_ancestors_of_the_tables_asked_for():
    parameters = sql_parameters(BuildSettings(), "pepper")
    with duckdb.connect(":memory:") as con:
        counts = warehouse.build(con, {}, parameters, marts=["int_comments__classified"], project=PROJECT)
        tables = {row[0] for row in con.sql("select table_name from duckdb_tables()").fetchall()}
    ancestors = {"stg_reddit__submissions", "stg_reddit__comments", "int_posts__filtered"}
    assert set(counts) == ancestors | {"int_comments__classified"}
    assert tables == set(counts) | {path.stem for path in PROJECT.seeds}
    with pytest.raises(warehouse.ProjectError, match="no model builds nowhere"):
        warehouse.build(duckdb.connect(":memory:"), {}, parameters, marts=["nowhere"], project=PROJECT)


def test_a_model_with_variants_builds_one_table_per_variant():
    tables = {model.name: model.variant for model in PROJECT.models if model.file_name == "threads"}
    assert tables == {"full_threads": "full", "answered_threads": "answered"}
    assert warehouse.parameters_for(PROJECT.ancestors(["answered_threads"])[-1], {"min_questions": 2}) == {
        "variant": "answered"
    }
