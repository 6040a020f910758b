"""The call keys a Dask cluster's workers hold on its scheduler (`KeysOnScheduler`,
tasks/llm/cluster_keys.py), its handlers driven on an event loop of the test's own, the scheduler a stand-in
with the workers it knows; and when a worker holding a key reads the ledger (`ClusterKeys`).
tests/tasks/llm/test_cluster.py runs them on a real cluster."""

import asyncio
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tasks.llm import cluster_keys
from tasks.llm.cluster_keys import HOLD_KEY_HANDLER, LET_GO_KEY_HANDLER, ClusterKeys, KeyHeld, KeysOnScheduler
from tasks.llm.scheduler_values import READ_HANDLER, SchedulerValue, ValueChange, ValuesOnScheduler


def started(*workers: str) -> tuple[KeysOnScheduler, SimpleNamespace]:
    """The plugin on a stand-in scheduler that knows `workers`, with the values a hold's change is made to."""
    scheduler = SimpleNamespace(handlers={}, stream_handlers={}, workers=dict.fromkeys(workers))
    ValuesOnScheduler().start(scheduler)
    keys = KeysOnScheduler()
    keys.start(scheduler)
    return keys, scheduler


async def settled() -> None:
    """Let every task that can go on do so."""
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_key_another_worker_holds_is_waited_for_until_that_worker_lets_go():
    async def scenario() -> list[object]:
        keys, scheduler = started("a", "b")
        hold, let_go = scheduler.handlers[HOLD_KEY_HANDLER], scheduler.stream_handlers[LET_GO_KEY_HANDLER]
        first = await hold(key="k", worker="a")
        second = asyncio.ensure_future(hold(key="k", worker="b"))
        await settled()
        waited = (second.done(), dict(keys.waiting))
        let_go(key="k", worker="b")  # not its key: nothing changes
        await settled()
        let_go(key="k", worker="a")
        return [first, waited, await second, keys.holders, dict(keys.waiting), keys.epoch]

    *outcome, epoch = asyncio.run(scenario())
    first, second = KeyHeld(epoch, 0, 0)._asdict(), KeyHeld(epoch, 1, 1)._asdict()
    assert outcome == [first, (False, {"k": 1}), second, {"k": "b"}, {}]


def test_the_keys_of_a_worker_the_scheduler_removes_go_back_at_once():
    async def scenario() -> list[object]:
        keys, scheduler = started("a", "b")
        hold = scheduler.handlers[HOLD_KEY_HANDLER]
        held = [await hold(key="k1", worker="a"), await hold(key="k2", worker="a")]
        waiting = asyncio.ensure_future(hold(key="k1", worker="b"))
        await settled()
        del scheduler.workers["a"]
        keys.remove_worker(scheduler, "a", stimulus_id="killed")
        after = KeyHeld(**await waiting)
        return [[held["returned_at"] for held in held], (after.returns, after.returned_at > 0), keys.holders]

    # Both keys went back with the worker (it may have recorded their calls before it died), k1 among them.
    assert asyncio.run(scenario()) == [[0, 0], (2, True), {"k1": "b"}]


def test_a_worker_the_scheduler_no_longer_knows_holds_no_key():
    """It would never be removed again, so what it held would never go back."""

    async def scenario() -> list[object]:
        keys, scheduler = started("a", "b")
        hold, let_go = scheduler.handlers[HOLD_KEY_HANDLER], scheduler.stream_handlers[LET_GO_KEY_HANDLER]
        gone_at_once = await hold(key="k", worker="gone")
        await hold(key="k", worker="a")
        waiting = asyncio.ensure_future(hold(key="k", worker="b"))
        await settled()
        del scheduler.workers["b"]  # removed while it waited
        keys.remove_worker(scheduler, "b", stimulus_id="lost")
        let_go(key="k", worker="a")
        return [gone_at_once, await waiting, keys.holders]

    assert asyncio.run(scenario()) == [None, None, {}]


def test_a_hold_is_answered_with_the_number_of_the_key_s_last_return_or_the_last_one_forgotten(monkeypatch):
    monkeypatch.setattr(cluster_keys, "REMEMBERED_KEYS", 2)

    async def scenario() -> list[tuple[int, int]]:
        _, scheduler = started("a")
        hold, let_go = scheduler.handlers[HOLD_KEY_HANDLER], scheduler.stream_handlers[LET_GO_KEY_HANDLER]
        for key in ["x", "y", "x", "z"]:  # returns 1 to 4: y (2) is then the oldest remembered, and forgotten
            await hold(key=key, worker="a")
            let_go(key=key, worker="a")
        answers = []
        for key in ["x", "z", "y", "never held"]:
            held = KeyHeld(**await hold(key=key, worker="a"))
            answers.append((held.returned_at, held.returns))
            let_go(key=key, worker="a")
        return answers

    # y's return (7) pushes out x's (5): a key never held is then answered with 5.
    assert asyncio.run(scenario()) == [(3, 4), (4, 5), (2, 6), (5, 7)]


