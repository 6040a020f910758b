import gc
import hashlib
import shutil
import subprocess
import time
from datetime import date, timedelta
from pathlib import Path

import orjson
import pyarrow.parquet as pq
import pytest

from tasks.benchmarks.snomed.case import Case, RecordCondition
from tasks.benchmarks.snomed.cases.build import build_case_set
from tasks.benchmarks.snomed.cases.case_set import (
    build_cases,
    case_set_vocabulary,
    detect_source_format,
    finish_case_set,
    source_fingerprint,
)
from tasks.benchmarks.snomed.cases.case_set import write_case_set as write_case_set_files
from tasks.benchmarks.snomed.cases.loading import load_case_set
from tasks.benchmarks.snomed.cases.records import gold_conditions, read_fhir_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.benchmarks.snomed.contracts import CASES, cases_from_table
from tasks.benchmarks.snomed.vocabulary import VocabularyEntry, derive_synthea_vocabulary
from tasks.data.patients.omop import eunomia_duckdb_path
from tasks.data.patients.records import SourceError
from tests.snomed_fixtures import CASES as FIXTURE_CASES
from tests.snomed_fixtures import case as fixture_case
from tests.snomed_fixtures import write_case_set
from tests.tasks.benchmarks.snomed.test_cases_reference import REFERENCE
from tests.tasks.data.patients.test_fhir import PATIENT_BUNDLE, quantity, write_bundles
from tests.tasks.data.patients.test_omop import write_tables
from tests.tasks.data.patients.test_synthea_csv import write_export

CONDITIONS = [
    RecordCondition(code="1", display="Asthma (disorder)", semantic_tag="disorder"),
    RecordCondition(code="2", display="Stress (finding)", stop=date(2020, 1, 1), semantic_tag="finding"),
    RecordCondition(code="3", display="Refugee (person)", semantic_tag="person"),
    RecordCondition(code="4", display="Prediabetes", semantic_tag=None),
]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (CaseSetSettings(), (("1", "2", "4"), ("Asthma (disorder)", "Stress (finding)", "Prediabetes"))),
        (CaseSetSettings(gold_scope="active"), (("1", "4"), ("Asthma (disorder)", "Prediabetes"))),
        (CaseSetSettings(gold_tags=("person",)), (("3", "4"), ("Refugee (person)", "Prediabetes"))),
    ],
)
def test_gold_set_follows_scope_and_tags_and_keeps_unknown_tags(settings, expected):
    assert gold_conditions(CONDITIONS, settings) == expected


def case(case_id: str) -> Case:
    return Case(
        case_id=case_id,
        source="reference",
        patient_id=case_id,
        reference_date=None,
        age_years=None,
        sex=None,
        conditions=(),
        observations=(),
        gold_codes=(),
        gold_displays=(),
    )


def test_split_and_sample_are_seeded_by_patient_and_independent_of_input_order():
    cases = [case(f"p{i}") for i in range(200)]
    settings = CaseSetSettings(train_share=0.25, sample_size=50, seed=7)
    finished = finish_case_set(cases, settings)
    assert finished == finish_case_set(list(reversed(cases)), settings)
    assert [c.case_id for c in finished] == sorted(c.case_id for c in finished) and len(finished) == 50
    assert 5 <= sum(c.split == "train" for c in finished) <= 20
    assert finish_case_set(cases, settings.model_copy(update={"seed": 8})) != finished
    with pytest.raises(ValueError, match="duplicate case ids"):
        finish_case_set([case("a"), case("a")], CaseSetSettings())


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda d: write_bundles(d), "fhir"),
        (lambda d: write_export(d), "synthea_csv"),
        (lambda d: write_tables(d), "omop"),
    ],
)
def test_source_format_is_detected_from_folder_contents(tmp_path, make, expected):
    assert detect_source_format(make(tmp_path)) == expected


def test_source_format_of_files_and_unknown_folders(tmp_path):
    (tmp_path / "reference.json").write_text("[]")
    (tmp_path / "cdm.duckdb").write_bytes(b"")
    assert [detect_source_format(tmp_path / n) for n in ("reference.json", "cdm.duckdb")] == [
        "reference",
        "omop",
    ]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="cannot tell the format"):
        detect_source_format(tmp_path / "empty")


def write_large_bundle(folder: Path) -> Path:
    weights = [
        quantity("29463-7", "Body Weight", f"2019-01-{1 + i % 28:02d}", 70.0 + i, "kg") for i in range(3000)
    ]
    bundle = {**PATIENT_BUNDLE, "entry": PATIENT_BUNDLE["entry"] + [{"resource": r} for r in weights]}
    (folder / "p1.json").write_bytes(orjson.dumps(bundle))
    return folder


