"""Load the versioned KB files, validate every entry and every reference between them, index them."""

import functools
from collections.abc import Callable, Iterable
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from tasks.benchmarks.consult.kb.models import (
    AiuType,
    Condition,
    Contraindication,
    Drug,
    DrugClass,
    Interaction,
    Product,
    ProductVariant,
)
from tasks.benchmarks.consult.kb.names import normalise_text

EntryModel = TypeVar("EntryModel", bound=BaseModel)
Built = TypeVar("Built")


class KnowledgeBase(BaseModel, frozen=True):
    """Every entry of one KB version, with lookups. Built by `load_kb`, which has checked all references."""

    version: int
    aiu_types: tuple[AiuType, ...]
    conditions: tuple[Condition, ...]
    drug_classes: tuple[DrugClass, ...]
    drugs: tuple[Drug, ...]
    interactions: tuple[Interaction, ...]
    contraindications: tuple[Contraindication, ...]
    products: tuple[Product, ...] = ()

    @cached_property
    def _conditions_by_id(self) -> dict[str, Condition]:
        return {condition.id: condition for condition in self.conditions}

    @cached_property
    def _conditions_by_code(self) -> dict[str, Condition]:
        return {condition.icd11: condition for condition in self.conditions}

    @cached_property
    def _drugs_by_name(self) -> dict[str, Drug]:
        """Generic names, brands and spellings, normalised, to their drug."""
        index: dict[str, Drug] = {}
        for drug in self.drugs:
            for name in (drug.name, *drug.brands, *drug.spellings):
                index[normalise_text(name)] = drug
        return index

    @cached_property
    def _products_by_name(self) -> dict[str, tuple[Product, ProductVariant | None]]:
        """Product names and brands, normalised, to the product and the variant a variant's brand fixes."""
        index: dict[str, tuple[Product, ProductVariant | None]] = {}
        for product in self.products:
            for name in (product.name, *product.brands):
                index[normalise_text(name)] = (product, None)
            for variant in product.variants:
                for name in variant.brands:
                    index[normalise_text(name)] = (product, variant)
        return index

    @cached_property
    def _aiu_types_by_id(self) -> dict[str, AiuType]:
        return {aiu_type.id: aiu_type for aiu_type in self.aiu_types}

    @cached_property
    def _interactions_by_pair(self) -> dict[frozenset[str], Interaction]:
        return {
            frozenset((item.scope + ":" + item.a, item.scope + ":" + item.b)): item
            for item in self.interactions
        }

    def condition(self, condition_id: str) -> Condition | None:
        return self._conditions_by_id.get(condition_id)

    def condition_by_code(self, icd11: str) -> Condition | None:
        """The condition with exactly this ICD-11 code (case and spaces ignored)."""
        return self._conditions_by_code.get(icd11.strip().upper())

    def drug(self, name: str) -> Drug | None:
        """The drug named by its generic name, a brand or a listed spelling, case and punctuation ignored."""
        return self._drugs_by_name.get(normalise_text(name))

    def product(self, name: str) -> tuple[Product, ProductVariant | None] | None:
        """The combination product named by its name or a brand (case and punctuation ignored), with the
        variant when the brand is sold at one strength only."""
        return self._products_by_name.get(normalise_text(name))

    def aiu_type(self, aiu_id: str) -> AiuType | None:
        return self._aiu_types_by_id.get(aiu_id)

    def aiu_types_for_template(self, template: str) -> tuple[AiuType, ...]:
        """The AIU types a question of this template reveals, in file order."""
        return tuple(aiu_type for aiu_type in self.aiu_types if aiu_type.template == template)

    def interaction(self, first: str, second: str) -> Interaction | None:
        """The interaction between two drugs (any names the KB knows), by drug pair first, then by class
        pair; symmetric. None when either drug is unknown or the pair does not interact."""
        drug_a, drug_b = self.drug(first), self.drug(second)
        if drug_a is None or drug_b is None or drug_a.name == drug_b.name:
            return None
        pairs = self._interactions_by_pair
        by_drug = pairs.get(frozenset(("drug:" + drug_a.name, "drug:" + drug_b.name)))
        return by_drug or pairs.get(frozenset(("class:" + drug_a.drug_class, "class:" + drug_b.drug_class)))


