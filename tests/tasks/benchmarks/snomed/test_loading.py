import pytest

from tasks.benchmarks.snomed.cases.case_set import write_cases_parquet
from tasks.benchmarks.snomed.cases.loading import (
    case_set_fingerprint,
    check_case_set,
    load_case_set,
    load_sample,
)
from tasks.core.preflight import UserError
from tasks.evals.config import SampleSpec
from tests.snomed_fixtures import HYPERTENSION, SINUSITIS, case, write_case_set

PHARYNGITIS = ("195662009", "Acute viral pharyngitis (disorder)")


# Three test cases (one with no gold) and two train cases, in which hypertension is the most frequent.
CASES = [
    case("t1", "test", HYPERTENSION, SINUSITIS),
    case("t2", "test", PHARYNGITIS),
    case("t3", "test"),
    case("r1", "train", HYPERTENSION, SINUSITIS),
    case("r2", "train", HYPERTENSION),
]


def test_a_folder_without_cases_or_manifest_is_not_a_case_set(tmp_path):
    with pytest.raises(UserError) as error:
        check_case_set(tmp_path)
    assert (str(error.value), error.value.option) == (
        f"{tmp_path} is not a SNOMED case set (no cases.parquet); pass the --out folder of "
        "`threadmed snomed cases`",
        "--cases",
    )
    write_cases_parquet(CASES, tmp_path / "cases.parquet")
    with pytest.raises(UserError, match=r"\(no manifest\.json\)"):
        check_case_set(tmp_path)


def test_cases_that_are_not_the_manifests_are_refused_on_every_read(tmp_path):
    folder = write_case_set(tmp_path / "cases", CASES)
    recorded = case_set_fingerprint(folder)
    # A rebuild of 2 cases whose manifest was never written: the old manifest names the 5 cases' file.
    write_case_set(tmp_path / "other", CASES[:2])
    (folder / "cases.parquet").write_bytes((tmp_path / "other" / "cases.parquet").read_bytes())
    message = (
        f"{folder / 'cases.parquet'} does not match the sha256 its manifest records ({recorded[:12]}): "
        "rebuild the case set with `threadmed snomed cases`"
    )
    for read in (check_case_set, load_case_set, lambda d: load_sample(d, SampleSpec(split="test"))):
        with pytest.raises(UserError) as error:
            read(folder)
        assert (str(error.value), error.value.option) == (message, "--cases")


def test_the_case_set_reads_back_in_file_order(tmp_path):
    assert load_case_set(write_case_set(tmp_path / "cases", CASES)) == CASES


def test_the_sample_is_the_split_in_a_seeded_order_independent_of_the_files_order(tmp_path):
    forward = write_case_set(tmp_path / "forward", CASES)
    backward = write_case_set(tmp_path / "backward", CASES[::-1])
    order = [c.case_id for c in load_sample(forward, SampleSpec())]
    assert order == ["t3", "t1", "t2"]
    assert [c.case_id for c in load_sample(backward, SampleSpec())] == order
    assert [c.case_id for c in load_sample(forward, SampleSpec(seed=4))] == ["t3", "t2", "t1"]
    assert [c.case_id for c in load_sample(forward, SampleSpec(split="train"))] == ["r2", "r1"]


def test_the_limit_keeps_the_first_cases_of_the_seeded_order(tmp_path):
    folder = write_case_set(tmp_path / "cases", CASES)
    assert load_sample(folder, SampleSpec(limit=2)) == [CASES[2], CASES[0]]


def test_an_unknown_split_names_the_case_sets_splits(tmp_path):
    folder = write_case_set(tmp_path / "cases", CASES)
    with pytest.raises(UserError) as error:
        load_sample(folder, SampleSpec(split="val"))
    assert (str(error.value), error.value.option) == (
        "the case set has no 'val' cases; its splits: ['test', 'train']",
        "--split",
    )
