import pytest

from tasks.benchmarks.registry import BENCHMARKS, benchmark, run_kind
from tasks.benchmarks.snomed.config import SnomedConfig
from tasks.benchmarks.snomed.contracts import CONVERSATIONS, PREDICTIONS, SCORES
from tasks.benchmarks.snomed.oracle.benchmark import ORACLE_DATA
from tasks.benchmarks.snomed.patient_bench.benchmark import PATIENT_BENCH
from tasks.benchmarks.snomed.scorer import score_interview
from tasks.benchmarks.snomed.solver import interview_case
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, RESPONSES
from tasks.benchmarks.threadmed.scorer import judge_thread
from tasks.benchmarks.threadmed.solver import answer_thread
from tasks.evals.config import EvalConfig


def test_every_benchmark_is_registered_with_its_config_solver_scorer_and_tables():
    threadmed, snomed = benchmark("threadmed"), benchmark("snomed")
    assert {"threadmed": threadmed, "snomed": snomed, "consult": benchmark("consult")} == BENCHMARKS
    assert (threadmed.config_model, threadmed.solve, threadmed.score) == (
        EvalConfig,
        answer_thread,
        judge_thread,
    )
    assert (threadmed.tables.solved, threadmed.tables.scored) == ((RESPONSES,), (JUDGMENTS,))
    assert (threadmed.prompts_dir / "judge_rubric_v1.txt").is_file()
    assert (snomed.config_model, snomed.solve, snomed.score) == (
        SnomedConfig,
        interview_case,
        score_interview,
    )
    assert (snomed.tables.solved, snomed.tables.scored) == ((CONVERSATIONS,), (PREDICTIONS, SCORES))
    assert (snomed.prompts_dir / "clinician_v1.txt").is_file()


def test_an_unknown_benchmark_is_refused_with_the_known_names():
    with pytest.raises(
        ValueError, match="unknown benchmark 'medqa'; known benchmarks: consult, snomed, threadmed"
    ):
        benchmark("medqa")


def test_the_run_kinds_are_the_benchmarks_and_the_oracle_tools_by_their_recorded_names():
    assert run_kind("snomed-oracle-data") is ORACLE_DATA
    assert run_kind("snomed-patient-bench") is PATIENT_BENCH
    assert {name: run_kind(name) for name in BENCHMARKS} == BENCHMARKS
    known = "consult, snomed, snomed-oracle-data, snomed-patient-bench, threadmed"
    with pytest.raises(ValueError, match=f"unknown run kind 'medqa'; known run kinds: {known}$"):
        run_kind("medqa")
