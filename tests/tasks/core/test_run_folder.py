"""A run folder belongs to the benchmark whose run took it; every other benchmark's evaluate and report
refuse it, in one line naming the folder and its benchmark."""

import pytest

from tasks.benchmarks.consult.run_data import check_run_folder as check_consult_run
from tasks.benchmarks.registry import BENCHMARKS
from tasks.benchmarks.snomed.run_data import check_run_folder as check_snomed_run
from tasks.benchmarks.threadmed.run_data import check_run_folder as check_threadmed_run
from tasks.core.preflight import UserError
from tasks.core.run_folder import (
    BENCHMARK_FILE,
    check_run_folder_benchmark,
    claim_run_folder,
    run_folder_benchmark,
)

REPORT_CHECKS = {"threadmed": check_threadmed_run, "snomed": check_snomed_run, "consult": check_consult_run}


def test_the_first_run_claims_the_folder_and_only_its_benchmark_may_run_there_again(tmp_path):
    check_run_folder_benchmark(tmp_path, "snomed")  # a new folder belongs to nobody: a check writes nothing
    assert run_folder_benchmark(tmp_path) is None and not (tmp_path / BENCHMARK_FILE).exists()
    claim_run_folder(tmp_path, "snomed")
    claim_run_folder(tmp_path, "snomed")  # a re-run to resume
    assert run_folder_benchmark(tmp_path) == "snomed"
    with pytest.raises(UserError) as error:
        claim_run_folder(tmp_path, "consult")
    assert (str(error.value), error.value.option) == (
        f"{tmp_path} belongs to the snomed benchmark, not consult: give its runs another --out folder",
        None,
    )
    assert run_folder_benchmark(tmp_path) == "snomed"


@pytest.mark.parametrize("reporting", sorted(BENCHMARKS))
def test_every_report_refuses_a_run_folder_of_every_other_benchmark(tmp_path, reporting):
    for owner in sorted(set(BENCHMARKS) - {reporting}):
        claim_run_folder(tmp_path / owner, owner)
        with pytest.raises(UserError) as error:
            REPORT_CHECKS[reporting](tmp_path / owner)
        assert str(error.value) == (
            f"{tmp_path / owner} belongs to the {owner} benchmark, not {reporting}: "
            "pass run folders of its own"
        )
    claim_run_folder(tmp_path / reporting, reporting)
    with pytest.raises(UserError, match=r"not a finished|not an evaluation run"):  # its own: on to files
        REPORT_CHECKS[reporting](tmp_path / reporting)
