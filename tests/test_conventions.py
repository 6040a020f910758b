"""Conventions the code review would otherwise have to catch (house-style.md, item 26)."""

import ast
import graphlib
import importlib
import inspect
import itertools
import pkgutil
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pytest
import yaml
from prefect import Flow
from prefect.flows import load_flow_from_entrypoint

import flows
from deployments.serve import project_deployments
from tasks.benchmarks.registry import BENCHMARKS
from tasks.data.warehouse import load_project

ROOT = Path(__file__).resolve().parents[1]
DEPLOYMENTS: list[dict[str, Any]] = yaml.safe_load((ROOT / "prefect.yaml").read_text())["deployments"]
# SQL lives in one folder per source or benchmark: sql/<layer>/<owner>/<table>.sql
SQL_MODELS = sorted(
    p for layer in ("staging", "intermediate", "marts") for p in (ROOT / "sql" / layer).glob("*/*.sql")
)
SQL_AUDITS = sorted((ROOT / "sql" / "audits").glob("*/*.sql"))
WAREHOUSES = [bench.warehouse for bench in BENCHMARKS.values() if bench.warehouse is not None]
SQL_TABLES = {model.name for warehouse in WAREHOUSES for model in load_project(warehouse).models} | {
    p.stem for p in (ROOT / "sql" / "seeds").glob("*/*.csv")
}
DECLARED_CONTRACTS = {name for warehouse in WAREHOUSES for name in warehouse.declared_contracts()}
PROMPTS = sorted((ROOT / "tasks").glob("**/prompts/*.txt"))
PACKAGES = ("tasks", "flows")
BENCHMARK_PACKAGES = tuple(f"tasks.benchmarks.{name}" for name in BENCHMARKS)


def project_flows() -> dict[str, Flow]:
    """Every flow defined in flows/, keyed by the entrypoint a deployment would give it."""
    found = {}
    for module_info in pkgutil.iter_modules(flows.__path__):
        module = importlib.import_module(f"flows.{module_info.name}")
        for name, value in vars(module).items():
            if isinstance(value, Flow) and value.fn.__module__ == module.__name__:
                found[f"flows/{module_info.name}.py:{name}"] = value
    return found


def deployment_id(spec: dict[str, Any]) -> str:
    return f"{spec['entrypoint']} ({spec['name']})"


def test_every_flow_has_a_deployment():
    deployed = {spec["entrypoint"] for spec in DEPLOYMENTS}
    missing = sorted(set(project_flows()) - deployed)
    assert not missing, f"flows without a deployment in prefect.yaml: {missing}"


