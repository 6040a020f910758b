"""Consultation simulator: turns per second against the target of under 1 ms a turn.

Every generated case of a fixed case set is asked every template's paraphrases, twice: `cold` starts with
an empty match cache (each distinct question is embedded and matched once, in the first case), `warm`
hits the cache throughout; `uncached_match_ms` is one question embedded and matched with no cache.
Wall time of `Simulator.answer` only; building the simulator is counted apart.
"""

import time
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.cases import CaseGenerationSettings, generate_cases
from tasks.benchmarks.consult.inquiry.templates import TemplateSpace, load_catalogue
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.simulator import Simulator

CASES, SEED = 200, 0
TARGET_MS = 1.0


def run_turns(cases, kb, space, questions) -> tuple[int, float, float]:
    """(turns, seconds answering, seconds building simulators) over every case."""
    turns, answering, building = 0, 0.0, 0.0
    for case in cases:
        started = time.perf_counter()
        patient = Simulator(case, kb, space)
        building += time.perf_counter() - started
        started = time.perf_counter()
        for question in questions:
            patient.answer(question)
        answering += time.perf_counter() - started
        turns += len(questions)
    return turns, answering, building


def uncached_match_ms(space: TemplateSpace, questions: list[str]) -> float:
    started = time.perf_counter()
    for question in questions:
        space.scores(space.vectors([question])[0])
    return 1000 * (time.perf_counter() - started) / len(questions)


def main(out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    kb = load_kb()
    cases = generate_cases(kb, CaseGenerationSettings(n=CASES, seed=SEED))
    space = TemplateSpace(load_catalogue())  # fresh: its match cache starts empty
    questions = [text for template in space.catalogue.templates for text in template.paraphrases]
    results: dict[str, Any] = {
        "cases": len(cases),
        "questions": len(questions),
        "target_ms": TARGET_MS,
        "uncached_match_ms": uncached_match_ms(space, questions),
    }
    for phase in ("cold", "warm"):
        turns, answering, building = run_turns(cases, kb, space, questions)
        results[phase] = {
            "turns": turns,
            "ms_per_turn": 1000 * answering / turns,
            "turns_per_s": turns / answering,
            "ms_per_simulator_built": 1000 * building / len(cases),
        }
    return results


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        f"{results['cases']} cases x {results['questions']} questions; "
        f"target < {results['target_ms']} ms/turn; an uncached match {results['uncached_match_ms']:.4f} ms"
    ]
    for phase in ("cold", "warm"):
        measured = results[phase]
        verdict = "met" if measured["ms_per_turn"] < results["target_ms"] else "MISSED"
        lines.append(
            f"{phase}: {measured['turns_per_s']:,.0f} turns/s, {measured['ms_per_turn']:.4f} ms/turn "
            f"({verdict}); {measured['ms_per_simulator_built']:.3f} ms to build a simulator"
        )
    return lines