def cached_per_kb(build: Callable[[KnowledgeBase], Built]) -> Callable[[KnowledgeBase], Built]:
    """`build(kb)` computed once per KB object: a KB is keyed by identity, as hashing its entries on every
    call would cost more than the lookups the cache serves."""
    cached = functools.lru_cache(maxsize=8)(lambda key: build(key.kb))

    @functools.wraps(build)
    def once(kb: KnowledgeBase) -> Built:
        return cached(_Identity(kb))

    return once


class _Identity:
    __slots__ = ("kb",)

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb

    def __hash__(self) -> int:
        return id(self.kb)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.kb is self.kb


def data_dir() -> Path:
    return Path(str(resources.files("tasks.benchmarks.consult.kb") / "data"))


def load_kb(version: int = 1, directory: str | None = None) -> KnowledgeBase:
    """Read `<part>_v<version>.yaml` from `directory` (default: the shipped data) into a validated KB,
    cached per (version, folder). Raises ValueError naming the file and the entry of the first problem."""
    return _load_kb(version, str(Path(directory).resolve()) if directory else str(data_dir()))


@functools.cache
def _load_kb(version: int, directory: str) -> KnowledgeBase:
    folder = Path(directory)
    files = {part: f"{part}_v{version}.yaml" for part in _PARTS}
    raw = {part: _read_yaml(folder / name) for part, name in files.items()}
    kb = KnowledgeBase(
        version=version,
        aiu_types=_parse(raw["aiu_types"], "aiu_types", AiuType, files["aiu_types"], "AIU type"),
        conditions=_parse(raw["conditions"], "conditions", Condition, files["conditions"], "condition"),
        drug_classes=_parse(raw["drugs"], "classes", DrugClass, files["drugs"], "drug class"),
        drugs=_parse(raw["drugs"], "drugs", Drug, files["drugs"], "drug"),
        interactions=_parse(
            raw["interactions"], "interactions", Interaction, files["interactions"], "interaction"
        ),
        contraindications=_parse(
            raw["contraindications"], "contraindications", Contraindication, files["contraindications"],
            "contraindication",
        ),
        products=_parse(raw["products"], "products", Product, files["products"], "product"),
    )  # fmt: skip
    _check_references(kb, files)
    return kb


_PARTS = ("aiu_types", "conditions", "drugs", "interactions", "contraindications", "products")


def _read_yaml(path: Path) -> dict:
    if not path.exists():
        raise ValueError(f"{path.name}: file not found in {path.parent}")
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path.name}: not valid YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise ValueError(f"{path.name}: expected a mapping at the top level")
    return document


def _entry_key(item: object, position: int) -> str:
    if isinstance(item, dict):
        if "id" in item or "name" in item:
            return str(item.get("id", item.get("name")))
        if "a" in item and "b" in item:
            return f"{item['a']} + {item['b']}"
        if ("drug" in item or "drug_class" in item) and ("condition" in item or "aiu" in item):
            return (
                f"{item.get('drug') or item.get('drug_class')} / {item.get('condition') or item.get('aiu')}"
            )
    return f"#{position + 1}"


def _parse(
    document: dict, key: str, model: type[EntryModel], file_name: str, label: str
) -> tuple[EntryModel, ...]:
    items = document.get(key)
    if not isinstance(items, list):
        raise ValueError(f"{file_name}: expected a list under '{key}'")
    entries, seen = [], set()
    for position, item in enumerate(items):
        entry_key = _entry_key(item, position)
        try:
            entry = model.model_validate(item)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'entry'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ValueError(f"{file_name}: {label} '{entry_key}': {problems}") from None
        if entry_key in seen:
            raise ValueError(f"{file_name}: {label} '{entry_key}': duplicate entry")
        seen.add(entry_key)
        entries.append(entry)
    return tuple(entries)


