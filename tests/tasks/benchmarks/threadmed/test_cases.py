import pytest

from tasks.benchmarks.threadmed.cases import check_dataset_build, draw_sample, load_sample
from tasks.core.preflight import UserError
from tasks.evals.config import SampleSpec
from tests.eval_fixtures import THREAD_TEXTS, write_dataset


def threads(counts: dict[str, int], split: str = "test") -> list[dict]:
    return [
        {"thread_id": f"{stratum}-{split}-{i:03d}", "stratum": stratum, "split": split}
        for stratum, n in counts.items()
        for i in range(n)
    ]


def test_quotas_draw_per_stratum_with_a_seed():
    pool = threads({"short": 10, "medium": 6, "long": 2})
    spec = SampleSpec(quotas={"short": 3, "medium": 2, "long": 5}, seed=1)
    sample = draw_sample(pool, spec)
    strata = [tid.split("-")[0] for tid in sample]
    assert (strata.count("short"), strata.count("medium"), strata.count("long")) == (3, 2, 2)
    assert draw_sample(pool, spec) == sample
    assert draw_sample(pool, spec.model_copy(update={"seed": 2})) != sample


def test_the_sample_keeps_to_its_split_and_a_limit_takes_a_prefix():
    pool = threads({"short": 8}) + threads({"short": 5}, split="train")
    everything = draw_sample(pool, SampleSpec(seed=3))
    assert len(everything) == 8 and all("-test-" in tid for tid in everything)
    assert draw_sample(pool, SampleSpec(seed=3, limit=3)) == everything[:3]


def test_load_sample_returns_threads_in_turn_order(tmp_path):
    build = write_dataset(tmp_path)
    cases = {case.thread_id: case for case in load_sample(build, SampleSpec())}
    assert sorted(cases) == ["ankle", "headache", "rash"]
    rash = THREAD_TEXTS["rash"][1]
    assert cases["rash"].questions == tuple(q for q, _ in rash)
    assert cases["rash"].answers == tuple(a for _, a in rash)
    assert (cases["rash"].stratum, cases["headache"].stratum) == ("long", "medium")


def test_a_versioned_build_folder_points_at_its_latest_version(tmp_path):
    write_dataset(tmp_path / "releases" / "latest")
    with pytest.raises(UserError) as caught:
        check_dataset_build(tmp_path / "releases")
    assert (str(caught.value), caught.value.option) == (
        f"{tmp_path / 'releases'} is not a dataset build (no dataset/answered/threads.parquet); "
        f"pass {tmp_path / 'releases' / 'latest'} (the newest version of a --versioned build)",
        "--dataset",
    )
    check_dataset_build(tmp_path / "releases" / "latest")
