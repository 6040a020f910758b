"""Reply parsers on hostile text: a megabyte of each text through the judge parser (ThReadMed's numeric
scale and the consultation's yes/no scale) and the SNOMED final-answer parser, against the target of under
a second each.

Each text is a reply no model should send but any model or proxy can: runs of brackets, braces or quotes
(the JSON scan's worst cases), a grade's name followed by a run of stars (the judge's `stated` pattern took
cubic time on it), line breaks (the SNOMED marker rescanned them from each line: quadratic), labels and
fields repeated on every line (a regex match each), digits, characters that NFKC normalisation expands
18-fold, and a final answer of 80,000 codes. Each is parsed REPEATS times; the fastest run
counts (the machine is shared). The result each parser gives is kept beside its time.
"""

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tasks.benchmarks.consult.judge import FQR_SCALE
from tasks.benchmarks.snomed.codes import parse_final_answer
from tasks.benchmarks.threadmed.scorer import SCORE_SCALE
from tasks.evals.verdicts import read_verdict

SIZE, REPEATS = 1_000_000, 3
TARGET_S = 1.0


def repeated(piece: str, size: int = SIZE) -> str:
    """`piece` repeated to `size` characters."""
    return (piece * (size // len(piece) + 1))[:size]


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
}
PARSERS: dict[str, Callable[[str], Any]] = {
    "judge, 0/0.5/1 (ThReadMed)": lambda text: read_verdict(text, SCORE_SCALE),
    "judge, yes/no (consultation FQR)": lambda text: read_verdict(text, FQR_SCALE),
    "SNOMED final answer": parse_final_answer,
}


def fastest(parse: Callable[[str], Any], text: str) -> tuple[float, Any]:
    """The fastest of REPEATS parses of `text`, in seconds, and what the parser returned."""
    best, result = float("inf"), None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = parse(text)
        best = min(best, time.perf_counter() - start)
    return best, result


def main(out_dir: Path) -> dict[str, Any]:
    out_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"size": SIZE, "target_s": TARGET_S, "parsers": {}}
    for name, make in HOSTILE_TEXTS.items():
        text = make()
        for parser, parse in PARSERS.items():
            seconds, result = fastest(parse, text)
            results["parsers"].setdefault(parser, {})[name] = {
                "seconds": seconds,
                "result": repr(result)[:60],
            }
    return results


def summary_lines(results: dict[str, Any]) -> list[str]:
    lines = [
        f"{results['size']:,} characters of each hostile text, fastest of {REPEATS}; target < {TARGET_S} s"
    ]
    for parser, texts in results["parsers"].items():
        slowest = max(texts, key=lambda name: texts[name]["seconds"])
        worst = texts[slowest]["seconds"]
        verdict = "met" if worst < results["target_s"] else "NOT MET"
        lines.append(f"{parser}: slowest {worst:.3f} s ({slowest}), target {verdict}")
        lines += [f"  {name}: {entry['seconds']:.3f} s -> {entry['result']}" for name, entry in texts.items()]
    return lines
