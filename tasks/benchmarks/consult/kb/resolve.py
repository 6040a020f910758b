"""Resolve what an agent writes for a drug to the KB drugs it contains (its ingredients).

Stages, first hit wins; the text is tried as written (case, accents and punctuation ignored), then without
strength and form words ("500 mg tablets"), then without salt and ester words ("naproxen sodium"):
- combination: a product of `products_v<N>.yaml` by name or brand ("co-codamol", "Augmentin"), each of its
  ingredients with its amount per tablet when the product fixes it: by a brand sold at one strength
  (Solpadol), by the strengths written in the text ("30/500", or the BNF's total "co-amoxiclav 625 mg"), or
  because every variant has the same amount (co-codamol's paracetamol 500 mg).
- generic, brand, spelling: a KB drug's name, brand or listed spelling; salt: the same once salt and ester
  words are gone.
- library: `drug-named-entity-recognition` (MIT) names the drugs in the text by canonical names, and each
  canonical name maps to the KB drug whose own name, spelling or brand the library gives that canonical
  name ("Albuterol" -> salbutamol); a combination canonical name ("Co-codamol",
  "Trimethoprim/sulfamethoxazole") maps to its ingredients. A name it finds that maps to no KB drug is
  `missing`: the KB cannot check it. Its dictionary takes seconds to load, so it loads on first use, once.
- fuzzy: the best rapidfuzz match above the threshold among the KB's drug and product names (misspellings).
"""

import functools
import importlib
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from tasks.benchmarks.consult.kb.loading import KnowledgeBase, cached_per_kb
from tasks.benchmarks.consult.kb.models import Drug, Product, ProductVariant
from tasks.benchmarks.consult.kb.names import DEFAULT_THRESHOLD, best_fuzzy_match, normalise_text

ResolutionMethod = Literal[
    "combination", "generic", "brand", "spelling", "salt", "library", "fuzzy", "unresolved"
]
# Strength and form words a plan may put in the drug field ("amoxicillin 500 mg capsules"), on normalised
# text (so "30/500" reads "30 500").
_DOSE_WORDS = re.compile(
    r"\b(\d+(\.\d+)?\s*(mg|g|mcg|microgram|micrograms|ml|%)?|tablets?|capsules?|caps|tabs|oral|"
    r"suspension|solution|liquid|cream|ointment|gel|spray|inhaler|pessary|syrup)\b"
)
# Salts and esters a drug is sold as; the active drug is the rest of the name (BNF monograph titles).
_SALT_WORDS = re.compile(
    r"\b(sodium|disodium|potassium|calcium|magnesium|hydrochloride|hcl|hydrobromide|sulfate|sulphate|"
    r"phosphate|tartrate|bitartrate|citrate|maleate|fumarate|succinate|besilate|besylate|mesilate|"
    r"mesylate|acetate|dipropionate|propionate|furoate|valerate|butyrate|hyclate|monohydrate|dihydrate|"
    r"trihydrate|hemihydrate|sesquihydrate|lysine|trometamol)\b"
)
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


class Ingredient(BaseModel, frozen=True, extra="forbid"):
    """A KB drug in what was written; `strength` per tablet or capsule in `unit` when the product fixes it."""

    drug: str
    strength: float | None = None
    unit: str | None = None


class Resolution(BaseModel, frozen=True, extra="forbid"):
    """How a written name resolved, and to which KB drugs. `missing`: drugs it names that the KB lacks (the
    library's names); `product`: the combination product and variant ("co-codamol 30/500")."""

    method: ResolutionMethod
    ingredients: tuple[Ingredient, ...] = ()
    missing: tuple[str, ...] = ()
    product: str | None = None

    @property
    def drugs(self) -> tuple[str, ...]:
        return tuple(ingredient.drug for ingredient in self.ingredients)

    @property
    def complete(self) -> bool:
        """Every drug named is a KB drug, so the critic can check all of it."""
        return bool(self.ingredients) and not self.missing


_UNRESOLVED = Resolution(method="unresolved")


def resolve_drug(
    kb: KnowledgeBase, name: str, threshold: float = DEFAULT_THRESHOLD, use_library: bool = True
) -> Resolution:
    """The KB drugs `name` stands for (see the module docstring); cached per KB and name."""
    return _resolver(kb)(name, threshold, use_library)


@cached_per_kb
def _resolver(kb: KnowledgeBase) -> Callable[[str, float, bool], Resolution]:
    aliases = _aliases(kb)
    fuzzy_names = {name: name for name in _fuzzy_names(kb, aliases)}

    @functools.lru_cache(maxsize=4096)
    def resolve(name: str, threshold: float, use_library: bool) -> Resolution:
        text = normalise_text(name)
        without_doses = _without(_DOSE_WORDS, text)
        without_salts = _without(_SALT_WORDS, without_doses)
        for candidate in dict.fromkeys((text, without_doses, without_salts)):
            found = kb.product(candidate)
            if found is not None:
                return _product_resolution(found, name)
            if candidate in aliases:
                drug, method = aliases[candidate]
                return _single(drug, "salt" if candidate == without_salts != without_doses else method)
        # The library's names keep their hyphens ("co-codamol"); a hyphen may also join two drugs.
        hyphenated = _without(_SALT_WORDS, _without(_DOSE_WORDS, normalise_text(name, keep_hyphens=True)))
        for words in dict.fromkeys((hyphenated, without_salts)):
            found_by_library = _by_library(kb, words, name) if use_library and words else None
            if found_by_library is not None:
                return found_by_library
        best = best_fuzzy_match(without_salts, fuzzy_names, threshold)
        if best is None:
            return _UNRESOLVED
        product = kb.product(best[0])
        if product is not None:
            return _product_resolution(product, name).model_copy(update={"method": "fuzzy"})
        return _single(aliases[best[0]][0], "fuzzy")

    return resolve


