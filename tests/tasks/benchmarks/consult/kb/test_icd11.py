import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.consult.kb.icd11 import DiagnosisMatch, normalise_diagnosis, normalise_drug_name
from tasks.benchmarks.consult.kb.loading import load_kb


@pytest.fixture(scope="module")
def kb():
    return load_kb()


@pytest.mark.parametrize(
    ("name", "icd11", "expected"),
    [
        # a valid KB code wins over a name naming no KB condition; one naming another is not read
        ("Sinus infection", "CA01", DiagnosisMatch("acute_sinusitis", "code", 100.0)),
        ("Migraine", "CA01", DiagnosisMatch(None, "unmatched", 0.0)),
        # nor one that is wholly the ICD-11 title of another entity (cholera, 1A00), but one of the code's
        # descendant or ancestor is read (bacterial pneumonia, CA40.0; pneumonia, CA40)
        ("Cholera", "CA01", DiagnosisMatch(None, "unmatched", 0.0)),
        ("Bacterial pneumonia", "CA40", DiagnosisMatch("community_acquired_pneumonia", "code", 100.0)),
        (
            "Pneumonia due to Escherichia coli",
            "CA40.0",
            DiagnosisMatch("community_acquired_pneumonia", "code", 100.0),
        ),
        # a code not written whole as a code
        ("Acute sinusitis", "CA01.not", DiagnosisMatch(None, "unmatched", 0.0)),
        ("Acute sinusitis", "CA01 ruled out", DiagnosisMatch(None, "unmatched", 0.0)),
        # a child code matches its KB parent
        ("whatever", "ca40.0", DiagnosisMatch("community_acquired_pneumonia", "code", 100.0)),
        # an unknown code falls back to the title
        ("Acute sinusitis", "ZZ99", DiagnosisMatch("acute_sinusitis", "exact", 100.0)),
        ("  BELL'S PALSY ", None, DiagnosisMatch("bell_palsy", "exact", 100.0)),
        ("hay fever", None, DiagnosisMatch("allergic_rhinitis", "exact", 100.0)),
        ("Migrane", None, DiagnosisMatch("migraine", "fuzzy", pytest.approx(93.333, abs=0.01))),
        ("broken leg", None, DiagnosisMatch(None, "unmatched", 0.0)),
        # a fuzzy match forgives spelling, not words
        ("no acute sinusitis", None, DiagnosisMatch(None, "unmatched", 0.0)),
        ("migraine x", None, DiagnosisMatch(None, "unmatched", 0.0)),
        ("no urinary tract infection", None, DiagnosisMatch(None, "unmatched", 0.0)),  # not "lower ..."
        (
            "lower urinry tract infection",
            None,
            DiagnosisMatch("cystitis", "fuzzy", pytest.approx(98.246, abs=0.01)),
        ),
    ],
)
def test_diagnosis_normalisation(kb, name, icd11, expected):
    assert normalise_diagnosis(kb, name, icd11) == expected


def test_fuzzy_threshold_decides(kb):
    assert normalise_diagnosis(kb, "Migrane", None, threshold=95.0) == DiagnosisMatch(None, "unmatched", 0.0)
    assert normalise_diagnosis(kb, "Migrane", None, threshold=90.0).condition_id == "migraine"


def test_extra_icd11_titles_match_through_a_kb_code(kb):
    titles = {"Infectious cystitis": "GC00.1", "Cholera": "1A00"}
    assert normalise_diagnosis(kb, "infectious cystitis", None, extra_titles=titles) == DiagnosisMatch(
        "cystitis", "exact", 100.0
    )
    assert normalise_diagnosis(kb, "Cholera", None, extra_titles=titles) == DiagnosisMatch(
        None, "unmatched", 0.0
    )


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("amoxicillin", "amoxicillin"),
        ("Amoxil", "amoxicillin"),
        ("amoxycillin 500 mg capsules", "amoxicillin"),
        ("Tylenol", "paracetamol"),
        ("acetaminophen", "paracetamol"),
        ("ibuprofin", "ibuprofen"),
        ("Nurofen 200mg tablets", "ibuprofen"),
        ("clarithromicin", "clarithromycin"),
        ("GTN spray", "glyceryl trinitrate"),
        ("unknownium", None),
    ],
)
def test_drug_name_normalisation(kb, given, expected):
    assert normalise_drug_name(kb, given) == expected


KB_NAMES = sorted({name for entry in load_kb().conditions for name in (entry.title, *entry.synonyms)})


@given(st.sampled_from(KB_NAMES), st.text(string.ascii_lowercase, min_size=1, max_size=8), st.booleans())
def test_a_word_more_than_a_kb_name_is_never_a_fuzzy_match(kb, name, word, before):
    written = f"{word} {name}" if before else f"{name} {word}"
    assert normalise_diagnosis(kb, written, None).method in ("exact", "unmatched")
