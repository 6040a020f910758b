import csv
import time
from pathlib import Path

import orjson

from tasks.benchmarks.snomed.vocabulary import (
    VocabularyEntry,
    add_case_set_codes,
    derive_synthea_vocabulary,
    installed_modules_dir,
    semantic_tag,
    vocabulary_fingerprint,
)

CONDITIONS_TSV = (
    Path(__file__).resolve().parents[5] / "shared" / "data" / "synthea" / "synthea_conditions.tsv"
)


def write_module(folder: Path, name: str, states: dict) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps({"name": name, "states": states}))


def test_semantic_tag_is_the_parenthesised_suffix():
    assert [semantic_tag(d) for d in ["Viral sinusitis (disorder)", "Prediabetes", "Refugee (person) "]] == [
        "disorder",
        None,
        "person",
    ]


def test_vocabulary_takes_snomed_codes_of_condition_onset_states_only(tmp_path):
    snomed = "SNOMED-CT"
    write_module(
        tmp_path,
        "sinusitis.json",
        {
            "Onset": {
                "type": "ConditionOnset",
                "codes": [{"system": snomed, "code": "444814009", "display": "Viral sinusitis (disorder)"}],
            },
            "Visit": {
                "type": "Encounter",
                "codes": [{"system": snomed, "code": "185345009", "display": "Encounter for symptom"}],
            },
            "End": {
                "type": "ConditionEnd",
                "codes": [{"system": snomed, "code": "420174000", "display": "Allergy to wheat (finding)"}],
            },
            "Drug": {
                "type": "MedicationOrder",
                "codes": [{"system": "RxNorm", "code": "308182", "display": "Amoxicillin"}],
            },
        },
    )
    write_module(
        tmp_path,
        "sub/metabolic.json",
        {
            "A": {
                "type": "ConditionOnset",
                "codes": [{"system": snomed, "code": "15777000", "display": "Prediabetes"}],
            },
            "B": {
                "type": "ConditionOnset",
                "codes": [{"system": snomed, "code": "444814009", "display": "Viral sinusitis"}],
            },
        },
    )
    assert derive_synthea_vocabulary(tmp_path) == {
        "15777000": VocabularyEntry(
            code="15777000", display="Prediabetes", semantic_tag=None, sources=("sub/metabolic.json",)
        ),
        "444814009": VocabularyEntry(
            code="444814009",
            display="Viral sinusitis (disorder)",
            semantic_tag="disorder",
            sources=("sinusitis.json", "sub/metabolic.json"),
        ),
    }


def test_gold_codes_are_added_without_replacing_module_entries():
    module = {
        "1": VocabularyEntry(code="1", display="A (disorder)", semantic_tag="disorder", sources=("a.json",))
    }
    merged = add_case_set_codes(module, [("1", "A"), ("2", "B (finding)")])
    assert merged == {
        "1": module["1"],
        "2": VocabularyEntry(code="2", display="B (finding)", semantic_tag="finding", sources=("case_set",)),
    }
    assert (
        vocabulary_fingerprint(merged)
        == vocabulary_fingerprint(dict(merged))
        != vocabulary_fingerprint(module)
    )


def test_installed_vocabulary_is_derived_quickly_and_covers_the_current_codes_of_installed_modules():
    started = time.perf_counter()
    vocabulary = derive_synthea_vocabulary()
    assert time.perf_counter() - started < 5
    installed = {
        p.relative_to(installed_modules_dir()).as_posix() for p in installed_modules_dir().rglob("*.json")
    }
    rows = list(csv.DictReader(CONDITIONS_TSV.open(), delimiter="\t"))
    current = [r for r in rows if "current" in r["seen_in"].split(";")]
    # A current code must be present when a module file that emits it ships with the installed Synthea.
    expected = {r["snomed_code"] for r in current if installed & set(r["module_files"].split(";"))}
    assert expected and expected <= set(vocabulary)