def _without(words: re.Pattern[str], text: str) -> str:
    return " ".join(words.sub(" ", text).split())


def _aliases(kb: KnowledgeBase) -> dict[str, tuple[Drug, ResolutionMethod]]:
    """Every normalised name of every KB drug -> the drug and what kind of name it is."""
    aliases: dict[str, tuple[Drug, ResolutionMethod]] = {}
    for drug in kb.drugs:
        kinds: tuple[tuple[ResolutionMethod, tuple[str, ...]], ...] = (
            ("generic", (drug.name,)), ("brand", drug.brands), ("spelling", drug.spellings),
        )  # fmt: skip
        for method, names in kinds:
            for alias in names:
                aliases.setdefault(normalise_text(alias), (drug, method))
    return aliases


def _fuzzy_names(kb: KnowledgeBase, aliases: dict[str, tuple[Drug, ResolutionMethod]]) -> list[str]:
    products = [
        normalise_text(name)
        for product in kb.products
        for name in (product.name, *product.brands, *(b for v in product.variants for b in v.brands))
    ]
    return [*aliases, *products]


def _single(drug: Drug, method: ResolutionMethod) -> Resolution:
    return Resolution(method=method, ingredients=(Ingredient(drug=drug.name),))


def _product_resolution(found: tuple[Product, ProductVariant | None], name: str) -> Resolution:
    """A product found by name: the variant its brand fixes, else the one the text writes."""
    product, variant = found
    return _combination(product, variant or _written_variant(product, name))


def _combination(product: Product, variant: ProductVariant | None) -> Resolution:
    """The product's ingredients with their strengths: the variant's, else those every variant shares."""
    ingredients = []
    for position, drug in enumerate(product.ingredients):
        strengths = {v.strengths[position] for v in ((variant,) if variant else product.variants)}
        strength = strengths.pop() if len(strengths) == 1 else None
        ingredients.append(
            Ingredient(drug=drug, strength=strength, unit=product.unit if strength is not None else None)
        )
    label = f"{product.name} {product.label(variant)}" if variant else product.name
    return Resolution(method="combination", ingredients=tuple(ingredients), product=label)


def _written_variant(product: Product, name: str) -> ProductVariant | None:
    """The variant whose strengths the text writes ("30/500", either order) or whose total it gives
    ("co-amoxiclav 625 mg" = 500/125)."""
    numbers = sorted(float(number) for number in _NUMBER.findall(name))
    for variant in product.variants:
        if numbers == sorted(variant.strengths) or numbers == [sum(variant.strengths)]:
            return variant
    return None


def _by_library(kb: KnowledgeBase, words: str, name: str) -> Resolution | None:
    """What the library finds in `words`, mapped to KB drugs; None when it finds no drug."""
    canonical_names = tuple(dict.fromkeys(found for found, _, _ in library_matches(words)))
    if not canonical_names:
        return None
    by_canonical = library_index(kb)
    ingredients: list[Ingredient] = []
    missing: list[str] = []
    for canonical in canonical_names:
        product = kb.product(canonical)
        if product is not None:
            ingredients += _product_resolution(product, name).ingredients
            continue
        for part in canonical.split("/"):
            drug = by_canonical.get(part.lower()) or kb.drug(part)
            if drug is not None:
                ingredients.append(Ingredient(drug=drug.name))
            else:
                missing.append(part)
    unique = tuple({ingredient.drug: ingredient for ingredient in ingredients}.values())
    return Resolution(method="library", ingredients=unique, missing=tuple(dict.fromkeys(missing)))


@functools.lru_cache(maxsize=4096)
def library_matches(words: str) -> tuple[tuple[str, int, int], ...]:
    """The drugs `drug-named-entity-recognition` finds in space-separated `words`: (canonical name, first
    word, end word) each, exact matches of one or two words."""
    found = _find_drugs()(words.split())
    return tuple((data["name"], start, end) for data, start, end in found if data.get("name"))


@functools.cache
def _find_drugs() -> Callable[..., list[tuple[dict[str, Any], int, int]]]:
    # Imported on first use: the import loads the library's whole dictionary (about 3 s).
    return importlib.import_module("drug_named_entity_recognition").find_drugs


@cached_per_kb
def library_index(kb: KnowledgeBase) -> dict[str, Drug]:
    """The library's canonical name (lower case) for each KB drug's generic name, then its spellings, then
    its brands -> that drug. Only a name the library reads whole as one drug counts ("Canesten Oral" is
    read as clotrimazole plus a word, so it says nothing of fluconazole), and a canonical name claimed by
    two KB drugs at the same rank is left out rather than guessed."""
    claims: dict[str, dict[int, set[str]]] = {}
    for drug in kb.drugs:
        for rank, names in enumerate(((drug.name,), drug.spellings, drug.brands)):
            for alias in names:
                words = normalise_text(alias, keep_hyphens=True)
                matches = library_matches(words)
                if len(matches) == 1 and matches[0][1:] == (0, len(words.split())):
                    claims.setdefault(matches[0][0].lower(), {}).setdefault(rank, set()).add(drug.name)
    drugs = {drug.name: drug for drug in kb.drugs}
    index = {}
    for canonical, by_rank in claims.items():
        first = by_rank[min(by_rank)]
        if len(first) == 1:
            index[canonical] = drugs[next(iter(first))]
    return index
