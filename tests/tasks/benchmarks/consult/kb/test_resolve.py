import functools
import re
import subprocess
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tasks.benchmarks.consult.kb.icd11 import normalise_drug_name
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.kb.resolve import Ingredient, Resolution, library_index, resolve_drug


@pytest.fixture(scope="module")
def kb():
    return load_kb()


PARACETAMOL, CODEINE, AMOXICILLIN = ("paracetamol",), ("codeine",), ("amoxicillin",)
CO_CODAMOL, CO_AMOXICLAV = CODEINE + PARACETAMOL, (*AMOXICILLIN, "clavulanic acid")
CO_TRIMOXAZOLE = ("sulfamethoxazole", "trimethoprim")
# What agents write -> the KB drugs it contains; () for names that must not resolve to any KB drug.
NAMES = [
    # generic names, strengths and forms
    ("paracetamol", PARACETAMOL),
    ("ibuprofen 400 mg tablets", ("ibuprofen",)),
    ("Amoxil 500mg capsules", AMOXICILLIN),
    ("clarithromycin 500 mg", ("clarithromycin",)),
    ("paracetamol 0.5 g tablets", PARACETAMOL),
    ("hydrocortisone 1% cream", ("hydrocortisone",)),
    ("Ventolin inhaler 100 micrograms", ("salbutamol",)),
    # other generic names and spellings the KB lists
    ("Acetaminophen", PARACETAMOL),
    ("amoxycillin", AMOXICILLIN),
    ("cephalexin", ("cefalexin",)),
    ("albuterol", ("salbutamol",)),
    ("paracetemol", PARACETAMOL),
    ("amoxicilin", AMOXICILLIN),
    # salts and esters
    ("naproxen sodium", ("naproxen",)),
    ("salbutamol sulfate", ("salbutamol",)),
    ("salbutamol sulphate", ("salbutamol",)),
    ("amoxicillin trihydrate", AMOXICILLIN),
    ("doxycycline hyclate", ("doxycycline",)),
    ("doxycycline monohydrate", ("doxycycline",)),
    ("beclometasone dipropionate", ("beclometasone",)),
    ("mometasone furoate", ("mometasone",)),
    ("warfarin sodium", ("warfarin",)),
    ("levothyroxine sodium 50 micrograms", ("levothyroxine",)),
    ("codeine phosphate 30 mg", CODEINE),
    ("flucloxacillin sodium", ("flucloxacillin",)),
    ("phenoxymethylpenicillin potassium", ("phenoxymethylpenicillin",)),
    ("prednisolone sodium phosphate", ("prednisolone",)),
    ("omeprazole magnesium", ("omeprazole",)),
    ("amlodipine besylate", ("amlodipine",)),
    ("metformin HCl", ("metformin",)),
    ("ciprofloxacin hydrochloride", ("ciprofloxacin",)),
    ("hydrocortisone butyrate", ("hydrocortisone",)),
    ("ibuprofen lysine", ("ibuprofen",)),
    # UK and US brands, the KB's and the library's
    ("Calpol", PARACETAMOL),
    ("Tylenol", PARACETAMOL),
    ("Advil", ("ibuprofen",)),
    ("Klacid", ("clarithromycin",)),
    ("Klaricid", ("clarithromycin",)),
    ("Biaxin", ("clarithromycin",)),
    ("Zocor", ("simvastatin",)),
    ("Prilosec", ("omeprazole",)),
    ("Proventil", ("salbutamol",)),
    ("ProAir HFA", ("salbutamol",)),
    ("Deltasone", ("prednisolone",)),
    ("Lotrimin", ("clotrimazole",)),
    ("Beconase", ("beclometasone",)),
    ("Vibramycin-D", ("doxycycline",)),
    ("Nurofen for Children", ("ibuprofen",)),
    # misspellings
    ("clarithromycine", ("clarithromycin",)),
    ("omeprazle", ("omeprazole",)),
    ("cetirizin", ("cetirizine",)),
    ("co-codamal", CO_CODAMOL),
    # combination products, by name, brand and strength
    ("co-codamol", CO_CODAMOL),
    ("Co-Codamol 30/500mg tablets", CO_CODAMOL),
    ("Solpadol", CO_CODAMOL),
    ("Solpadeine Max", CO_CODAMOL),
    ("co-dydramol 10/500", ("dihydrocodeine", *PARACETAMOL)),
    ("co-amoxiclav", CO_AMOXICLAV),
    ("co-amoxiclav 625 mg", CO_AMOXICLAV),
    ("Augmentin", CO_AMOXICLAV),
    ("amoxicillin/clavulanate", CO_AMOXICLAV),
    ("amoxicillin-clavulanate", CO_AMOXICLAV),
    ("Nurofen Plus", ("ibuprofen", *CODEINE)),
    ("co-trimoxazole", CO_TRIMOXAZOLE),
    ("Septrin", CO_TRIMOXAZOLE),
    ("Bactrim DS", CO_TRIMOXAZOLE),
    ("Septra DS", ("sulfamethoxazole", "trimethoprim")),  # the brand Septra, double strength
    ("Tylenol with Codeine No. 3", CO_CODAMOL),
    ("Tylenol #4", CO_CODAMOL),
    ("Nuromol", ("ibuprofen", *PARACETAMOL)),
    ("Advil Dual Action", ("ibuprofen", *PARACETAMOL)),
    ("paracetamol and codeine", PARACETAMOL + CODEINE),
    ("Daktacort", ("hydrocortisone",)),  # and miconazole, which the KB lacks
    # drugs the KB added for its class rules: a US brand through the library, a generic
    ("Zithromax", ("azithromycin",)),
    ("sertraline", ("sertraline",)),
    # the most-prescribed drugs the KB added (anticoagulants, antiplatelets, antiepileptics...), by brand,
    # salt, spelling and strength
    ("Plavix", ("clopidogrel",)),
    ("Eliquis", ("apixaban",)),
    ("Xarelto 20 mg", ("rivaroxaban",)),
    ("Cordarone X", ("amiodarone",)),
    ("Lanoxin", ("digoxin",)),
    ("Zyloric", ("allopurinol",)),
    ("metronidazole benzoate", ("metronidazole",)),
    ("Zyvox", ("linezolid",)),
    ("Tegretol", ("carbamazepine",)),
    ("phenytoin sodium 100 mg capsules", ("phenytoin",)),
    ("sodium valproate", ("valproate",)),
    ("Epilim Chrono 500 mg", ("valproate",)),
    ("St John's wort", ("st johns wort",)),
    # no KB drug
    ("vitamin Z", ()),
    ("rest", ()),
    ("fluids", ()),
    ("steam inhalation", ()),
    ("saline nasal drops", ()),
    ("Solpadeine", ()),  # a brand family: Plus, Max and Headache differ
    ("Valium", ()),
    ("Keppra", ()),  # levetiracetam, which the KB lacks
    ("co-careldopa", ()),
    ("500 mg", ()),
]


