"""Meta-tests: the SQL project follows the house style (shared/spec/house-style.md, "SQL")."""

import re

import pytest

from tasks.benchmarks.threadmed.settings import BuildSettings
from tasks.benchmarks.threadmed.warehouse import sql_parameters
from tasks.data import warehouse
from tasks.data.reddit.pseudonym_salt import DEFAULT_SALT
from tests.sql.conftest import CONTRACTS, PROJECT

MODELS = PROJECT.models
AUDITS = PROJECT.audits
MACROS = PROJECT.macros
ALL_SQL = (*MACROS, *MODELS, *AUDITS)
FILES = [sql_file for sql_file in ALL_SQL if not sql_file.generated]
TABLES = set(CONTRACTS)
_LITERAL_OR_COMMENT = re.compile(r"'(?:[^']|'')*'|--[^\n]*")


def code_of(sql_file: warehouse.SqlFile) -> str:
    """The SQL without comments and string literals."""
    return _LITERAL_OR_COMMENT.sub(" ", sql_file.text)


def tables_read(sql_file: warehouse.SqlFile) -> set[str]:
    return set(re.findall(r"\b(?:from|join)\s+([a-z_][a-z0-9_]*)", code_of(sql_file))) & TABLES


def test_every_sql_file_is_named_by_its_header_and_states_its_purpose():
    for sql_file in FILES:
        assert sql_file.file_name == sql_file.path.stem, sql_file.path
        assert sql_file.purpose, sql_file.path
        assert "upstream" in sql_file.fields, sql_file.path


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.name)
def test_models_have_a_grain_a_contract_and_an_upstream(model):
    assert model.fields.get("grain"), model.path
    assert model.contract, model.path
    assert set(model.fields["grain"].replace(",", " ").split()) <= set(model.contract.columns)


@pytest.mark.parametrize("sql_file", (*MODELS, *AUDITS), ids=lambda sql_file: sql_file.name)
def test_upstream_lists_exactly_the_tables_read(sql_file):
    assert tables_read(sql_file) == set(sql_file.upstream)


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.name)
def test_a_model_is_one_select_and_nothing_else(model):
    code = code_of(model).strip()
    assert re.match(r"^(with|select)\b", code), model.path
    assert ";" not in code, model.path
    assert not re.search(r"\b(create|insert|update|delete|drop|alter|copy|attach|pragma|set)\b", code), (
        model.path
    )


@pytest.mark.parametrize("macro", MACROS, ids=lambda macro: macro.name)
def test_a_macro_file_creates_its_macro_and_names_the_macros_it_calls(macro):
    code = code_of(macro)
    assert re.findall(r"create or replace macro (\w+)\(", code) == [macro.name]
    called = {name for name in re.findall(r"\b(\w+)\(", code) if name in {m.name for m in MACROS}} - {
        macro.name
    }
    assert called == set(macro.upstream) - TABLES


def test_audits_are_named_after_the_table_they_check():
    for audit in AUDITS:
        assert warehouse.audit_target(audit) in TABLES, audit.path
        assert warehouse.audit_target(audit) in audit.upstream, audit.path


def test_sql_is_lower_case():
    keywords = (
        "SELECT FROM WHERE JOIN WITH AS AND OR NOT CASE WHEN THEN ELSE END GROUP ORDER BY UNION IS NULL"
    )
    upper_case = re.compile(rf"\b({'|'.join(keywords.split())})\b")
    for sql_file in ALL_SQL:
        assert not upper_case.search(code_of(sql_file)), sql_file.path


def test_no_value_is_pasted_into_sql():
    """Settings reach SQL as `$parameters` only: no templating, and no default value written out."""
    defaults = BuildSettings()
    pasted = [
        str(value)
        for value in (
            defaults.subreddit, DEFAULT_SALT, defaults.start, defaults.end,
            defaults.min_clean_char_share, defaults.train_share, defaults.val_share,
        )
    ]  # fmt: skip
    for sql_file in ALL_SQL:
        assert not re.search(r"\{\{|\{%|%s|\{[a-z_]+\}", sql_file.text), sql_file.path
        assert not any(value in code_of(sql_file) for value in pasted), sql_file.path
        assert not any(f"'{value}'" in sql_file.text for value in pasted), sql_file.path


def test_every_parameter_is_provided_and_every_provided_parameter_is_used():
    provided = set(sql_parameters(BuildSettings(), DEFAULT_SALT))
    used = set().union(*(sql_file.parameters for sql_file in ALL_SQL))
    assert used == provided | {"variant"}


def test_only_variant_models_read_the_variant():
    for sql_file in ALL_SQL:
        assert ("variant" in sql_file.parameters) == bool(sql_file.variant), sql_file.path


def test_seeds_match_their_contracts():
    for path in PROJECT.seeds:
        header = path.read_text(encoding="utf-8").splitlines()[0].split(",")
        assert header == PROJECT.seed_contract(path).columns, path


def test_published_marts_use_the_published_contracts():
    contracts = {model.name: model.contract.name for model in MODELS if model.kind == "marts"}
    assert contracts == {
        "full_threads": "threads",
        "answered_threads": "threads",
        "full_qa_pairs": "qa_pairs",
        "answered_qa_pairs": "qa_pairs",
        "stats_funnel": "stats_funnel",
    }
