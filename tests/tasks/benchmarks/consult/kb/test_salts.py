"""The salt and ester table (salts_v1.yaml): how a dose written with a salt converts to the KB's basis."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.consult.kb.loading import KnowledgeBase, load_kb
from tasks.benchmarks.consult.kb.models import SaltAlias
from tasks.benchmarks.consult.kb.names import normalise_text
from tests.tasks.benchmarks.consult.kb.test_loading import MINIMAL_FILES, write_kb

KB = load_kb()


@pytest.mark.parametrize(
    ("drug", "salt", "expected"),
    [
        ("naproxen", "sodium", (500 / 550, False)),  # the label: 550 mg naproxen sodium = 500 mg naproxen
        ("Naprosyn", " Sodium ", (500 / 550, False)),  # a brand, case and spaces ignored
        ("ibuprofen", "lysine", (200 / 342, False)),
        ("diclofenac", "sodium", (1.0, True)),  # the BNF doses diclofenac as diclofenac sodium
        ("diclofenac", "potassium", (1.0, False)),
        ("amoxicillin", "trihydrate", (1.0, False)),  # "amoxicillin 500 mg (as trihydrate)"
        ("metformin", "HCl", (1.0, True)),
        ("amlodipine", "besylate", (1.0, False)),
        ("clopidogrel", "hydrogen sulphate", (1.0, False)),
        ("erythromycin", "ethyl succinate", (1.0, False)),
        ("prednisolone", "sodium  phosphate", (1.0, False)),
        ("citalopram", "hydrochloride", (10 / 8, False)),  # drops: 8 mg = a 10 mg tablet
        ("phenytoin", "sodium", (1.0, True)),
        ("phenytoin", "base", (100 / 92, False)),
        ("metronidazole", "benzoate", (200 / 320, False)),
        ("lithium", "carbonate", (1.0, True)),
        ("lithium", "citrate", (200 / 509, False)),
        ("valproate", "semisodium", (332.38 / 310.41, False)),
        ("hydrocortisone", "butyrate", None),  # a potent steroid, not a salt of the mild one
        ("clarithromycin", "lactobionate", None),
        ("naproxen", "potassium", None),
        ("unknownium", "sodium", None),
    ],
)
def test_a_salt_form_converts_by_its_factor_or_is_unknown(drug, salt, expected):
    found = KB.salt_form(drug, salt)
    assert (None if found is None else (found.factor, found.basis)) == expected


def test_naproxen_sodium_550_mg_twice_a_day_is_1000_mg_of_naproxen():
    # The example: within the 1,000 mg a day an older adult may take.
    daily = 550 * 2 * KB.salt_form("naproxen", "sodium").factor
    assert round(daily, 9) == 1000 == KB.drug("naproxen").max_daily.older


def test_the_salt_words_hold_every_salt_and_alias_the_longest_first():
    words = KB.salt_words
    assert {"sodium", "sodium phosphate", "hcl", "besylate", "butyrate", "ethyl succinate"} <= set(words)
    lengths = [(len(word.split()), len(word)) for word in words]
    assert lengths == sorted(lengths, reverse=True)


def test_every_spelling_with_a_salt_word_has_a_salt_form():
    # A spelling the KB lists ("phenytoin sodium") resolves whole: its salt must convert, never be guessed.
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, KB.salt_words)) + r")\b")
    missing = [
        (drug.name, spelling, found)
        for drug in KB.drugs
        for spelling in drug.spellings
        for found in pattern.findall(normalise_text(spelling))
        if KB.salt_form(drug.name, found) is None
    ]
    assert missing == []


def test_each_drug_has_one_basis_salt_at_most_with_factor_one():
    bases = [(form.drug, form.factor) for form in KB.salt_forms if form.basis]
    assert len({drug for drug, _ in bases}) == len(bases) and {factor for _, factor in bases} == {1.0}


def with_salts(*rows: str) -> str:
    """The minimal salt table with these rows before its own (amoxicillin trihydrate)."""
    return MINIMAL_FILES["salts_v1.yaml"].replace(
        "salts:\n", "salts:\n" + "".join(f"  - {row}\n" for row in rows)
    )


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (['{drug: warfarin, salt: sodium, factor: 1, source: "BNF"}'],
         "salt form 'warfarin / sodium': refers to unknown drug 'warfarin'"),
        (['{drug: amoxicillin, salt: sodium, factor: 1, source: "BNF"}',
          '{drug: amoxicillin, salt: sodium, factor: 0.9, source: "BNF"}'],
         "salt form 'amoxicillin / sodium': duplicate entry"),
        (['{drug: amoxicillin, salt: trihydrat, factor: 1, source: "BNF"}'],
         "salt form 'amoxicillin / trihydrat': write the salt as 'trihydrate' (the aliases' spelling)"),
        (['{drug: amoxicillin, salt: sodium, factor: 500/0, source: "BNF"}'],
         "salt form 'amoxicillin / sodium': factor: Value error, ratio '500/0' divides by 0"),
        (['{drug: amoxicillin, salt: sodium, factor: half, source: "BNF"}'],
         "salt form 'amoxicillin / sodium': factor: Input should be a valid number, unable to parse string "
         "as a number"),
        (['{drug: amoxicillin, salt: sodium, factor: 0, source: "BNF"}'],
         "salt form 'amoxicillin / sodium': factor: Input should be greater than 0"),
        (['{drug: amoxicillin, salt: sodium, factor: 0.9, basis: true, source: "BNF"}'],
         "salt form 'amoxicillin / sodium': entry: Value error, the KB's basis salt has factor 1"),
        (['{drug: amoxicillin, salt: sodium, factor: 1, basis: true, source: "BNF"}',
          '{drug: amoxicillin, salt: monohydrate, factor: 1, basis: true, source: "BNF"}'],
         "salt form 'amoxicillin / monohydrate': a second basis salt of the drug (the first: 'sodium')"),
        (['{drug: amoxicillin, salt: Sodium, factor: 1, source: "BNF"}'],
         "salt form 'amoxicillin / Sodium': salt: String should match pattern '^[a-z]+( [a-z]+)*$'"),
        (['{drug: amoxicillin, salt: butyrate, factor: 1, source: "BNF"}'],
         "unconverted salt 'butyrate': salt form 'amoxicillin / butyrate' converts it"),
        (['{drug: amoxicillin, salt: amoxicillin, factor: 1, source: "BNF"}'],
         "salt 'amoxicillin': 'amoxicillin' is a word of the drug name 'amoxicillin'"),
    ],
)  # fmt: skip
def test_a_salt_form_the_loader_rejects(tmp_path, rows, message):
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"salts_v1.yaml": with_salts(*rows)}))
    assert str(error.value) == f"salts_v1.yaml: {message}"


@pytest.mark.parametrize(
    ("aliases", "message"),
    [
        ('[{alias: sulphate, salt: sulfate, source: "BNF"}]',
         "salt alias 'sulphate': refers to unknown salt 'sulfate'"),
        ('[{alias: butyrate, salt: trihydrate, source: "BNF"}]',
         "salt alias 'butyrate': is a salt of the table itself"),
        ('[{alias: trihydrate, salt: trihydrate, source: "BNF"}]',
         "salt alias 'trihydrate': entry: Value error, 'trihydrate' is an alias of itself"),
    ],
)  # fmt: skip
def test_a_salt_alias_the_loader_rejects(tmp_path, aliases, message):
    text = re.sub(r"aliases: \[.*\]", f"aliases: {aliases}", MINIMAL_FILES["salts_v1.yaml"])
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **{"salts_v1.yaml": text}))
    assert str(error.value) == f"salts_v1.yaml: {message}"


def test_a_drug_dosed_by_a_count_converts_nothing(tmp_path):
    drugs = MINIMAL_FILES["drugs_v1.yaml"].replace("unit: mg,", "unit: application,")
    conditions = MINIMAL_FILES["conditions_v1.yaml"].replace("unit: mg,", "unit: application,")
    dosing = "version: 1\ndosing: []\n"
    salts = MINIMAL_FILES["salts_v1.yaml"].replace("factor: 1,", "factor: 0.87,")
    files = {"drugs_v1.yaml": drugs, "conditions_v1.yaml": conditions, "dosing_v1.yaml": dosing,
             "salts_v1.yaml": salts}  # fmt: skip
    with pytest.raises(ValueError) as error:
        load_kb(1, write_kb(tmp_path, **files))
    assert str(error.value) == (
        "salts_v1.yaml: salt form 'amoxicillin / trihydrate': factor 0.87 for a drug dosed in 'application', "
        "not a mass (only 1)"
    )


def test_the_minimal_table_loads_with_its_alias(tmp_path):
    kb = load_kb(1, write_kb(tmp_path))
    assert (kb.salt_form("Amoxil", "TRIHYDRAT").salt, kb.salt_words) == (
        "trihydrate",
        ("trihydrate", "trihydrat", "butyrate"),
    )


# Properties over any text: the lookup is total, reads what is written whatever its case and spacing, and
# its work is bounded by the words written (at most the longest alias's length in lookups per word).
known_pairs = st.sampled_from([(form.drug, form.salt) for form in KB.salt_forms])
separators = st.sampled_from([" ", "  ", "-", " - ", "\t"])


@given(st.text(max_size=40), st.text(max_size=40))
def test_the_lookup_is_total(drug, salt):
    found = KB.salt_form(drug, salt)
    assert found is None or found.factor > 0


@given(known_pairs, st.randoms(use_true_random=False), separators)
def test_case_spacing_and_punctuation_do_not_change_the_salt(pair, random, separator):
    drug, salt = pair
    written = separator.join(
        "".join(random.choice((c.lower(), c.upper())) for c in word) for word in salt.split()
    )
    assert KB.salt_form(drug, f" {written} ") == KB.salt_form(drug, salt) is not None


@given(st.lists(st.sampled_from([*KB.salt_words, "x", "acid"]), max_size=12))
def test_canonical_spelling_is_idempotent_and_never_longer(words):
    text = " ".join(words)
    canonical = KB.canonical_salt(text)
    assert KB.canonical_salt(canonical) == canonical
    assert len(canonical.split()) <= len(text.split())


class _CountingAliases(dict):
    lookups = 0

    def get(self, key, default=None):
        type(self).lookups += 1
        return super().get(key, default)


@given(st.lists(st.sampled_from(["ethyl", "succinate", "hcl", "sodium", "x"]), max_size=30))
def test_the_lookups_grow_linearly_with_the_words(words):
    aliases = (
        SaltAlias(alias="ethyl succinate", salt="ethylsuccinate", source="BNF"),
        SaltAlias(alias="hcl", salt="hydrochloride", source="BNF"),
    )
    empty: dict = dict.fromkeys(("aiu_types", "conditions", "drug_classes", "drugs", "interactions"), ())
    kb = KnowledgeBase(version=1, contraindications=(), salt_aliases=aliases, **empty)
    counting = _CountingAliases(kb._salts_by_alias)
    kb.__dict__["_salts_by_alias"] = counting
    _CountingAliases.lookups = 0
    kb.canonical_salt(" ".join(words))
    # one lookup at least for each step of one or two words, two at most for each word
    assert len(words) <= 2 * _CountingAliases.lookups <= 4 * len(words)