@pytest.mark.parametrize(("name", "drugs"), NAMES)
def test_a_name_resolves_to_its_kb_drugs(kb, name, drugs):
    assert resolve_drug(kb, name).drugs == drugs


def test_the_table_covers_every_kind_of_name():
    assert len(NAMES) >= 60


def test_the_library_adds_these_names_of_the_table(kb):
    # Measured: what drug-named-entity-recognition resolves that the KB's own names, salts and fuzzy
    # matching do not (kb/README.md gives the numbers).
    added = [
        name
        for name, _ in NAMES
        if resolve_drug(kb, name).complete and not resolve_drug(kb, name, use_library=False).complete
    ]
    assert added == [
        "Proventil", "ProAir HFA", "Deltasone", "Lotrimin", "Beconase", "Vibramycin-D",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "method"),
    [
        ("paracetamol", "generic"),
        ("Calpol", "brand"),
        ("acetaminophen", "spelling"),
        ("naproxen sodium", "salt"),
        ("co-codamol", "combination"),
        ("Proventil", "library"),
        ("omeprazle", "fuzzy"),
        ("vitamin Z", "unresolved"),
    ],
)
def test_the_resolution_says_how_the_name_matched(kb, name, method):
    assert resolve_drug(kb, name).method == method


def test_a_written_strength_picks_the_combination_variant(kb):
    assert resolve_drug(kb, "co-codamol 30/500") == Resolution(
        method="combination",
        ingredients=(
            Ingredient(drug="codeine", strength=30, unit="mg"),
            Ingredient(drug="paracetamol", strength=500, unit="mg"),
        ),
        product="co-codamol 30/500",
    )


