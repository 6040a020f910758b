"""The oracle data's split by patient: its sizes, the refusal of a split left without a patient (with the
fix), and why a data folder's split holds no pair."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.benchmarks.snomed.oracle.splits import (
    DEFAULT_SPLIT,
    MORE_PATIENTS_SEARCHED,
    check_every_split_has_a_patient,
    empty_split_reason,
    empty_splits,
    fewest_patients,
    split_by_patient,
    split_sizes,
)
from tasks.core.preflight import UserError

DEFAULT_SHARES_TEXT = "train 80%, validation 10%, test 10%"
NO_VALIDATION_NOR_TEST = (
    f"the split by patient ({DEFAULT_SHARES_TEXT}) gives validation and test none (oracle-train needs train "
    "and validation pairs, patient-eval test's)"
)
LARGER_CASE_SET = "build a case set of 3 or more patients (threadmed snomed cases)"
# Shares as a config may give them: three non-negative weights, not all zero, in the splits' order.
SHARES = (
    st.tuples(*[st.integers(0, 20)] * 3)
    .filter(any)
    .map(
        lambda weights: {
            name: weight / sum(weights)
            for name, weight in zip(("train", "validation", "test"), weights, strict=True)
        }
    )
)


def test_the_split_is_by_patient_seeded_and_leaves_no_split_empty():
    ids = [f"p{i}" for i in range(20)]
    split = split_by_patient(ids, seed=3)
    assert split == split_by_patient(list(reversed(ids)), seed=3)
    assert sorted(split) == sorted(ids)
    assert [sum(s == name for s in split.values()) for name in ("train", "validation", "test")] == [16, 2, 2]
    assert sorted(split_by_patient(["a", "b", "c"], seed=0).values()) == ["test", "train", "validation"]
    assert split_by_patient(["a"], seed=0) == {"a": "train"}


def test_the_split_is_the_one_earlier_data_folders_were_written_with():
    ids = [f"p{i}" for i in range(12)]
    assert split_by_patient(ids, seed=0) == {
        "p1": "test", "p7": "validation", "p6": "train", "p3": "train", "p8": "train", "p10": "train",
        "p11": "train", "p5": "train", "p2": "train", "p0": "train", "p9": "train", "p4": "train",
    }  # fmt: skip
    assert split_by_patient(ids[:4], seed=1, shares={"train": 0.1, "validation": 0.45, "test": 0.45}) == {
        "p3": "test", "p0": "test", "p2": "validation", "p1": "validation",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("count", "sizes"),
    [
        (0, {"train": 0, "validation": 0, "test": 0}),
        (1, {"train": 1, "validation": 0, "test": 0}),
        (2, {"train": 2, "validation": 0, "test": 0}),
        (3, {"train": 1, "validation": 1, "test": 1}),
        (14, {"train": 12, "validation": 1, "test": 1}),
        (15, {"train": 11, "validation": 2, "test": 2}),
        (500, {"train": 400, "validation": 50, "test": 50}),
    ],
)
def test_split_sizes_of_the_default_shares(count, sizes):
    assert split_sizes(count, DEFAULT_SPLIT) == sizes


@given(ids=st.sets(st.text(min_size=1, max_size=4), max_size=40), seed=st.integers(0, 3), shares=SHARES)
def test_every_patient_gets_one_split_and_each_split_its_size(ids, seed, shares):
    split = split_by_patient(ids, seed, shares)
    sizes = split_sizes(len(ids), shares)
    assert (set(split), sum(sizes.values())) == (ids, len(ids))
    assert {name: sum(s == name for s in split.values()) for name in shares} == sizes
    assert empty_splits(len(ids), shares) == [name for name in shares if sizes[name] == 0]


@given(count=st.integers(0, 60), shares=SHARES)
def test_the_fewest_patients_found_fill_every_split_from_there_on_and_one_fewer_does_not(count, shares):
    fewest = fewest_patients(count, shares)
    searched = range(count + 1, count + 1 + MORE_PATIENTS_SEARCHED)
    if fewest is None:
        assert empty_splits(searched[-1], shares)
    else:
        assert all(not empty_splits(more, shares) for more in range(fewest, searched.stop))
        assert fewest == searched.start or empty_splits(fewest - 1, shares)


@given(count=st.integers(0, 300))
def test_with_the_default_shares_three_patients_or_more_fill_every_split(count):
    assert (empty_splits(count) == []) == (count >= 3)
    assert fewest_patients(count) == max(3, count + 1)


@pytest.mark.parametrize(
    ("count", "limit", "available", "message", "option"),
    [
        (2, 2, 30, f"--limit 2 gives 2 patients: {NO_VALIDATION_NOR_TEST}; use --limit 3 or more", "--limit"),
        (2, None, 2, f"the case set has 2 patients: {NO_VALIDATION_NOR_TEST}; {LARGER_CASE_SET}", "--cases"),
        (1, 1, 2, f"--limit 1 gives 1 patient: {NO_VALIDATION_NOR_TEST}; {LARGER_CASE_SET}", "--limit"),
        # A limit above the case set's size is not what keeps the patients out.
        (2, 5, 2, f"the case set has 2 patients: {NO_VALIDATION_NOR_TEST}; {LARGER_CASE_SET}", "--cases"),
    ],
)
def test_a_split_left_without_a_patient_is_refused_naming_the_fix(count, limit, available, message, option):
    with pytest.raises(UserError) as refused:
        check_every_split_has_a_patient(count, DEFAULT_SPLIT, limit, available)
    assert (str(refused.value), refused.value.option) == (message, option)


def test_shares_that_no_count_of_patients_fills_ask_for_other_shares():
    shares = {"train": 0.0, "validation": 0.5, "test": 0.5}
    with pytest.raises(UserError) as refused:
        check_every_split_has_a_patient(4, shares, None, 4)
    assert str(refused.value).endswith(
        "; give every split a larger share than train 0%, validation 50%, test 50%"
    )


def test_every_split_with_a_patient_passes():
    check_every_split_has_a_patient(3, DEFAULT_SPLIT, 3, 30)


def data_manifest(cases: dict[str, int], kept: dict[str, int]) -> dict:
    return {
        "counts": {
            "kept": {split: {"positive": n, "negative": 0} for split, n in kept.items()},
            "cases": cases,
        },
        "split": DEFAULT_SPLIT,
    }


@pytest.mark.parametrize(
    ("cases", "kept", "reason"),
    [
        ({"train": 2, "validation": 0, "test": 0}, {"train": 10, "validation": 0, "test": 0},
         f"the data folder's split by patient ({DEFAULT_SHARES_TEXT}) gave validation no patient of its 2; "
         "rebuild it with `threadmed snomed oracle-data` from 3 or more patients (a higher --limit, or a "
         "larger case set)"),
        ({"train": 8, "validation": 1, "test": 1}, {"train": 40, "validation": 0, "test": 5},
         "no pair of its 1 validation patient(s) was kept: each was rejected or its call failed (see the "
         "data folder's manifest.json); re-run `threadmed snomed oracle-data` into it to retry failed calls, "
         "or use another --teacher"),
        ({"train": 8, "validation": 1, "test": 1}, {"train": 40, "validation": 5, "test": 5}, None),
    ],
)  # fmt: skip
def test_why_a_data_folder_holds_no_validation_pair(cases, kept, reason):
    assert empty_split_reason(data_manifest(cases, kept), "validation") == reason