def write_long_omop_history(folder: Path) -> Path:
    write_tables(folder)
    days = [date(2000, 1, 1) + timedelta(days=i) for i in range(3000)]
    episodes = "".join(f"1,4112343,195662009,{day},{day}\n" for day in days)
    with (folder / "condition_occurrence.csv").open("a") as handle:
        handle.write(episodes)
    return folder


@pytest.mark.parametrize(
    ("write", "source_format"), [(write_large_bundle, "fhir"), (write_long_omop_history, "omop")]
)
def test_cases_are_read_without_garbage_collections_and_the_collector_is_restored(
    tmp_path, write, source_format
):
    # Read records are ~10^5 containers without cycles; the collector traversing them again and again as
    # they pile up took half the reading time. Resumed, it may run once (its allocation count kept rising
    # while paused); before the fix these sources set off dozens of collections.
    source = write(tmp_path)
    vocabulary = derive_synthea_vocabulary()
    collections = []

    def count(phase, info):
        collections.append(phase == "start")

    gc.callbacks.append(count)
    try:
        cases = build_cases(source, source_format, CaseSetSettings(), vocabulary).cases
    finally:
        gc.callbacks.remove(count)
    assert sum(collections) <= 1
    assert (len(cases) >= 1, gc.isenabled()) == (True, True)
    (tmp_path / "broken.json").write_bytes(b"{")
    with pytest.raises(SourceError, match=r"broken\.json: not valid JSON: unexpected end of data"):
        build_cases(tmp_path, "fhir", CaseSetSettings(), vocabulary)
    assert gc.isenabled()


def test_case_set_is_byte_identical_when_built_twice_and_reads_back(tmp_path):
    (tmp_path / "csv").mkdir()
    source = write_export(tmp_path / "csv")
    first = Path(
        build_case_set.fn(source=str(source), out_dir=str(tmp_path / "a"), settings=CaseSetSettings())
    )
    second = Path(
        build_case_set.fn(source=str(source), out_dir=str(tmp_path / "b"), settings=CaseSetSettings())
    )
    assert (first / "cases.parquet").read_bytes() == (second / "cases.parquet").read_bytes()
    assert (first / "manifest.json").read_bytes() == (second / "manifest.json").read_bytes()
    table = pq.read_table(first / "cases.parquet")
    assert table.schema.equals(CASES)
    assert [c.case_id for c in cases_from_table(table)] == ["p1", "p2"]
    manifest = orjson.loads((first / "manifest.json").read_bytes())
    assert manifest["source"]["format"] == "synthea_csv"
    assert manifest["settings"] == CaseSetSettings().model_dump(mode="json")
    assert manifest["counts"] == {
        "cases": 2,
        "train": 0,
        "test": 2,
        "cases_without_gold": 1,
        "gold_codes": 2,
        "distinct_gold_codes": 2,
        "conditions": 3,
        "observations": 3,
    }
    assert manifest["vocabulary"]["codes"] > 300 and set(manifest) == {
        "table",
        "cases_sha256",
        "source",
        "settings",
        "counts",
        "vocabulary",
        "skipped",
    }
    assert manifest["skipped"] == {"conditions of another code system than SNOMED CT": 1}