operations = st.lists(
    st.tuples(st.sampled_from(["hold", "let go", "remove"]), st.sampled_from("ab"), st.sampled_from("xy")),
    max_size=30,
)


@given(operations)
def test_a_key_is_held_by_one_worker_at_most_and_never_free_while_a_worker_waits_for_it(steps):
    """Whatever the order of holds, let-gos and removals: a key has one holder, a worker holds what the
    plugin says it does, and no worker waits for a key nobody holds (a wake-up was lost)."""

    async def scenario() -> None:
        keys, scheduler = started("a", "b")
        hold, let_go = scheduler.handlers[HOLD_KEY_HANDLER], scheduler.stream_handlers[LET_GO_KEY_HANDLER]
        asks: list[tuple[str, str, asyncio.Future[bool]]] = []
        for operation, worker, key in steps:
            if operation == "hold" and worker in scheduler.workers:
                asks.append((worker, key, asyncio.ensure_future(hold(key=key, worker=worker))))
            elif operation == "let go":
                let_go(key=key, worker=worker)
            elif operation == "remove":
                scheduler.workers.pop(worker, None)
                keys.remove_worker(scheduler, worker, stimulus_id="test")
            await settled()
            granted = {(worker, key) for worker, key, ask in asks if ask.done() and ask.result() is not None}
            assert set(keys.holders.items()) <= {(key, worker) for worker, key in granted}
            assert all(key in keys.holders for key in keys.waiting)
            assert all(ask.done() or key in keys.holders for _, key, ask in asks)
        for _, _, ask in asks:
            ask.cancel()

    asyncio.run(scenario())


class Link:
    """A worker's link to the stand-in scheduler: each ask runs its handler to the end (no key is held by
    another worker when these tests ask), each tell at once."""

    def __init__(self, scheduler: SimpleNamespace, address: str) -> None:
        self.scheduler, self.worker = scheduler, SimpleNamespace(address=address)

    def ask(self, handler: str, **arguments: Any) -> Any:
        return asyncio.run(self.scheduler.handlers[handler](**arguments))

    def tell(self, handler: str, **arguments: Any) -> None:
        self.scheduler.stream_handlers[handler](**arguments, worker=self.worker.address)


class Ledger:
    """What one worker's ledger has read of the calls every worker recorded (`written`)."""

    def __init__(self, written: set[str]) -> None:
        self.root, self.written, self.read, self.reads = Path("ledger"), written, set[str](), 0

    def refresh(self) -> None:
        self.read, self.reads = set(self.written), self.reads + 1

    def make(self, key: str) -> bool:
        """Look `key` up, else record its call (a worker's own records are read as it writes them);
        whether it was made."""
        if key in self.read:
            return False
        self.written.add(key)
        self.read.add(key)
        return True


def test_a_holder_reads_the_ledger_only_when_its_key_went_back_since_its_last_read():
    _, scheduler = started("a", "b")
    written: set[str] = set()
    ledgers = {worker: Ledger(written) for worker in "ab"}
    holders = {worker: ClusterKeys(Link(scheduler, worker)) for worker in "ab"}

    def make(worker: str, key: str) -> tuple[bool, int]:
        with holders[worker].hold(key, ledgers[worker]):
            made = ledgers[worker].make(key)
        return made, ledgers[worker].reads

    steps = [("a", "k1"), ("a", "k2"), ("b", "k3"), ("b", "k1"), ("b", "k4"), ("a", "k3"), ("a", "k5")]
    # a reads at its first hold, then not for keys no one has let go since; b reads at its first hold
    # (after k1 and k2 went back), then not for k1 (read) nor k4; a reads again for k3, b's since a's read.
    assert [make(worker, key) for worker, key in steps] == [
        (True, 1),
        (True, 1),
        (True, 1),
        (False, 1),
        (True, 1),
        (False, 2),
        (True, 2),
    ]


calls = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["x", "y", "z", "w"]), st.booleans()), max_size=40
)


