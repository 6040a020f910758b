"""The work a reply parser does, counted, never timed: the text its patterns are handed and the JSON decoder
calls it makes, and the repeats in its patterns that could backtrack.

A pattern whose every unbounded repeat is possessive (or atomic) never gives back what a repeat took, so
one attempt costs at most the text it reads; a parser handing its patterns a bounded multiple of its input,
each pattern written so that a failed attempt reads only a run no other attempt reads (a parser's module
says why for each), reads its input in linear time. The tests count the first two and check the third.
"""

import json
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from re import _constants as sre  # type: ignore[attr-defined]  # Python's own regex parser (3.11)
from re import _parser as sre_parser  # type: ignore[attr-defined]
from typing import Any
from unittest import mock

from tasks.core import json_text


@dataclass
class Work:
    """Characters handed to patterns (from the position each search starts at) and JSON decoder calls."""

    handed: int = 0
    decoded: int = 0
    calls: list[str] = field(default_factory=list)


class CountingPattern:
    """A compiled pattern that adds to `work` every text it is asked to search, from where it starts."""

    def __init__(self, pattern: re.Pattern[str], work: Work, name: str) -> None:
        self.pattern, self.work, self.name = pattern, work, name

    def _count(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> tuple[str, int, int]:
        self.work.handed += max(0, min(len(string), endpos) - pos)
        self.work.calls.append(self.name)
        return string, pos, endpos

    def finditer(self, *args: Any) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(*self._count(*args))

    def search(self, *args: Any) -> re.Match[str] | None:
        return self.pattern.search(*self._count(*args))

    def match(self, *args: Any) -> re.Match[str] | None:
        return self.pattern.match(*self._count(*args))

    def fullmatch(self, *args: Any) -> re.Match[str] | None:
        return self.pattern.fullmatch(*self._count(*args))

    def findall(self, *args: Any) -> list[Any]:
        return self.pattern.findall(*self._count(*args))

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        self._count(string)
        return self.pattern.split(string, maxsplit)


@contextmanager
def counting(
    module: Any, names: list[str], patterns: dict[str, re.Pattern[str]] | None = None
) -> Iterator[Work]:
    """Count the work of `module`'s compiled patterns `names`, of the patterns in the dict `patterns` (a
    scale's, put back afterwards), and of every JSON decoder call (tasks/core/json_text.py) in the block."""
    work = Work()
    decoder = json.JSONDecoder

    class CountingDecoder(decoder):
        def raw_decode(self, s: str, idx: int = 0) -> tuple[Any, int]:
            work.decoded += 1
            return super().raw_decode(s, idx)

    patterns = patterns if patterns is not None else {}
    saved = dict(patterns)
    module_patterns = {name: CountingPattern(getattr(module, name), work, name) for name in names}
    with (
        mock.patch.object(json_text.json, "JSONDecoder", CountingDecoder),
        mock.patch.multiple(module, **module_patterns),
    ):
        patterns.update({name: CountingPattern(pattern, work, name) for name, pattern in saved.items()})
        try:
            yield work
        finally:
            patterns.update(saved)


def backtracking_repeats(pattern: re.Pattern[str]) -> list[str]:
    """The unbounded repeats of `pattern` that may give back what they took (neither possessive nor in an
    atomic group), as the parser shows them; an empty list for a pattern that cannot backtrack into one."""
    found: list[str] = []

    def walk(items: Any, atomic: bool) -> None:
        for op, value in items:
            if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
                low, high, inner = value
                if high == sre.MAXREPEAT and not atomic:
                    found.append(f"{op} {low}.. of {list(inner)}")
                walk(inner, atomic)
            elif op is sre.POSSESSIVE_REPEAT:
                walk(value[2], atomic)
            elif op is sre.ATOMIC_GROUP:
                walk(value, True)
            elif op is sre.SUBPATTERN:
                walk(value[3], atomic)
            elif op is sre.BRANCH:
                for branch in value[1]:
                    walk(branch, atomic)
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                walk(value[1], atomic)
            elif op is sre.GROUPREF_EXISTS:
                walk(value[1], atomic)
                if value[2] is not None:
                    walk(value[2], atomic)

    walk(sre_parser.parse(pattern.pattern, pattern.flags), False)
    return found
