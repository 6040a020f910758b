"""Load the versioned KB files, validate every entry and every reference between them, index them."""

import functools
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
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
    Dosing,
    Drug,
    DrugClass,
    Interaction,
    Product,
    ProductVariant,
    SaltAlias,
    SaltForm,
    UnconvertedSalt,
)
from tasks.benchmarks.consult.kb.names import normalise_text
from tasks.benchmarks.consult.kb.widening import McpPair, load_mcp_pairs
from tasks.core.files import safe_load_yaml

EntryModel = TypeVar("EntryModel", bound=BaseModel)
MCP_SOURCE = "drug-interaction-mcp"
_log = logging.getLogger(__name__)


class InteractionMerge(BaseModel, frozen=True):
    """What merging `drug-interaction-mcp`'s pairs into the KB did, counted in its pairs: added (at least
    one drug pair the KB's rules did not cover), duplicates (every drug pair already covered, by a KB rule,
    which wins, or an earlier pair), unknown (a side names no KB drug or class), left_out (its caution
    pairs). `interactions` counts the drug-pair entries added; all zero when the package is not installed."""

    source: str = MCP_SOURCE
    installed: bool
    added: int = 0
    duplicates: int = 0
    unknown: int = 0
    left_out: int = 0
    interactions: int = 0


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
    dosing: tuple[Dosing, ...] = ()
    mcp_merge: InteractionMerge | None = None  # None: built by hand, not by `load_kb`
    products: tuple[Product, ...] = ()
    salt_forms: tuple[SaltForm, ...] = ()
    salt_aliases: tuple[SaltAlias, ...] = ()
    unconverted_salts: tuple[UnconvertedSalt, ...] = ()

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
    def _longest_drug_name(self) -> int:
        return max((len(name.split()) for name in self._drugs_by_name), default=0)

    def drugs_named_in(self, text: str) -> frozenset[str]:
        """The generic names of the KB drugs that `text` names as whole words (a generic name, brand or
        spelling), in one pass over its words for each name length."""
        words = normalise_text(text).split()
        return frozenset(
            self._drugs_by_name[phrase].name
            for length in range(1, self._longest_drug_name + 1)
            for start in range(len(words) - length + 1)
            if (phrase := " ".join(words[start : start + length])) in self._drugs_by_name
        )

    @cached_property
    def _classes_by_name(self) -> dict[str, DrugClass]:
        return {name: drug_class for drug_class in self.drug_classes for name in class_names(drug_class)}

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

    @cached_property
    def _dosing_by_drug(self) -> dict[str, Dosing]:
        return {entry.drug: entry for entry in self.dosing}

    @cached_property
    def _salt_forms_by_pair(self) -> dict[tuple[str, str], SaltForm]:
        return {(form.drug, form.salt): form for form in self.salt_forms}

    @cached_property
    def _salts_by_alias(self) -> dict[tuple[str, ...], tuple[str, ...]]:
        return {tuple(item.alias.split()): tuple(item.salt.split()) for item in self.salt_aliases}

    @cached_property
    def salt_words(self) -> tuple[str, ...]:
        """Every salt and ester word or phrase the salt table knows (its salts, their aliases, the salts it
        converts for no drug), normalised, the longest first: a pattern built from them in this order takes
        "sodium phosphate" whole before "sodium"."""
        words = {
            *(form.salt for form in self.salt_forms), *(item.alias for item in self.salt_aliases),
            *(item.salt for item in self.salt_aliases), *(item.salt for item in self.unconverted_salts),
        }  # fmt: skip
        return tuple(sorted(words, key=lambda phrase: (-len(phrase.split()), -len(phrase), phrase)))

    def canonical_salt(self, written: str) -> str:
        """The salt as the salt table spells it: case, punctuation and spacing normalised, and each alias
        ("HCl", "sulphate", "besylate", "ethyl succinate") replaced by its salt, the longest alias first."""
        words, aliases = normalise_text(written).split(), self._salts_by_alias
        longest = max(map(len, aliases), default=0)
        canonical: list[str] = []
        position = 0
        while position < len(words):
            for size in range(min(longest, len(words) - position), 0, -1):
                if (salt := aliases.get(tuple(words[position : position + size]))) is not None:
                    canonical += salt
                    position += size
                    break
            else:
                canonical.append(words[position])
                position += 1
        return " ".join(canonical)

    def salt_form(self, drug: str, salt: str) -> SaltForm | None:
        """How a dose of `drug` (any name the KB knows it by) written with `salt` (its salt and ester words as
        written, "sodium", "hydrogen sulphate", "HCl": see `canonical_salt`) converts to the drug's KB dose
        basis; None when the drug is unknown or the table has no factor for that salt of it, so that such a
        dose is unverified, never read as the basis."""
        found = self.drug(drug)
        if found is None:
            return None
        return self._salt_forms_by_pair.get((found.name, self.canonical_salt(salt)))

    def dosing_of(self, generic: str) -> Dosing | None:
        """The dose facts of a KB drug (by generic name), or None when the KB has none."""
        return self._dosing_by_drug.get(generic)

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

    def drug_class_named(self, name: str) -> DrugClass | None:
        """The class named by its id, its title or one of its terms, each also in the singular, case and
        punctuation ignored ("NSAID", "penicillin", "sulfa")."""
        return self._classes_by_name.get(normalise_text(name))

    def interaction(self, first: str, second: str) -> Interaction | None:
        """The interaction between two drugs (any names the KB knows); see `interaction_between`. None when
        either drug is unknown or the pair does not interact."""
        drug_a, drug_b = self.drug(first), self.drug(second)
        if drug_a is None or drug_b is None:
            return None
        return self.interaction_between(drug_a, drug_b)

    def interaction_between(self, first: Drug, second: Drug) -> Interaction | None:
        """The interaction of two different drugs, symmetric: the most severe of their drug pair's and the
        pairs of any of their classes' (`Drug.all_classes`), the drug pair's on a tie. A moderate drug pair
        never hides a severe class pair (it was returned alone, so the critic called the pair moderate)."""
        if first.name == second.name:
            return None
        pairs = self._interactions_by_pair
        keys = [frozenset(("drug:" + first.name, "drug:" + second.name))]
        keys += [
            frozenset(("class:" + class_a, "class:" + class_b))
            for class_a in first.all_classes
            for class_b in second.all_classes
        ]
        found = [pairs[key] for key in keys if key in pairs]
        return min(found, key=lambda item: item.severity != "severe", default=None)


