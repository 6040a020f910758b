"""Resolve what an agent writes for a drug to the KB drugs it contains (its ingredients), every word read.

The text is read as words (case, accents and punctuation ignored), left to right, and each word is
accounted for, or the name is not wholly resolved (`Resolution.complete` is False) and the critic calls the
item unverified:
- a drug: the longest run of words that is a KB drug's name, brand or listed spelling, or a combination
  product's name or brand (`products_v<N>.yaml`: "co-codamol", "Augmentin"); else the drugs
  `drug-named-entity-recognition` (MIT) finds there by canonical names, each mapped to the KB drug whose own
  name, spelling or brand the library gives that canonical name ("Albuterol" -> salbutamol; a canonical
  name the KB lacks is `missing`: a real drug the critic cannot check); else the best rapidfuzz match above
  the threshold among the KB's names (a misspelling: "ibuprofn"). The library is asked before a fuzzy
  match is taken: a word it knows exactly is that drug, so "escitalopram" is an escitalopram the KB lacks,
  never its fuzzy neighbour citalopram;
- a salt or ester word ("naproxen sodium", "sodium valproate"): it belongs to the drug before it (after it
  when none comes before), and the critic converts that drug's dose with the KB's salt table;
- a strength, a dose form or route word ("500 mg tablets", "0.5 g", "1%", "oral suspension") or a joining
  word ("and", "with", "plus"); a number with no unit is read only as the strengths of a combination
  product written with its name ("co-codamol 30/500"): any other ("2 x paracetamol", "paracetamol 2
  tablets") is a count no name holds, and `unknown`;
- anything else is `unknown`: "paracetamol and zzzocillin" resolves paracetamol and leaves "zzzocillin"
  unread, so the item is not wholly checked. A name of more than `MAX_NAME_WORDS` words is not read.
A product's ingredients carry their amounts per tablet when the product fixes them: by a brand sold at one
strength (Solpadol), by the strengths written in the text ("30/500", or the BNF's total "co-amoxiclav
625 mg"), or because every variant has the same amount (co-codamol's paracetamol 500 mg). The library's
dictionary takes seconds to load, so it loads on first use, once: only for a name that is not wholly
exact KB names.
"""

import functools
import importlib
import re
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel

from tasks.benchmarks.consult.kb.loading import KnowledgeBase, cached_per_kb
from tasks.benchmarks.consult.kb.models import Drug, Product, ProductVariant
from tasks.benchmarks.consult.kb.names import DEFAULT_THRESHOLD, best_fuzzy_match, normalise_text

ResolutionMethod = Literal[
    "combination", "generic", "brand", "spelling", "salt", "library", "fuzzy", "several", "unresolved"
]
# Words of a strength, dose form or route ("amoxicillin 500 mg capsules", "co-codamol 30/500" reads "30 500")
# and words that join drug names: read, and no drug.
_DOSE_WORD = re.compile(r"\d+(\.\d+)?(mg|g|mcg|microgram|micrograms|ml|l|iu|units?)?")
_FORM_WORDS = frozenset((
    "mg", "g", "mcg", "microgram", "micrograms", "milligram", "milligrams", "gram", "grams", "ml",
    "millilitre", "millilitres", "iu", "unit", "units", "tablet", "tablets", "tab", "tabs", "capsule",
    "capsules", "cap", "caps", "caplet", "caplets", "oral", "suspension", "solution", "liquid", "syrup",
    "elixir", "drops", "drop", "cream", "ointment", "gel", "lotion", "spray", "sprays", "inhaler",
    "inhalers", "evohaler", "accuhaler", "turbohaler", "pessary", "pessaries", "suppository",
    "suppositories", "patch", "patches", "sachet", "sachets", "powder", "granules", "lozenge", "lozenges",
    "mouthwash", "shampoo", "injection", "dispersible", "soluble", "effervescent", "chewable",
    "orodispersible", "film", "coated", "enteric", "ec", "gastro", "resistant", "modified", "release",
    "mr", "sr", "xl", "prolonged", "extended", "er", "immediate", "topical", "nasal", "inhaled", "eye",
    "ear", "cutaneous", "vaginal", "rectal", "sublingual", "by", "mouth", "po", "strength", "ds", "forte",
    "hfa", "mdi", "for", "children", "child", "infant", "infants", "junior",
    "paediatric", "pediatric", "adult", "adults",
))  # fmt: skip
_JOINING_WORDS = frozenset(("and", "with", "plus", "or", "then", "also", "the", "a", "an", "of", "x"))
_LONGEST_NAME = 6  # words; no KB name or product is longer
# No drug's name, with its strength, form and salt, runs longer: a longer text is not read word by word.
MAX_NAME_WORDS = 30
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# A number with its unit ("500 mg", "0.5 g", "1%", "5ml"), not inside a word ("Hc45"): one strength word.
_STRENGTH_WRITTEN = re.compile(
    r"(?<![a-z0-9.,])\d+(?:[.,]\d+)?\s*(?:mg|g|mcg|µg|μg|micrograms?|milligrams?|grams?|ml|millilitres?|l|iu"
    r"|units?|%)(?![a-z])",
    re.IGNORECASE,
)


