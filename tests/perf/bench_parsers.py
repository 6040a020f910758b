"""Reply parsers on hostile text: a megabyte of each text through the judge parser (ThReadMed's numeric scale
and the consultation's yes/no scale), the SNOMED final-answer parser and the consultation's plan reader,
against the target of under a second each. Each text is a reply no model should send but any model or
proxy can: runs of brackets, braces or quotes (the JSON scan's worst cases), a grade's name followed by a
run of stars (the judge's `stated` pattern took cubic time on it), line breaks (the SNOMED marker
rescanned them from each line: quadratic), labels and fields repeated on every line (a regex match each),
digits, characters that NFKC normalisation expands 18-fold, a final answer of 80,000 codes, plan lists
repeated and one plan of 20,000 items. Each is parsed REPEATS times; the fastest run counts (the machine
is shared). The result each parser gives is kept beside its time."""

import os
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.judge import FQR_SCALE
from tasks.benchmarks.consult.kb.loading import load_kb
from tasks.benchmarks.consult.treatment import read_plan_reply
from tasks.benchmarks.snomed.codes import parse_final_answer
from tasks.benchmarks.threadmed.scorer import SCORE_SCALE
from tasks.evals.verdicts import read_verdict

SIZE, REPEATS = 1_000_000, 3
TARGET_S = 1.0


def repeated(piece: str, size: int = SIZE) -> str:
    """`piece` repeated to `size` characters."""
    return (piece * (size // len(piece) + 1))[:size]


PLAN_ITEM = '{"drug": "paracetamol", "dose": 500, "unit": "mg", "frequency_per_day": 4}'
HOSTILE_TEXTS: dict[str, Callable[[], str]] = {
    "open brackets": lambda: "[" * SIZE,
    "open braces": lambda: "{" * SIZE,
    "bracket pairs": lambda: repeated("[]"),
    "nested object openers": lambda: repeated('{"a":'),
    "brace-quote runs": lambda: repeated('{"'),
    "JSON objects with a grade": lambda: repeated('{"SCORE": 1}\n'),
    "strings broken by line breaks": lambda: repeated('["a\n'),
    "a name, then stars": lambda: "score" + "*" * (SIZE - 5),
    "a name for a turn, then stars": lambda: "Score for turn 2" + "*" * (SIZE - 16),
    "label lines": lambda: repeated("Score: 1\n"),
    "quoted fields without values": lambda: repeated('"score": '),
    "grade sentences": lambda: repeated("The answer is incorrect. "),
    "line breaks": lambda: "\n" * (SIZE - 22) + "Final Answer: 44054006",
    "final-answer markers": lambda: repeated("<final answer>"),
    "digits": lambda: "1" * SIZE,
    "NFKC ligatures (18x)": lambda: "\ufdfa" * SIZE,
    "full-width digits": lambda: "\uff11" * SIZE,
    "a final answer of 80,000 codes": lambda: "<Final Answer>: [" + ", ".join(['"44054006"'] * 80_000) + "]",
    "plan lists": lambda: repeated(f"Plan: [{PLAN_ITEM}]\n"),
    "a plan of 20,000 items": lambda: "[" + ", ".join([PLAN_ITEM] * 20_000) + "]",
}
knowledge_base = cache(load_kb)  # loaded when first used, not when `python -m tests.perf` starts
PARSERS: dict[str, Callable[[str], Any]] = {
    "judge, 0/0.5/1 (ThReadMed)": lambda text: read_verdict(text, SCORE_SCALE),
    "judge, yes/no (consultation FQR)": lambda text: read_verdict(text, FQR_SCALE),
    "SNOMED final answer": parse_final_answer,
    "consultation plan": lambda text: read_plan_reply(text, knowledge_base()),
}


def fastest(parse: Callable[[str], Any], text: str) -> tuple[float, float, Any]:
    """The fastest of REPEATS parses of `text` in wall seconds and in CPU seconds (what a quiet machine's wall
    time would be: the shared machine's load inflates the wall time), and what the parser returned."""
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(REPEATS):
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        result = parse(text)
        wall = min(wall, time.perf_counter() - wall_start)
        cpu = min(cpu, time.process_time() - cpu_start)
    return wall, cpu, result


def main(out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"size": SIZE, "target_s": TARGET_S, "load": os.getloadavg()[0], "parsers": {}}
    for name, make in HOSTILE_TEXTS.items():
        text = make()
        for parser, parse in PARSERS.items():
            wall, cpu, result = fastest(parse, text)
            results["parsers"].setdefault(parser, {})[name] = {
                "seconds": wall,
                "cpu_seconds": cpu,
                "result": repr(result)[:60],
            }
    return results


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        f"{results['size']:,} characters of each hostile text, fastest of {REPEATS} (CPU s; wall s at load "
        f"{results['load']:.1f}); target < {TARGET_S} CPU s"
    ]
    for parser, texts in results["parsers"].items():
        slowest = max(texts, key=lambda name: texts[name]["cpu_seconds"])
        worst = texts[slowest]["cpu_seconds"]
        verdict = "met" if worst < results["target_s"] else "NOT MET"
        lines.append(f"{parser}: slowest {worst:.3f} s ({slowest}), target {verdict}")
        lines += [
            f"  {name}: {entry['cpu_seconds']:.3f} s (wall {entry['seconds']:.3f} s) -> {entry['result']}"
            for name, entry in texts.items()
        ]
    return lines