@given(calls, st.integers(min_value=1, max_value=3), st.sets(st.integers(min_value=0, max_value=39)))
def test_no_call_is_made_twice_whatever_the_order_of_the_workers_the_forgotten_keys_and_restarts(
    steps, remembered, restarts
):
    """Two workers make calls one after another (some read the ledger beforehand, as a lookup does after
    call_store.REFRESH_S); the scheduler remembers `remembered` returns and restarts before the steps in
    `restarts`: each key is made once."""
    _, scheduler = started("a", "b")
    written: set[str] = set()
    ledgers = {worker: Ledger(written) for worker in "ab"}
    holders = {worker: ClusterKeys(Link(scheduler, worker)) for worker in "ab"}
    made: list[str] = []
    with patch.object(cluster_keys, "REMEMBERED_KEYS", remembered):
        for index, (worker, key, read_before) in enumerate(steps):
            if index in restarts:
                KeysOnScheduler().start(scheduler)  # a new scheduler: its numbers start again
            if read_before:
                ledgers[worker].refresh()
            with holders[worker].hold(key, ledgers[worker]):
                if ledgers[worker].make(key):
                    made.append(key)
    assert sorted(made) == sorted({key for _, key, _ in steps})


def appended(key: str, made: list[str]) -> tuple[list[str], int]:
    """A change of a scheduler value carried by a hold (as a call's reservation is): `key` appended to the
    list; its result, how many there are now (never None)."""
    return [*made, key], len(made) + 1


def refused(value: object) -> tuple[object, object]:
    raise ValueError("refused")


def change_of(rule: Any, link: Link) -> ValueChange:
    return SchedulerValue(link, "made").change_of(rule, unset=[])


def test_a_change_rides_on_a_hold_when_the_holder_has_read_the_key_s_last_return_else_the_holder_reads():
    _, scheduler = started("a", "b")
    ledgers = {worker: Ledger(set()) for worker in "ab"}
    links = {worker: Link(scheduler, worker) for worker in "ab"}
    holders = {worker: ClusterKeys(links[worker]) for worker in "ab"}

    def hold(worker: str, key: str) -> tuple[object, int]:
        with holders[worker].hold(
            key, ledgers[worker], change_of(partial(appended, key), links[worker])
        ) as changed:
            ledgers[worker].make(key)
        return changed, ledgers[worker].reads

    steps = [("a", "k1"), ("a", "k2"), ("b", "k1"), ("a", "k3"), ("a", "k1")]
    # a has read nothing at its first hold; then k2 and k3 never went back; b has read nothing; k1 went back
    # (b's return) after a's read.
    assert [hold(worker, key) for worker, key in steps] == [(None, 1), (1, 1), (None, 1), (2, 1), (None, 2)]
    assert scheduler.handlers[READ_HANDLER](name="made", unset=None) == ["k2", "k3"]


def test_a_change_that_fails_with_the_hold_lets_go_of_the_key_and_the_worker_gets_its_error():
    keys, scheduler = started("a")
    link, ledger = Link(scheduler, "a"), Ledger(set())
    holder = ClusterKeys(link)
    with holder.hold("k0", ledger):  # a first read of the ledger: the next hold's change is made
        pass
    with pytest.raises(ValueError, match="refused"), holder.hold("k", ledger, change_of(refused, link)):
        pass
    assert (keys.holders, ledger.reads) == ({}, 1)


@given(calls, st.integers(min_value=1, max_value=3), st.sets(st.integers(min_value=0, max_value=39)))
def test_a_change_rides_on_a_hold_only_when_the_holder_has_read_every_record_of_its_key(
    steps, remembered, restarts
):
    """Two workers make calls one after another, as in the test above, each hold carrying a change: either
    the scheduler made it with the hold, and the holder's ledger had read every record of the key, or the
    holder read the ledger (and would make the change itself); never both, never neither."""
    _, scheduler = started("a", "b")
    written: set[str] = set()
    ledgers = {worker: Ledger(written) for worker in "ab"}
    links = {worker: Link(scheduler, worker) for worker in "ab"}
    holders = {worker: ClusterKeys(links[worker]) for worker in "ab"}
    carried: list[str] = []
    with patch.object(cluster_keys, "REMEMBERED_KEYS", remembered):
        for index, (worker, key, read_before) in enumerate(steps):
            if index in restarts:
                KeysOnScheduler().start(scheduler)
            if read_before:
                ledgers[worker].refresh()
            ledger, reads = ledgers[worker], ledgers[worker].reads
            had_read = key not in written or key in ledger.read
            with holders[worker].hold(
                key, ledger, change_of(partial(appended, key), links[worker])
            ) as changed:
                assert (changed is not None, ledger.reads > reads) in {(True, False), (False, True)}
                assert changed is None or had_read
                if changed is not None:
                    carried.append(key)
                ledger.make(key)
    assert scheduler.handlers[READ_HANDLER](name="made", unset=[]) == carried
