"""What tests/conftest.py sets up: how it orders the collection for xdist's work stealing (the longest chains
start at once), and websockets' pings kept off the global `random` that hypothesis watches."""

import asyncio
import random
from pathlib import Path
from typing import NamedTuple

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

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
    # Eight items a run; each chain weighs its run's share (5 of the 10 slow tests), so the larger slow file
    # goes to the first run of the two tied, and the single test to the other.
    runs = worker_runs([*fast, *many, *single, *guide, *chain], workers=2)
    assert [[item.name for item in run] for run in runs] == [
        ["chain0", "chain1", "chain2", "many0", "many1", "many2", "many3", "fast0"],
        ["guide0", "guide1", "single0", "fast1", "fast2", "fast3", "fast4", "fast5"],
    ]


def test_a_chain_weighs_its_run_s_share_of_the_slow_tests_so_the_long_single_ones_go_elsewhere():
    chain, many, pair = (
        items("chain", 3, "slow", "starts_first"),
        items("many", 6, "slow"),
        items("pair", 2, "slow"),
    )
    single, other = items("single", 1, "slow"), items("other", 1, "slow")
    fast = items("fast", 8)
    # 13 slow tests, a share of 4.3 each: counted as 3 tests, the chain's run took `single` too.
    runs = worker_runs([*fast, *many, *pair, *single, *other, *chain], workers=3)
    assert [[item.name for item in run] for run in runs] == [
        ["chain0", "chain1", "chain2", "fast0", "fast1", "fast2", "fast3"],
        ["many0", "many1", "many2", "many3", "many4", "many5", "fast4"],
        ["single0", "other0", "pair0", "pair1", "fast5", "fast6", "fast7"],
    ]


def test_a_websocket_ping_leaves_the_global_random_state_as_it_was():
    """Prefect's events client pings its server from a background thread; hypothesis warns when the global
    `random` state moves while it generates an example."""

    async def stays_open(connection: ServerConnection) -> None:
        await connection.wait_closed()

    async def ping_moves_the_global_state() -> bool:
        async with serve(stays_open, "127.0.0.1", 0) as server:
            port = server.sockets[0].getsockname()[1]
            async with connect(f"ws://127.0.0.1:{port}") as client:
                before = random.getstate()
                await (await client.ping())
                return random.getstate() != before

    assert asyncio.run(ping_moves_the_global_state()) is False
