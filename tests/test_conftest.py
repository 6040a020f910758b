"""How tests/conftest.py orders the collection for xdist's work stealing: the longest chains start at once."""

from pathlib import Path
from typing import NamedTuple

from tests.conftest import worker_runs


class Item(NamedTuple):
    """The two things `worker_runs` reads of a pytest item: its file and its markers."""

    path: Path
    name: str
    markers: frozenset[str]

    def get_closest_marker(self, marker: str) -> str | None:
        return marker if marker in self.markers else None


def items(file: str, count: int, *markers: str) -> list[Item]:
    return [Item(Path(file), f"{file}{index}", frozenset(markers)) for index in range(count)]


def test_files_started_first_are_dealt_one_per_run_and_lead_it_then_single_long_tests_then_the_rest():
    chain, guide = items("chain", 3, "slow", "starts_first"), items("guide", 2, "slow", "starts_first")
    many, single = items("many", 4, "slow"), items("single", 1, "slow")
    fast = items("fast", 6)
    # Eight items a run; the larger slow file goes to the run with fewer slow tests.
    runs = worker_runs([*fast, *many, *single, *guide, *chain], workers=2)
    assert [[item.name for item in run] for run in runs] == [
        ["chain0", "chain1", "chain2", "single0", "fast0", "fast1", "fast2", "fast3"],
        ["guide0", "guide1", "many0", "many1", "many2", "many3", "fast4", "fast5"],
    ]


def test_with_runs_to_spare_the_other_slow_files_go_to_the_runs_no_chain_leads():
    chain, guide = items("chain", 3, "slow", "starts_first"), items("guide", 2, "slow", "starts_first")
    many, single, pair = items("many", 4, "slow"), items("single", 1, "slow"), items("pair", 2, "slow")
    fast = items("fast", 9)
    # Seven items a run; before, `single` went to the chain's run, which had the fewest slow tests.
    runs = worker_runs([*fast, *many, *single, *pair, *guide, *chain], workers=3)
    assert [[item.name for item in run] for run in runs] == [
        ["chain0", "chain1", "chain2", "fast0", "fast1", "fast2", "fast3"],
        ["guide0", "guide1", "fast4", "fast5", "fast6", "fast7", "fast8"],
        ["single0", "pair0", "pair1", "many0", "many1", "many2", "many3"],
    ]
