"""The call keys a Dask cluster's workers hold on its scheduler (tasks/llm/cluster.py's `KeysOnScheduler`),
its handlers driven on an event loop of the test's own, the scheduler a stand-in with the workers it knows.
tests/tasks/llm/test_cluster.py runs them on a real cluster."""

import asyncio
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from tasks.llm.cluster import HOLD_KEY_HANDLER, LET_GO_KEY_HANDLER, KeysOnScheduler


def started(*workers: str) -> tuple[KeysOnScheduler, SimpleNamespace]:
    scheduler = SimpleNamespace(handlers={}, stream_handlers={}, workers=dict.fromkeys(workers))
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
        return [first, waited, await second, keys.holders, dict(keys.waiting)]

    assert asyncio.run(scenario()) == [True, (False, {"k": 1}), True, {"k": "b"}, {}]


def test_the_keys_of_a_worker_the_scheduler_removes_go_back_at_once():
    async def scenario() -> list[object]:
        keys, scheduler = started("a", "b")
        hold = scheduler.handlers[HOLD_KEY_HANDLER]
        held = [await hold(key="k1", worker="a"), await hold(key="k2", worker="a")]
        waiting = asyncio.ensure_future(hold(key="k1", worker="b"))
        await settled()
        del scheduler.workers["a"]
        keys.remove_worker(scheduler, "a", stimulus_id="killed")
        return [held, await waiting, keys.holders]

    assert asyncio.run(scenario()) == [[True, True], True, {"k1": "b"}]


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

    assert asyncio.run(scenario()) == [False, False, {}]


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
            granted = {(worker, key) for worker, key, ask in asks if ask.done() and ask.result()}
            assert set(keys.holders.items()) <= {(key, worker) for worker, key in granted}
            assert all(key in keys.holders for key in keys.waiting)
            assert all(ask.done() or key in keys.holders for _, key, ask in asks)
        for _, _, ask in asks:
            ask.cancel()

    asyncio.run(scenario())