def test_deployment_names_are_unique_per_flow():
    names = [(spec["entrypoint"], spec["name"]) for spec in DEPLOYMENTS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("spec", DEPLOYMENTS, ids=deployment_id)
def test_deployment_entrypoint_loads_its_flow_with_known_parameters(spec):
    """The entrypoint imports the way a worker imports it, and every preset names a real parameter."""
    flow = load_flow_from_entrypoint(str(ROOT / spec["entrypoint"]), use_placeholder_flow=False)
    assert isinstance(flow, Flow)
    accepted = set(inspect.signature(flow.fn).parameters)
    unknown = set(spec.get("parameters") or {}) - accepted
    assert not unknown, f"{deployment_id(spec)}: parameters {sorted(unknown)} are not in {sorted(accepted)}"


@pytest.mark.parametrize("spec", [s for s in DEPLOYMENTS if s.get("schedules")], ids=deployment_id)
def test_scheduled_deployment_parameters_are_complete_and_valid(spec):
    """Nobody is there to supply a missing parameter when a schedule fires."""
    flow = load_flow_from_entrypoint(str(ROOT / spec["entrypoint"]), use_placeholder_flow=False)
    flow.validate_parameters(spec["parameters"])


def test_serve_entry_point_serves_what_prefect_yaml_deploys():
    served = sorted((d.flow_name, d.name, d.parameters) for d in project_deployments())
    flow_names = {entrypoint: flow.name for entrypoint, flow in project_flows().items()}
    deployed = [(flow_names[s["entrypoint"]], s["name"], s.get("parameters") or {}) for s in DEPLOYMENTS]
    assert served == sorted(deployed)


def sql_header(path: Path) -> str:
    """The leading comment block; its first line must name the file's table or audit."""
    lines = path.read_text().splitlines()
    assert lines[0] == f"-- {path.stem}", f"{path.name}: the first line must be `-- {path.stem}`"
    return "\n".join(itertools.takewhile(lambda line: line.startswith("--"), lines))


@pytest.mark.parametrize("path", SQL_MODELS, ids=lambda p: str(p.relative_to(ROOT)))
def test_sql_model_header_names_its_table_grain_contract_and_upstream(path):
    header = sql_header(path)
    missing = [key for key in ("grain", "contract", "upstream") if not re.search(rf"\b{key}:\s*\S", header)]
    assert not missing, f"{path.name}: the header lacks {missing}"
    contract = re.search(r"\bcontract:\s*contracts\.(\w+)", header)
    assert contract, f"{path.name}: name the contract as contracts.<NAME>"
    assert contract.group(1) in DECLARED_CONTRACTS, f"{path.name}: no such contract"


@pytest.mark.parametrize("path", SQL_AUDITS, ids=lambda p: p.name)
def test_sql_audit_is_named_after_its_table_and_rule(path):
    assert re.search(r"\bupstream:\s*\S", sql_header(path)), f"{path.name}: the header lacks upstream"
    audited = any(path.stem.startswith(f"{table}__") for table in SQL_TABLES)
    assert audited, f"{path.name}: name it <model or seed>__<rule>.sql"


@pytest.mark.parametrize("path", PROMPTS, ids=lambda p: p.name)
def test_prompt_file_names_carry_a_version(path):
    assert re.fullmatch(r"[a-z0-9_]+_v\d+\.txt", path.name), f"{path.name}: name it <name>_v<N>.txt"


def project_modules() -> dict[str, Path]:
    """Every module of the project's packages by its dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def imported_modules(path: Path, known: Collection[str]) -> set[str]:
    """The project modules a file imports anywhere in it: at the top, in a function or under TYPE_CHECKING,
    since each is an edge a refactoring can close into a cycle."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.update({node.module, *(f"{node.module}.{alias.name}" for alias in node.names)})
    return found & set(known)


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported_modules(path, modules) - {name} for name, path in modules.items()}


def is_in_benchmark(module: str) -> bool:
    return (
        module.startswith(tuple(f"{package}." for package in BENCHMARK_PACKAGES))
        or module in BENCHMARK_PACKAGES
    )


def test_shared_modules_import_no_benchmark():
    """What two benchmarks share imports none of them; the registry alone lists them (house-style.md, 3a)."""
    shared = {
        module: sorted(filter(is_in_benchmark, imported))
        for module, imported in import_graph().items()
        if module.startswith("tasks.")
        and not is_in_benchmark(module)
        and module != "tasks.benchmarks.registry"
    }
    assert {module: found for module, found in shared.items() if found} == {}


# The layers, lowest first (house-style.md 3a): a module imports from its own package and from packages of
# lower layers only, so what two benchmarks share never reaches up to one of them and each number has one
# home below every view that shows it.
LAYERS = (
    ("tasks.core", "tasks.synth"),
    ("tasks.data", "tasks.llm"),
    ("tasks.report",),
    ("tasks.export",),
    ("tasks.evals",),
    ("tasks.benchmarks",),
    ("flows",),
)


def layer_package(module: str) -> tuple[int, str] | None:
    """The layer and package of a project module; None for one of no layer (the `tasks` package itself)."""
    for index, packages in enumerate(LAYERS):
        for package in packages:
            if module == package or module.startswith(f"{package}."):
                return index, package
    return None


def test_every_module_has_a_layer():
    assert [name for name in project_modules() if layer_package(name) is None] == ["tasks"]


def test_modules_import_only_their_own_package_and_lower_layers():
    """tasks/report imports nothing of tasks/evals, tasks/evals nothing of tasks/benchmarks, and so on."""
    upward = {}
    for module, imported in import_graph().items():
        place = layer_package(module)
        layer, package = place if place is not None else (0, module)
        found = [
            name
            for name in imported
            if (other := layer_package(name)) is not None and other[1] != package and other[0] >= layer
        ]
        if found:
            upward[module] = sorted(found)
    assert upward == {}


def test_project_modules_import_no_cycle():
    """A cycle makes import order matter and hides which module owns what (house-style.md, item 3a)."""
    graph = import_graph()
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        # graphlib lists a node after each of its predecessors, so backwards each module imports the next.
        pytest.fail(f"import cycle (each imports the next): {' -> '.join(reversed(error.args[1]))}")