def class_names(drug_class: DrugClass) -> Iterator[str]:
    """The normalised names of a class: id, title and terms, and each without a final "s"."""
    for name in (drug_class.id, drug_class.title, *drug_class.terms):
        text = normalise_text(name)
        yield text
        if text.endswith("s"):
            yield text[:-1]


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
        dosing=_parse(raw["dosing"], "dosing", Dosing, files["dosing"], "dosing"),
        products=_parse(raw["products"], "products", Product, files["products"], "product"),
        salt_forms=_parse(raw["salts"], "salts", SaltForm, files["salts"], "salt form"),
        salt_aliases=_parse(raw["salts"], "aliases", SaltAlias, files["salts"], "salt alias"),
        unconverted_salts=_parse(
            raw["salts"], "unconverted", UnconvertedSalt, files["salts"], "unconverted salt"
        ),
    )  # fmt: skip
    _check_references(kb, files)
    _check_salts(kb, files["salts"])
    return _with_mcp_interactions(kb)


_PARTS = (
    "aiu_types", "conditions", "drugs", "interactions", "contraindications", "dosing", "products", "salts",
)  # fmt: skip
# Strengths convert a count of tablets (puffs, ml) to the drug's dose unit: that unit must be a mass.
_MASS_UNITS = frozenset({"microgram", "mg", "g"})


def _with_mcp_interactions(kb: KnowledgeBase) -> KnowledgeBase:
    """The KB with `drug-interaction-mcp`'s pairs merged in when the package is installed."""
    try:
        pairs = load_mcp_pairs()
    except ModuleNotFoundError as error:
        _log.warning("%s: the KB holds its own interactions only", error)
        return KnowledgeBase(**{**dict(kb), "mcp_merge": InteractionMerge(installed=False)})
    added, merge = merge_mcp_interactions(kb, pairs)
    return KnowledgeBase(**{**dict(kb), "interactions": kb.interactions + added, "mcp_merge": merge})


def merge_mcp_interactions(
    kb: KnowledgeBase, pairs: Sequence[McpPair]
) -> tuple[tuple[Interaction, ...], InteractionMerge]:
    """`drug-interaction-mcp`'s danger and warning pairs as drug-pair interactions between KB drugs
    (`_named_drugs`), leaving out every drug pair the KB's own rules already cover; with the counts."""
    added: dict[frozenset[str], Interaction] = {}
    counts = {"added": 0, "duplicates": 0, "unknown": 0, "left_out": 0}
    for pair in pairs:
        if pair.severity is None:
            counts["left_out"] += 1
            continue
        side_a, side_b = _named_drugs(kb, pair.names_a), _named_drugs(kb, pair.names_b)
        if not side_a or not side_b:
            counts["unknown"] += 1
            continue
        new = {
            frozenset((a.name, b.name)): Interaction(
                a=a.name, b=b.name, scope="drug", severity=pair.severity, effect=pair.effect,
                source=pair.source,
            )
            for a in side_a
            for b in side_b
            if frozenset((a.name, b.name)) not in added and kb.interaction_between(a, b) is None
        }  # fmt: skip
        counts["added" if new else "duplicates"] += 1
        added |= new
    merge = InteractionMerge(installed=True, interactions=len(added), **counts)
    return tuple(added.values()), merge


def _named_drugs(kb: KnowledgeBase, names: Sequence[str]) -> list[Drug]:
    """The KB drugs a side's names stand for; a side naming none stands for a class only when its first name
    is one ("beta blocker, metoprolol, ..."): class words further on are loose ("verapamil, diltiazem,
    calcium channel blocker" means the rate-limiting ones, not amlodipine)."""
    drugs = {drug.name: drug for name in names if (drug := kb.drug(name)) is not None}
    if drugs or (drug_class := kb.drug_class_named(names[0])) is None:
        return list(drugs.values())
    return [drug for drug in kb.drugs if drug_class.id in drug.all_classes]