def _check_references(kb: KnowledgeBase, files: dict[str, str]) -> None:
    aiu_ids = {aiu_type.id for aiu_type in kb.aiu_types}
    class_ids = {drug_class.id for drug_class in kb.drug_classes}
    drug_names = {drug.name for drug in kb.drugs}
    condition_ids = {condition.id for condition in kb.conditions}

    def require(known: Iterable[str], wanted: str, file_name: str, where: str, what: str) -> None:
        if wanted not in known:
            raise ValueError(f"{file_name}: {where}: {what} '{wanted}'")

    codes: dict[str, str] = {}
    for condition in kb.conditions:
        where, file_name = f"condition '{condition.id}'", files["conditions"]
        if condition.icd11 in codes:
            raise ValueError(f"{file_name}: {where}: ICD-11 code {condition.icd11} already used by "
                             f"'{codes[condition.icd11]}'")  # fmt: skip
        codes[condition.icd11] = condition.id
        for aiu in condition.red_flags:
            require(aiu_ids, aiu, file_name, where, "red_flags refers to unknown AIU type")
        evidence_ids = {item.aiu for item in condition.evidence}
        for aiu in evidence_ids:
            require(aiu_ids, aiu, file_name, where, "evidence refers to unknown AIU type")
        for aiu in condition.mni:
            require(aiu_ids, aiu, file_name, where, "mni refers to unknown AIU type")
            require(
                evidence_ids, aiu, file_name, where, "mni refers to an AIU type missing from its evidence"
            )
        for drug_class in condition.regimen.drug_classes:
            require(class_ids, drug_class, file_name, where, "regimen refers to unknown drug class")
        for option in condition.regimen.first_line:
            require(drug_names, option.drug, file_name, where, "regimen refers to unknown drug")
            drug_class = kb.drug(option.drug).drug_class  # type: ignore[union-attr]
            require(condition.regimen.drug_classes, drug_class, file_name, where,
                    f"first-line drug '{option.drug}' is of a class not in drug_classes:")  # fmt: skip
    for drug in kb.drugs:
        where, file_name = f"drug '{drug.name}'", files["drugs"]
        require(class_ids, drug.drug_class, file_name, where, "drug_class refers to unknown class")
        for drug_class in drug.cross_reactive:
            require(class_ids, drug_class, file_name, where, "cross_reactive refers to unknown class")
        if drug.allergy_class is not None:
            require(class_ids, drug.allergy_class, file_name, where, "allergy_class refers to unknown class")
    stated: dict[tuple[str, frozenset[str]], Interaction] = {}
    for item in kb.interactions:
        where, file_name = f"interaction '{item.a} + {item.b}'", files["interactions"]
        known = drug_names if item.scope == "drug" else class_ids
        for side in (item.a, item.b):
            require(known, side, file_name, where, f"refers to unknown {item.scope}")
        # A pair is symmetric: stated twice (in either order), the lookup would keep one entry silently.
        pair = (item.scope, frozenset((item.a, item.b)))
        if (first := stated.setdefault(pair, item)) is not item:
            raise ValueError(
                f"{file_name}: {where} ({item.severity}, source: {item.source}) restates the pair of "
                f"interaction '{first.a} + {first.b}' ({first.severity}, source: {first.source}): "
                "state each pair once"
            )
    for item in kb.contraindications:
        where, file_name = f"contraindication '{item.key}'", files["contraindications"]
        if item.drug is not None:
            require(drug_names, item.drug, file_name, where, "refers to unknown drug")
        if item.drug_class is not None:
            require(class_ids, item.drug_class, file_name, where, "refers to unknown drug class")
        if item.condition is not None:
            require(condition_ids, item.condition, file_name, where, "refers to unknown condition")
        if item.aiu is not None:
            require(aiu_ids, item.aiu, file_name, where, "refers to unknown AIU type")
    # A product name that is also a drug's or another product's name would resolve to one of them silently.
    taken = {normalise_text(name): f"drug '{drug.name}'" for drug in kb.drugs
             for name in (drug.name, *drug.brands, *drug.spellings)}  # fmt: skip
    for product in kb.products:
        where, file_name = f"product '{product.name}'", files["products"]
        for ingredient in product.ingredients:
            require(drug_names, ingredient, file_name, where, "ingredient refers to unknown drug")
        variant_brands = (brand for variant in product.variants for brand in variant.brands)
        for name in (product.name, *product.brands, *variant_brands):
            if (owner := taken.setdefault(normalise_text(name), where)) != where:
                raise ValueError(f"{file_name}: {where}: name '{name}' is already a name of {owner}")
