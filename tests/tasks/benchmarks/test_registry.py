import pytest

from tasks.benchmarks.registry import BENCHMARKS, benchmark
from tasks.benchmarks.threadmed.contracts import JUDGMENTS, RESPONSES
from tasks.benchmarks.threadmed.scorer import judge_thread
from tasks.benchmarks.threadmed.solver import answer_thread


def test_threadmed_is_registered_with_its_solver_scorer_and_tables():
    threadmed = benchmark("threadmed")
    assert {"threadmed": threadmed} == BENCHMARKS
    assert (threadmed.solve, threadmed.score) == (answer_thread, judge_thread)
    assert (threadmed.tables.solved, threadmed.tables.scored) == (RESPONSES, JUDGMENTS)
    assert (threadmed.prompts_dir / "judge_rubric_v1.txt").is_file()


def test_an_unknown_benchmark_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match="unknown benchmark 'snomed'; known benchmarks: threadmed"):
        benchmark("snomed")