def test_the_source_fingerprint_is_of_content_not_of_where_it_lies(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    for folder in ("a", "b"):
        (tmp_path / folder / "patients.csv").write_bytes(b"Id\np1\n")
        (tmp_path / folder / "conditions.csv").write_bytes(b"PATIENT,CODE\np1,59621000\n")
    (tmp_path / "reference.json").write_bytes(b"[]")
    (tmp_path / "a" / "copy of reference.json").write_bytes(b"[]")
    assert source_fingerprint(tmp_path / "reference.json") == hashlib.sha256(b"[]").hexdigest()
    assert source_fingerprint(tmp_path / "a" / "copy of reference.json") == hashlib.sha256(b"[]").hexdigest()
    (tmp_path / "a" / "copy of reference.json").unlink()
    assert source_fingerprint(tmp_path / "a") == source_fingerprint(tmp_path / "b")
    # Within a folder the names are content: patients.csv and conditions.csv swapped is another export.
    (tmp_path / "b" / "patients.csv").rename(tmp_path / "b" / "x")
    (tmp_path / "b" / "conditions.csv").rename(tmp_path / "b" / "patients.csv")
    (tmp_path / "b" / "x").rename(tmp_path / "b" / "conditions.csv")
    assert source_fingerprint(tmp_path / "a") != source_fingerprint(tmp_path / "b")


def test_the_vocabulary_adds_the_gold_codes_not_the_records_other_conditions():
    history = RecordCondition(code="161414005", display="History of travel (situation)")
    gold = RecordCondition(code="59621000", display="Essential hypertension (disorder)")
    record = fixture_case("p1", "test", (gold.code, gold.display)).model_copy(
        update={"conditions": (history, gold)}
    )
    assert case_set_vocabulary([record], {}) == {
        gold.code: VocabularyEntry(
            code=gold.code, display=gold.display, semantic_tag="disorder", sources=("case_set",)
        )
    }


def test_an_interrupted_build_leaves_the_previous_case_set_whole(tmp_path):
    folder = write_case_set(tmp_path / "cases", FIXTURE_CASES)
    before = {name: (folder / name).read_bytes() for name in ("cases.parquet", "manifest.json")}

    def interrupted(_sha256):
        raise KeyboardInterrupt  # Ctrl-C after the new cases.parquet is written, before its manifest

    with pytest.raises(KeyboardInterrupt):
        write_case_set_files(FIXTURE_CASES[:1], interrupted, folder)
    assert {name: (folder / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases"]
    assert load_case_set(folder) == FIXTURE_CASES


def test_a_rebuild_replaces_the_case_set_but_never_a_folder_holding_other_files(tmp_path):
    folder = write_case_set(tmp_path / "cases", FIXTURE_CASES)
    write_case_set(folder, FIXTURE_CASES[:1])
    assert load_case_set(folder) == FIXTURE_CASES[:1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases"]
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(ValueError) as error:
        write_case_set(folder, FIXTURE_CASES)
    assert str(error.value) == (
        f"{folder} holds files other than cases.parquet, manifest.json (notes.txt): "
        "choose a new or empty folder"
    )
    assert load_case_set(folder) == FIXTURE_CASES[:1]


def test_snomed_cases_flow_builds_a_case_set(tmp_path, prefect_harness):
    from flows.snomed_cases import snomed_cases

    out_dir = snomed_cases(source=str(write_bundles(tmp_path)), out_dir=str(tmp_path / "out"))
    assert [c.case_id for c in cases_from_table(pq.read_table(Path(out_dir) / "cases.parquet"))] == ["p1"]


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("synthea") is None and not Path(".venv/bin/synthea").exists(), reason="no synthea"
)
def test_two_generated_synthea_patients_build_cases_whose_codes_are_in_the_vocabulary(tmp_path):
    synthea = shutil.which("synthea") or ".venv/bin/synthea"
    subprocess.run(
        [synthea, "-p", "2", "-s", "7", "-r", "20240101", "-o", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    vocabulary = derive_synthea_vocabulary()
    started = time.perf_counter()
    cases = read_fhir_cases(tmp_path / "fhir", CaseSetSettings(), vocabulary).cases
    print(f"FHIR: {len(cases) / (time.perf_counter() - started):.1f} patients/s")
    assert len(cases) >= 2
    assert all(c.conditions and c.observations and c.age_years is not None for c in cases)
    assert {x.code for c in cases for x in c.conditions} <= set(vocabulary)


@pytest.mark.slow
def test_eunomia_case_set_from_its_duckdb(tmp_path):
    settings = CaseSetSettings(sample_size=5, seed=1)
    started = time.perf_counter()
    out_dir = Path(
        build_case_set.fn(source=str(eunomia_duckdb_path()), out_dir=str(tmp_path), settings=settings)
    )
    print(f"Eunomia: {2694 / (time.perf_counter() - started):.0f} patients/s")
    cases = cases_from_table(pq.read_table(out_dir / "cases.parquet"))
    assert len(cases) == 5 and all(c.source == "omop" and c.gold_codes for c in cases)


@pytest.mark.skipif(not REFERENCE.exists(), reason="shared reference data not present")
def test_the_500_reference_cases_build_into_the_same_bytes_twice_with_their_settings_recorded(tmp_path):
    settings = CaseSetSettings(train_share=0.2, seed=3, gold_scope="active", max_observations=5)
    first, second = (
        Path(build_case_set.fn(source=str(REFERENCE), out_dir=str(tmp_path / name), settings=settings))
        for name in ("a", "b")
    )
    cases_bytes = (first / "cases.parquet").read_bytes()
    assert cases_bytes == (second / "cases.parquet").read_bytes()
    assert (first / "manifest.json").read_bytes() == (second / "manifest.json").read_bytes()
    manifest = orjson.loads((first / "manifest.json").read_bytes())
    cases = cases_from_table(pq.read_table(first / "cases.parquet"))
    assert (
        len(cases),
        len({c.case_id for c in cases}),
        {c.source for c in cases},
        manifest["cases_sha256"],
        manifest["source"]["format"],
        manifest["settings"],
        manifest["counts"]["cases"],
        manifest["counts"]["train"] + manifest["counts"]["test"],
    ) == (
        500,
        500,
        {"reference"},
        hashlib.sha256(cases_bytes).hexdigest(),
        "reference",
        {
            "reference_date": None,
            "gold_scope": "active",
            "gold_tags": ["disorder", "finding"],
            "max_observations": 5,
            "train_share": 0.2,
            "sample_size": None,
            "seed": 3,
        },
        500,
        500,
    )
    assert 0 < manifest["counts"]["train"] < 500 and max(len(c.observations) for c in cases) == 5