class Ingredient(BaseModel, frozen=True, extra="forbid"):
    """A KB drug in what was written; `strength` per tablet or capsule in `unit` when the product fixes it;
    `salt` the salt or ester words written with it ("sodium"), whose dose the critic converts."""

    drug: str
    strength: float | None = None
    unit: str | None = None
    salt: str | None = None


class Resolution(BaseModel, frozen=True, extra="forbid"):
    """How a written name resolved, and to which KB drugs. `missing`: drugs it names that the KB lacks (the
    library's names); `unknown`: words read as nothing at all; `product`: the combination product and
    variant ("co-codamol 30/500")."""

    method: ResolutionMethod
    ingredients: tuple[Ingredient, ...] = ()
    missing: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    product: str | None = None

    @property
    def drugs(self) -> tuple[str, ...]:
        return tuple(ingredient.drug for ingredient in self.ingredients)

    @property
    def complete(self) -> bool:
        """Every word was read and every drug named is a KB drug, so the critic can check all of it."""
        return bool(self.ingredients) and not self.missing and not self.unknown


_UNRESOLVED = Resolution(method="unresolved")


def resolve_drug(
    kb: KnowledgeBase, name: str, threshold: float = DEFAULT_THRESHOLD, use_library: bool = True
) -> Resolution:
    """The KB drugs `name` stands for (see the module docstring); cached per KB and name."""
    return _resolver(kb)(name, threshold, use_library)


class _Found(NamedTuple):
    """One drug read from a run of words: its ingredients (several for a product), or a name the KB lacks."""

    method: ResolutionMethod
    ingredients: tuple[Ingredient, ...]
    missing: tuple[str, ...] = ()
    product: str | None = None
    strengths_written: bool = False  # the text writes the product's strengths ("30/500"), its bare numbers


