"""The oracle data's leak check per teacher answer, against the whole vocabulary of the 500 reference cases.

Every answer the offline teacher writes for an oracle-data run on the reference cases is checked against
every condition of the run's vocabulary (validation.leak_matcher): the compiled matcher's cost per answer
(CPU time, median of a few rounds), beside the pairwise rule it compiles (each condition, each name, each
window in turn: test_leak.pairwise_leaks), and on a vocabulary ten times larger (each display again with ten
made-up qualifiers) to show how the cost grows with the names. Long answers show the cost per word.
"""

import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tasks.benchmarks.snomed.cases.reference import read_reference_cases
from tasks.benchmarks.snomed.cases.settings import CaseSetSettings
from tasks.benchmarks.snomed.oracle.benchmark import ORACLE_DATA
from tasks.benchmarks.snomed.oracle.config import OracleDataConfig
from tasks.benchmarks.snomed.oracle.offline_teacher import OFFLINE_TEACHER, offline_teacher_reply
from tasks.benchmarks.snomed.oracle.plan import run_vocabulary
from tasks.benchmarks.snomed.oracle.validation import leak_matcher, vocabulary_leak_names
from tasks.benchmarks.snomed.patient import leak_names_by_code, load_lexicon
from tasks.benchmarks.snomed.vocabulary import VocabularyEntry
from tasks.evals.config import EvaluationSettings, ModelSpec
from tests.perf.bench_snomed_cases import REFERENCE_JSON
from tests.snomed_fixtures import write_case_set
from tests.tasks.benchmarks.snomed.test_leak import pairwise_leaks

ROUNDS = 3
SCALE = 10
LONG_ANSWER_WORDS = (100, 1_000, 10_000)


def teacher_answers(cases_dir: Path, run_dir: Path) -> list[str]:
    """The offline teacher's answer to every pair an oracle-data run on the case set asks for."""
    config = OracleDataConfig(models=[ModelSpec(model=OFFLINE_TEACHER)])
    settings = EvaluationSettings[OracleDataConfig](dataset_dir=cases_dir, run_dir=run_dir, config=config)
    replies = [
        offline_teacher_reply(list(call.messages), call.params)
        for job in ORACLE_DATA.plan(settings).jobs
        for call in job.solve.calls
    ]
    return [json.loads(reply)["answer"] for reply in replies]


def cpu_seconds(work: Callable[[], Any]) -> float:
    """The median CPU time of ROUNDS runs of `work` (CPU, not wall time: the machine is shared)."""
    timings = []
    for _ in range(ROUNDS):
        started = time.process_time()
        work()
        timings.append(time.process_time() - started)
    return statistics.median(timings)


def scaled(vocabulary: dict[str, VocabularyEntry], times: int) -> dict[str, VocabularyEntry]:
    """Each condition `times` over, each copy with a made-up qualifier word: as many distinct names."""
    return {
        f"{code}{copy:02d}": entry.model_copy(update={"display": f"{entry.display} zq{copy}x"})
        for code, entry in vocabulary.items()
        for copy in range(times)
    }


def answer_costs(vocabulary: dict[str, VocabularyEntry], answers: Sequence[str]) -> dict[str, Any]:
    names = vocabulary_leak_names(vocabulary, leak_names_by_code(load_lexicon()))
    build = cpu_seconds(lambda: leak_matcher.__wrapped__(names))
    matcher = leak_matcher(names)
    check = cpu_seconds(lambda: [matcher.hits(answer) for answer in answers])
    return {
        "conditions": len(names.codes),
        "names": matcher.name_count,
        "build_ms": 1000 * build,
        "us_per_answer": 1e6 * check / len(answers),
        "leaking_answers": sum(bool(matcher.hits(answer)) for answer in answers),
    }


def main(out_dir: Path) -> dict[str, Any]:
    cases = read_reference_cases(REFERENCE_JSON, CaseSetSettings()).cases
    cases_dir = out_dir / "cases"
    if not cases_dir.exists():
        write_case_set(cases_dir, cases)
    answers = teacher_answers(cases_dir, out_dir / "run")
    vocabulary = run_vocabulary(cases)
    extra_names = leak_names_by_code(load_lexicon())
    codes, displays = list(vocabulary), [entry.display for entry in vocabulary.values()]
    sample = answers[:: max(1, len(answers) // 200)]  # the pairwise rule is slow: a sample of the answers
    pairwise = cpu_seconds(lambda: [pairwise_leaks(a, codes, displays, extra_names) for a in sample])
    words = " ".join(answers).split()
    rng = random.Random(0)
    matcher = leak_matcher(vocabulary_leak_names(vocabulary, extra_names))
    per_word = {}
    for count in LONG_ANSWER_WORDS:
        long_answer = " ".join(rng.choice(words) for _ in range(count))
        per_word[count] = 1e6 * cpu_seconds(lambda text=long_answer: matcher.hits(text)) / count
    return {
        "cases": len(cases),
        "answers": len(answers),
        "mean_answer_words": len(words) / len(answers),
        "vocabulary": answer_costs(vocabulary, answers),
        "pairwise_us_per_answer": 1e6 * pairwise / len(sample),
        f"vocabulary_x{SCALE}": answer_costs(scaled(vocabulary, SCALE), answers),
        "us_per_word_of_long_answers": per_word,
    }


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        f"{results['answers']:,} offline-teacher answers ({results['mean_answer_words']:.1f} words on "
        f"average) of the {results['cases']} reference cases"
    ]
    for key in ("vocabulary", f"vocabulary_x{SCALE}"):
        cost = results[key]
        lines.append(
            f"{key}: {cost['conditions']:,} conditions, {cost['names']:,} names, compiled in "
            f"{cost['build_ms']:.0f} ms; {cost['us_per_answer']:.0f} us of CPU per answer; "
            f"{cost['leaking_answers']} answers leak"
        )
    lines.append(f"pairwise rule, same vocabulary: {results['pairwise_us_per_answer']:.0f} us per answer")
    per_word = ", ".join(f"{n:,} words {us:.1f}" for n, us in results["us_per_word_of_long_answers"].items())
    lines.append(f"us per word of one long answer: {per_word}")
    return lines