def test_a_brand_sold_at_one_strength_fixes_the_variant(kb):
    assert resolve_drug(kb, "Solpadol") == resolve_drug(kb, "co-codamol 30/500")


def test_the_bnf_total_picks_the_variant(kb):
    assert resolve_drug(kb, "co-amoxiclav 625 mg") == Resolution(
        method="combination",
        ingredients=(
            Ingredient(drug="amoxicillin", strength=500, unit="mg"),
            Ingredient(drug="clavulanic acid", strength=125, unit="mg"),
        ),
        product="co-amoxiclav 500/125",
    )


def test_without_a_variant_only_the_strength_every_variant_shares_is_known(kb):
    assert resolve_drug(kb, "co-codamol") == Resolution(
        method="combination",
        ingredients=(Ingredient(drug="codeine"), Ingredient(drug="paracetamol", strength=500, unit="mg")),
        product="co-codamol",
    )


def test_a_drug_the_kb_lacks_is_named_as_missing(kb):
    assert resolve_drug(kb, "Valium") == Resolution(method="library", missing=("Diazepam",))
    daktacort = resolve_drug(kb, "Daktacort")
    assert (daktacort.drugs, daktacort.missing, daktacort.complete) == (
        ("hydrocortisone",),
        ("miconazole",),
        False,
    )


@pytest.mark.parametrize(
    ("name", "missing"),
    [
        # each within fuzzy reach of a KB drug it is not (in brackets)
        ("escitalopram", "Escitalopram"),  # citalopram
        ("esomeprazole", "Esomeprazole"),  # omeprazole
        ("famciclovir", "Famciclovir"),  # aciclovir
        ("ganciclovir", "Ganciclovir"),  # aciclovir
        ("oxacillin", "Oxacillin"),  # flucloxacillin
        ("cloxacillin", "Cloxacillin"),  # flucloxacillin
        ("cefatrizine", "Cefatrizine"),  # cetirizine
        ("mephenytoin", "Mephenytoin"),  # phenytoin
        ("etanidazole", "Etanidazole"),  # metronidazole
        ("oxcarbamazepine", "Oxcarbazepine"),  # carbamazepine
        ("dihydrocodeinone", "Hydrocodone"),  # dihydrocodeine; the library's other name for hydrocodone
    ],
)
def test_a_drug_the_kb_lacks_is_not_read_as_its_fuzzy_neighbour(kb, name, missing):
    assert resolve_drug(kb, name) == Resolution(method="library", missing=(missing,))


@pytest.mark.parametrize(
    ("name", "drug"),
    [("paracetomol", "paracetamol"), ("omeprazle", "omeprazole"), ("ibuprofn", "ibuprofen")],
)
def test_a_misspelling_the_library_does_not_know_is_still_read_by_fuzzy_match(kb, name, drug):
    assert resolve_drug(kb, name).drugs == (drug,)


@functools.cache
def _library_words_for_drugs_the_kb_lacks() -> list[str]:
    """One-word names in the library's dictionary that are no KB name and whose drugs the KB lacks."""
    from drug_named_entity_recognition.drugs_finder import drug_variant_to_canonical

    kb = load_kb()
    known = library_index(kb)

    def kb_has(canonical: str) -> bool:
        parts = canonical.split("/")
        return kb.product(canonical) is not None or any(p in known or kb.drug(p) for p in parts)

    return sorted(
        word
        for word, canonicals in drug_variant_to_canonical.items()
        if re.fullmatch("[a-z]+", word) and not kb.drug(word) and not kb.product(word)
        and not any(kb_has(canonical) for canonical in canonicals)
    )  # fmt: skip