@cached_per_kb
def _resolver(kb: KnowledgeBase) -> Callable[[str, float, bool], Resolution]:
    # Salt and ester words are data: every word of the KB's salt table (salts_v<N>.yaml).
    salt_words = frozenset(word for phrase in kb.salt_words for word in phrase.split())
    aliases = _aliases(kb, salt_words)
    fuzzy_names = {name: name for name in _fuzzy_names(kb, aliases)}

    def is_read(token: str) -> bool:
        """A salt, strength, form or joining word."""
        return token in salt_words or _is_dose_or_joining_word(token)

    def named(key: str, text: str) -> _Found | None:
        """A KB drug or product named exactly by `key` (normalised words)."""
        product = kb.product(key)
        if product is not None:
            resolution = _product_resolution(product, text)
            written = _written_variant(product[0], text) is not None
            return _Found("combination", resolution.ingredients, product=resolution.product,
                          strengths_written=written)  # fmt: skip
        if key in aliases:
            drug, method = aliases[key]
            return _Found(method, (Ingredient(drug=drug.name),))
        return None

    @functools.lru_cache(maxsize=8192)
    def resolve(name: str, threshold: float, use_library: bool) -> Resolution:
        # Each strength one word, so that a number left in the words has no unit ("0.5 g" is not "0", "5 g").
        words = normalise_text(_STRENGTH_WRITTEN.sub(" strength ", name), keep_hyphens=True).split()
        tokens = [part for word in words for part in word.split("-") if part]
        if len(tokens) > MAX_NAME_WORDS:
            return Resolution(method="unresolved", unknown=(f"(a name of {len(tokens):,} words)",))
        resolution, guessed = scan(name, tokens, {}, threshold)
        # The library's dictionary is slow to load: it is asked only when the KB's exact names leave a word
        # unread, or read one only as a misspelling, which may be another drug (escitalopram, no citalopram).
        if (resolution.unknown or guessed) and use_library:
            resolution, _ = scan(name, tokens, _library_spans(words), threshold)
        return resolution

    def scan(
        name: str, tokens: list[str], library: dict[int, tuple[int, tuple[str, ...]]], threshold: float
    ) -> tuple[Resolution, bool]:
        """The words read, and whether a fuzzy match read any of them."""
        found: list[tuple[int, _Found]] = []  # (first token, what it names)
        salts: list[tuple[int, str]] = []
        unknown: list[str] = []
        numbers: list[str] = []  # with no unit, outside any name read
        position = 0
        while position < len(tokens):
            end, hit = _longest(tokens, position, lambda key: named(key, name))
            by_library = library.get(position)
            # The library's name where it reads more words, unless it reads a lone salt or form word.
            if by_library is not None and by_library[0] > max(end, position + is_read(tokens[position])):
                end, canonical_names = by_library
                hit = _by_library(kb, canonical_names, name)
                # The library reads a salt as part of a name ("albuterol sulfate"): it is still a salt.
                salts += [(word, tokens[word]) for word in range(position, end) if tokens[word] in salt_words]
            elif (
                hit is None
                and (fuzzy := _fuzzy(tokens, position, fuzzy_names, threshold, is_read)) is not None
            ):
                end, key = fuzzy
                hit = named(key, name)
                assert hit is not None  # fuzzy names are KB names
                hit = hit._replace(method="fuzzy")
            if hit is not None:
                found.append((position, hit))
                position = end
                continue
            token = tokens[position]
            if token in salt_words:
                salts.append((position, token))
            elif token.isdigit():
                numbers.append(token)
            elif not is_read(token):
                unknown.append(token)
            position += 1
        if not any(hit.strengths_written for _, hit in found):
            unknown += numbers
        guessed = any(hit.method == "fuzzy" for _, hit in found)
        return _resolution(found, _salt_phrases(salts), unknown), guessed

    return resolve


def _longest(
    tokens: list[str], start: int, lookup: Callable[[str], _Found | None]
) -> tuple[int, _Found | None]:
    """The longest run of tokens from `start` that `lookup` knows, and where it ends."""
    for end in range(min(len(tokens), start + _LONGEST_NAME), start, -1):
        hit = lookup(" ".join(tokens[start:end]))
        if hit is not None:
            return end, hit
    return start, None


def _fuzzy(
    tokens: list[str], start: int, names: dict[str, str], threshold: float, is_read: Callable[[str], bool]
) -> tuple[int, str] | None:
    """The longest run of tokens from `start` (words no other rule reads) that is a misspelt KB name."""
    run = start
    while run < len(tokens) and run - start < _LONGEST_NAME and not is_read(tokens[run]):
        run += 1
    for end in range(run, start, -1):
        best = best_fuzzy_match(" ".join(tokens[start:end]), names, threshold)
        if best is not None:
            return end, best[0]
    return None


def _is_dose_or_joining_word(token: str) -> bool:
    return token in _FORM_WORDS or token in _JOINING_WORDS or _DOSE_WORD.fullmatch(token) is not None