def _read_yaml(path: Path) -> dict:
    if not path.exists():
        raise ValueError(f"{path.name}: file not found in {path.parent}")
    try:
        document = safe_load_yaml(path.read_text(encoding="utf-8"))
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
        if "drug" in item and "salt" in item:
            return f"{item['drug']} / {item['salt']}"
        if "alias" in item:
            return str(item["alias"])
        if "drug" in item or "salt" in item:
            return str(item.get("drug", item.get("salt")))
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


def _check_class_names(kb: KnowledgeBase, file_name: str) -> None:
    """A class name (`class_names`) belongs to one class, and a term names no drug (the drug would win)."""
    owners: dict[str, str] = {}
    for drug_class in kb.drug_classes:
        for name in dict.fromkeys(class_names(drug_class)):
            if owners.setdefault(name, drug_class.id) != drug_class.id:
                raise ValueError(f"{file_name}: drug class '{drug_class.id}': name '{name}' already names "
                                 f"class '{owners[name]}'")  # fmt: skip
        for term in drug_class.terms:
            if (drug := kb.drug(term)) is not None:
                raise ValueError(f"{file_name}: drug class '{drug_class.id}': term '{term}' names the drug "
                                 f"'{drug.name}'")  # fmt: skip


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
    _check_class_names(kb, files["drugs"])
    for drug in kb.drugs:
        where, file_name = f"drug '{drug.name}'", files["drugs"]
        require(class_ids, drug.drug_class, file_name, where, "drug_class refers to unknown class")
        for drug_class in drug.classes:
            require(class_ids, drug_class, file_name, where, "classes refers to unknown class")
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
    for entry in kb.dosing:
        where, file_name = f"dosing '{entry.drug}'", files["dosing"]
        require(drug_names, entry.drug, file_name, where, "refers to unknown drug")
        unit = kb.drug(entry.drug).usual_dose.unit  # type: ignore[union-attr]
        if entry.strengths and unit not in _MASS_UNITS:
            raise ValueError(f"{file_name}: {where}: strengths for a drug dosed in '{unit}', not a mass")
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


def _check_salts(kb: KnowledgeBase, file_name: str) -> None:
    """Each salt form names a KB drug by its generic name, in the table's own spelling (no alias); a drug
    dosed by a count (applications, sachets) converts nothing (factor 1); a drug has one basis salt at most.
    An alias leads to a salt the table knows. An unconverted salt is converted for no drug. No salt word is a
    word of a generic name: a resolver stripping it would break that name ("clavulanic acid")."""
    drugs = {drug.name: drug for drug in kb.drugs}
    converted = {form.salt: form for form in kb.salt_forms}
    known = {*converted, *(item.salt for item in kb.unconverted_salts)}
    bases: dict[str, str] = {}
    for form in kb.salt_forms:
        where = f"{file_name}: salt form '{form.drug} / {form.salt}'"
        if (drug := drugs.get(form.drug)) is None:
            raise ValueError(f"{where}: refers to unknown drug '{form.drug}'")
        if (canonical := kb.canonical_salt(form.salt)) != form.salt:
            raise ValueError(f"{where}: write the salt as '{canonical}' (the aliases' spelling)")
        unit = drug.usual_dose.unit
        if form.factor != 1 and unit.split("/")[0] not in _MASS_UNITS:
            raise ValueError(
                f"{where}: factor {form.factor:g} for a drug dosed in '{unit}', not a mass (only 1)"
            )
        if form.basis and (first := bases.setdefault(form.drug, form.salt)) != form.salt:
            raise ValueError(f"{where}: a second basis salt of the drug (the first: '{first}')")
    for alias in kb.salt_aliases:
        where = f"{file_name}: salt alias '{alias.alias}'"
        if alias.salt not in known and alias.salt not in {word for salt in known for word in salt.split()}:
            raise ValueError(f"{where}: refers to unknown salt '{alias.salt}'")
        if alias.alias in known:
            raise ValueError(f"{where}: is a salt of the table itself")
    for item in kb.unconverted_salts:
        if (canonical := kb.canonical_salt(item.salt)) != item.salt:
            raise ValueError(f"{file_name}: unconverted salt '{item.salt}': write it as '{canonical}'")
        if (form := converted.get(item.salt)) is not None:
            raise ValueError(f"{file_name}: unconverted salt '{item.salt}': salt form "
                             f"'{form.drug} / {form.salt}' converts it")  # fmt: skip
    generic_words = {word: drug.name for drug in kb.drugs for word in normalise_text(drug.name).split()}
    for phrase in kb.salt_words:
        for word in phrase.split():
            if word in generic_words:
                raise ValueError(f"{file_name}: salt '{phrase}': '{word}' is a word of the drug name "
                                 f"'{generic_words[word]}'")  # fmt: skip