@given(st.deferred(lambda: st.sampled_from(_library_words_for_drugs_the_kb_lacks())))
@example("escitalopram")
@example("cefatrizine")
@example("mephenytoin")
def test_a_word_the_library_knows_as_a_drug_the_kb_lacks_resolves_to_no_kb_drug(word):
    assert resolve_drug(load_kb(), word).drugs == ()


def test_normalise_drug_name_gives_the_one_generic_of_a_single_drug_only(kb):
    assert [normalise_drug_name(kb, name) for name in ("salbutamol sulphate", "co-codamol", "rest")] == [
        "salbutamol",
        None,
        None,
    ]


def test_the_library_loads_only_when_a_name_is_not_wholly_exact_kb_names():
    # Its dictionary takes seconds to load: names the KB knows exactly never pay for it. A name read only
    # by fuzzy match does (as one with a word unread): the library may know it as another drug
    # ("escitalopram" is no citalopram).
    script = (
        "import sys\n"
        "from tasks.benchmarks.consult.kb.loading import load_kb\n"
        "from tasks.benchmarks.consult.kb.resolve import resolve_drug\n"
        "kb = load_kb()\n"
        "resolve_drug(kb, 'naproxen sodium'); resolve_drug(kb, 'Augmentin'); resolve_drug(kb, 'Calpol')\n"
        "print('drug_named_entity_recognition' in sys.modules)\n"
        "resolve_drug(kb, 'paracetomol')\n"
        "print('drug_named_entity_recognition' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # every word is read: a word no rule reads leaves the name unresolved in part
        ("paracetamol and zzzocillin", Resolution(
            method="generic", ingredients=(Ingredient(drug="paracetamol"),), unknown=("zzzocillin",))),
        # misspellings joined to a drug are read as their drug, not dropped
        ("paracetamol and amoxicilin", Resolution(
            method="several", ingredients=(Ingredient(drug="paracetamol"), Ingredient(drug="amoxicillin")))),
        ("paracetamol + ibuprofn", Resolution(
            method="several", ingredients=(Ingredient(drug="paracetamol"), Ingredient(drug="ibuprofen")))),
        # a salt belongs to the drug beside it, before or after
        ("naproxen sodium 550 mg tablets", Resolution(
            method="salt", ingredients=(Ingredient(drug="naproxen", salt="sodium"),))),
        ("Albuterol sulfate HFA", Resolution(
            method="salt", ingredients=(Ingredient(drug="salbutamol", salt="sulfate"),))),
        ("hydrocortisone sodium phosphate", Resolution(
            method="salt", ingredients=(Ingredient(drug="hydrocortisone", salt="sodium phosphate"),))),
        # a number with no unit is a count no name holds, unless it is a combination's strengths
        ("2 x paracetamol", Resolution(
            method="generic", ingredients=(Ingredient(drug="paracetamol"),), unknown=("2",))),
        ("paracetamol 2 tablets", Resolution(
            method="generic", ingredients=(Ingredient(drug="paracetamol"),), unknown=("2",))),
        ("paracetamol 0.5 g tablets", Resolution(
            method="generic", ingredients=(Ingredient(drug="paracetamol"),))),
        ("co-codamol 30/500", Resolution(
            method="combination", product="co-codamol 30/500",
            ingredients=(Ingredient(drug="codeine", strength=30, unit="mg"),
                         Ingredient(drug="paracetamol", strength=500, unit="mg")))),
        ("co-codamol 30/500 2 tablets", Resolution(
            method="combination", product="co-codamol",
            ingredients=(Ingredient(drug="codeine"), Ingredient(drug="paracetamol", strength=500, unit="mg")),
            unknown=("30", "500", "2"))),
        # a real drug the KB lacks is named by the library
        ("sodium fusidate", Resolution(method="library", missing=("Fusidic acid",))),
    ],
)  # fmt: skip
def test_every_word_of_a_name_is_read(kb, name, expected):
    assert resolve_drug(kb, name) == expected