def _salt_phrases(salts: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Adjacent salt words as one phrase ("sodium phosphate"), at the position of its first word."""
    phrases: list[tuple[int, str]] = []
    for position, word in salts:
        if phrases and phrases[-1][0] + len(phrases[-1][1].split()) == position:
            phrases[-1] = (phrases[-1][0], f"{phrases[-1][1]} {word}")
        else:
            phrases.append((position, word))
    return phrases


def _resolution(
    found: list[tuple[int, _Found]], salts: list[tuple[int, str]], unknown: list[str]
) -> Resolution:
    """The drugs found, each salt phrase given to the drug before it (else after it)."""
    if not found:
        return Resolution(method="unresolved", unknown=tuple(unknown)) if unknown else _UNRESOLVED
    salt_of: dict[int, str] = {}
    for position, phrase in salts:
        before = [index for index, (start, _) in enumerate(found) if start < position]
        owner = before[-1] if before else 0
        salt_of[owner] = f"{salt_of[owner]} {phrase}" if owner in salt_of else phrase
    ingredients: dict[str, Ingredient] = {}
    for index, (_, hit) in enumerate(found):
        for ingredient in hit.ingredients:
            salt = salt_of.get(index)
            ingredients.setdefault(ingredient.drug, ingredient.model_copy(update={"salt": salt}))
    hits = [hit for _, hit in found]
    method: ResolutionMethod = hits[0].method if len(hits) == 1 else "several"
    if method != "combination" and salt_of and ingredients:
        method = "salt"
    return Resolution(
        method=method,
        ingredients=tuple(ingredients.values()),
        missing=tuple(dict.fromkeys(name for hit in hits for name in hit.missing)),
        unknown=tuple(unknown),
        product=hits[0].product if len(hits) == 1 else None,
    )


def _aliases(kb: KnowledgeBase, salt_words: frozenset[str]) -> dict[str, tuple[Drug, ResolutionMethod]]:
    """Every normalised name of every KB drug -> the drug and what kind of name it is. A name holding a salt
    word ("naproxen sodium") is left out: the salt is read as a salt, so its dose is converted."""
    aliases: dict[str, tuple[Drug, ResolutionMethod]] = {}
    for drug in kb.drugs:
        kinds: tuple[tuple[ResolutionMethod, tuple[str, ...]], ...] = (
            ("generic", (drug.name,)), ("brand", drug.brands), ("spelling", drug.spellings),
        )  # fmt: skip
        for method, names in kinds:
            for alias in names:
                key = normalise_text(alias)
                if not salt_words.intersection(key.split()) or method == "generic":
                    aliases.setdefault(key, (drug, method))
    return aliases


def _fuzzy_names(kb: KnowledgeBase, aliases: dict[str, tuple[Drug, ResolutionMethod]]) -> list[str]:
    products = [
        normalise_text(name)
        for product in kb.products
        for name in (product.name, *product.brands, *(b for v in product.variants for b in v.brands))
    ]
    return [*aliases, *products]


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


def _library_spans(words: list[str]) -> dict[int, tuple[int, tuple[str, ...]]]:
    """Where the library finds drugs in the words, in token positions (a hyphenated word is several
    tokens): first token -> (the token after the match, its canonical names)."""
    starts = [0]
    for word in words:
        starts.append(starts[-1] + len([part for part in word.split("-") if part]))
    spans: dict[int, tuple[int, tuple[str, ...]]] = {}
    for canonical, first, end in library_matches(" ".join(words)):
        start = starts[first]
        previous = spans.get(start, (starts[end], ()))
        spans[start] = (max(previous[0], starts[end]), (*previous[1], canonical))
    return spans


def _by_library(kb: KnowledgeBase, canonical_names: tuple[str, ...], name: str) -> _Found:
    """What the library found at one place, as KB drugs; canonical names the KB lacks are missing."""
    by_canonical = library_index(kb)
    ingredients: list[Ingredient] = []
    missing: list[str] = []
    written = False
    for canonical in canonical_names:
        product = kb.product(canonical)
        if product is not None:
            ingredients += _product_resolution(product, name).ingredients
            written = written or _written_variant(product[0], name) is not None
            continue
        for part in canonical.split("/"):
            drug = by_canonical.get(part.lower()) or kb.drug(part)
            if drug is not None:
                ingredients.append(Ingredient(drug=drug.name))
            else:
                missing.append(part)
    unique = tuple({ingredient.drug: ingredient for ingredient in ingredients}.values())
    return _Found("library", unique, tuple(dict.fromkeys(missing)), strengths_written=written)


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
