"""Provider limits, the spending cap and call keys held across the worker processes of a Dask cluster.

One local cluster of two worker processes (distributed's LocalCluster, processes=True) for the module;
each test runs calls on both workers at once against the counting test server, which sees every request.
Limits held per process would let each worker take them whole: every test would then see twice as much.
"""

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from distributed import Client, LocalCluster
from hypothesis import given
from hypothesis import strategies as st

from tasks.llm.budget import BudgetState, SpendingBudget
from tasks.llm.call import complete
from tasks.llm.cluster import BudgetGone, shared_by_cluster
from tasks.llm.cluster_keys import KeysOnScheduler
from tasks.llm.cluster_limits import LEASE_TURNS, claim_start
from tasks.llm.ledger import CallLedger
from tasks.llm.limits import limiter_for
from tasks.llm.request import CallOptions, ChatRequest, Prices, ProviderLimits
from tasks.llm.scheduler_values import NAME_PREFIX, ValuesOnScheduler
from tests.llm_server import LLMServer

pytestmark = pytest.mark.slow

WORKERS = 2
THREADS = 8  # threads of each worker making calls at once


@pytest.fixture(scope="module")
def cluster(one_dask_cluster_at_a_time_in_module) -> Iterator[Client]:
    with (
        LocalCluster(
            n_workers=WORKERS,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        ) as local,
        Client(local) as client,
    ):
        yield client


def on_each_worker(
    client: Client, work: Callable[..., Any], *arguments: Any, at_once: bool = True
) -> list[Any]:
    """`work(*arguments, worker)` on every worker (`worker`: its index), all at once or one after the other;
    their results, in the order of the workers."""
    addresses = worker_addresses(client)
    assert len(addresses) == WORKERS
    futures = []
    for worker, address in enumerate(addresses):
        futures.append(client.submit(work, *arguments, worker, workers=[address], pure=False))
        if not at_once:
            futures[-1].result()
    return client.gather(futures)


def worker_addresses(client: Client) -> list[str]:
    """The workers' addresses, asked of the scheduler: `client.scheduler_info()` answers from a cache with no
    workers in it when its query fails (an OSError it only logs), as on a loaded machine."""
    return sorted(client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.workers)))


def request(url: str, question: str) -> ChatRequest:
    return ChatRequest(model="openai/m", messages=({"role": "user", "content": question},), api_base=url)


def ask(
    url: str, ledger_dir: Path, questions: list[str], options: CallOptions, worker: int
) -> list[str | None]:
    """On a worker: `complete()` every question (each worker its own ones, unless the same are given) from
    THREADS threads at once; the outcomes' error kinds (None: answered)."""
    ledger = CallLedger(ledger_dir)
    own = [question.format(worker=worker) for question in questions]
    with ThreadPoolExecutor(THREADS) as threads:
        records = list(threads.map(lambda question: complete(request(url, question), options, ledger), own))
    return [record.error_kind for record in records]


def test_the_calls_in_flight_of_every_worker_stay_within_the_provider_s_limit(cluster, tmp_path):
    limit = 3
    options = CallOptions(provider="openai", limits=ProviderLimits(max_concurrency=limit))
    questions = [f"worker {{worker}}, question {i}" for i in range(4 * limit)]
    with LLMServer() as server, shared_by_cluster(cluster, tmp_path / "ledger", None):
        server.hold_after(ok_replies=0)  # every request is held unanswered until the test lets them go
        arguments = (server.url, tmp_path / "ledger", questions, options)
        asking = threading.Thread(target=lambda: outcomes.extend(on_each_worker(cluster, ask, *arguments)))
        outcomes: list[Any] = []
        asking.start()
        # Held while each worker has `limit` calls asking for a slot (its own limit is whole): as many as
        # the limit wait at the scheduler. Per-process limits would let every worker's in.
        deadline = time.monotonic() + 600  # a liveness bound only
        while not (
            server.state.held > limit
            or (server.state.held == limit and waiting_for_lease(cluster, slots_of("openai", limit)) == limit)
        ):
            assert time.monotonic() < deadline and asking.is_alive()
            time.sleep(0.02)
        held = server.state.held
        server.answer_held()
        asking.join()
        stats = server.stats()
    assert (held, outcomes) == (limit, [[None] * len(questions)] * WORKERS)
    made = WORKERS * len(questions)
    assert (stats["ok"], stats["max_in_flight"], stats["max_ok_per_body"]) == (made, limit, 1)


def test_a_worker_s_leases_serve_its_calls_in_turn_and_all_go_back_once_they_end(cluster, tmp_path):
    limit = 2
    options = CallOptions(provider="openai", limits=ProviderLimits(max_concurrency=limit))
    questions = [f"worker {{worker}}, question {i}" for i in range(6 * THREADS)]
    slots = slots_of("openai", limit)
    with LLMServer(latency_s=0.01) as server, shared_by_cluster(cluster, tmp_path / "ledger", None):
        outcomes = on_each_worker(cluster, ask, server.url, tmp_path / "ledger", questions, options)
        # A lease no thread waits for goes back at once, on the worker's event loop: wait for the last.
        deadline = time.monotonic() + 600  # a liveness bound only
        while leases_held(cluster, slots):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        books = on_each_worker(cluster, lease_book, options.limits)
        stats = server.stats()
    calls = WORKERS * len(questions)
    answered = [[None] * len(questions)] * WORKERS
    assert (outcomes, stats["ok"], stats["max_in_flight"]) == (answered, calls, limit)
    assert books == [(0, 0, 0, [])] * WORKERS  # nothing held, asked for or waited for
    # Threads waiting in the same worker took the leases of calls that ended, with no round trip.
    assert calls / LEASE_TURNS <= acquisitions(cluster, slots) < calls


def lease_book(limits: ProviderLimits, worker: int) -> tuple[int, int, int, list[int]]:
    """On a worker: what it holds of the provider's leases (held, asked for, threads waiting, idle)."""
    book = limiter_for("openai", limits).slots.book
    return book.held, book.asking, book.waiting, book.idle


def waiting_for_lease(client: Client, semaphore: str) -> int:
    """How many leases of the Dask semaphore `semaphore` are waited for at the scheduler."""
    return client.run_on_scheduler(
        lambda dask_scheduler: dask_scheduler.extensions["semaphores"].metrics["pending"].get(semaphore, 0)
    )


def leases_held(client: Client, semaphore: str) -> int:
    return client.run_on_scheduler(
        lambda dask_scheduler: len(dask_scheduler.extensions["semaphores"].leases[semaphore])
    )


def acquisitions(client: Client, semaphore: str) -> int:
    """How many leases of the Dask semaphore `semaphore` the scheduler has granted."""
    return client.run_on_scheduler(
        lambda dask_scheduler: dask_scheduler.extensions["semaphores"].metrics["acquire_total"][semaphore]
    )


def slots_of(provider: str, limit: int) -> str:
    """The name of the Dask semaphore of a provider's calls in flight (no rate)."""
    return f"{NAME_PREFIX}/limits/{provider}/{limit}/None/in-flight"


def test_one_budget_for_every_worker_stops_the_calls_before_the_cap_is_passed(cluster, tmp_path):
    # Each reply is one word at USD 0.01 and its estimate is exactly that: 5 calls fit under the cap.
    options = CallOptions(provider="openai", prices=Prices(output_per_token=0.01), estimated_reply_tokens=1)
    questions = [f"worker {{worker}}, question {i}" for i in range(THREADS)]
    budget = SpendingBudget(cap_usd=0.055)
    with LLMServer(reply=lambda model, messages: "Fine.") as server:
        with shared_by_cluster(cluster, tmp_path / "ledger", budget):
            outcomes = on_each_worker(cluster, ask, server.url, tmp_path / "ledger", questions, options)
        stats = server.stats()
    made = 5
    kinds = Counter(kind for kinds in outcomes for kind in kinds)
    assert kinds == {None: made, "cost_cap": WORKERS * THREADS - made}
    assert (stats["ok"], stats["max_ok_per_body"]) == (made, 1)
    assert CallLedger(tmp_path / "ledger").total_cost_usd() == pytest.approx(made * 0.01)
    # The flow's budget holds, after the body, what the workers left on the scheduler.
    state = budget.state()
    assert (round(state.spent_usd, 9), state.reserved, state.refused_usd) == (made * 0.01, {}, 0.01)


def test_an_identical_request_in_two_workers_at_once_is_made_once(cluster, tmp_path):
    question = "the same question for both workers"
    with LLMServer() as server, shared_by_cluster(cluster, tmp_path / "ledger", None):
        key = request(server.url, question).key()
        server.hold_after(ok_replies=0)  # every request is held unanswered until the test lets it go
        arguments = (server.url, tmp_path / "ledger", [question], CallOptions(provider="openai"))
        answered = threading.Thread(target=lambda: outcomes.extend(on_each_worker(cluster, ask, *arguments)))
        outcomes: list[Any] = []
        answered.start()
        # Held while the other worker waits for the key at the scheduler; without it, both would be held.
        deadline = time.monotonic() + 600  # a liveness bound only
        while not (server.state.held > 1 or (server.state.held == 1 and waiting_for(cluster, key) == 1)):
            assert time.monotonic() < deadline and answered.is_alive()
            time.sleep(0.02)
        held = server.state.held
        server.answer_held()
        answered.join()
        assert (held, outcomes, len(server.requests)) == (1, [[None], [None]], 1)


def waiting_for(client: Client, key: str) -> int:
    """How many workers wait at the scheduler to hold the call key `key`."""
    return client.run_on_scheduler(
        lambda dask_scheduler: dask_scheduler.plugins[KeysOnScheduler.name].waiting[key]
    )


def claim_turns(shared: ProviderLimits, count: int, worker: int) -> list[float]:
    """On a worker: the start times `count` calls claim, one after another, from the provider's limiter."""
    limiter = limiter_for("rated", shared)
    return [limiter.turn() for _ in range(count)]


def test_the_starts_every_worker_claims_are_spaced_by_the_provider_s_rate(cluster, tmp_path):
    rated = ProviderLimits(max_concurrency=4, requests_per_minute=600)  # a start every 0.1 s
    with shared_by_cluster(cluster, tmp_path / "ledger", None):
        turns = sorted(turn for turns in on_each_worker(cluster, claim_turns, rated, 10) for turn in turns)
    gaps = [later - earlier for earlier, later in itertools.pairwise(turns)]
    assert (len(turns), [gap >= 0.1 - 1e-6 for gap in gaps]) == (20, [True] * 19)


def pause_or_read(shared: ProviderLimits, worker: int) -> float:
    """On worker 0: pause the provider for an hour. On each worker: when its next call may start."""
    limiter = limiter_for("paused", shared)
    if worker == 0:
        limiter.pause(3600)
    return limiter.turn()


def test_a_pause_one_worker_was_asked_for_holds_the_calls_of_every_worker(cluster, tmp_path):
    limits = ProviderLimits(max_concurrency=4)  # no rate: a worker reads the pause, it claims no turn
    with shared_by_cluster(cluster, tmp_path / "ledger", None):
        before = time.time()
        pause_ends, next_start = on_each_worker(cluster, pause_or_read, limits, at_once=False)
    assert next_start == pause_ends >= before + 3600


@given(
    st.floats(0, 1e6),
    st.lists(st.floats(0, 1e6), min_size=1, max_size=30).map(sorted),
    st.floats(0.001, 100),
)
def test_claimed_starts_are_never_before_their_claim_and_a_whole_interval_apart(first, clock, interval):
    next_start, starts = first, []
    for now in clock:
        next_start, start = claim_start(next_start, now, interval)
        assert start >= now
        starts.append(start)
    assert all(later - earlier >= interval - 1e-6 for earlier, later in itertools.pairwise(starts))


def test_a_budget_state_travels_as_plain_data_and_back_whole():
    state = BudgetState(1.0, spent_usd=0.25, reserved={"a": (0.5, 0.1)}, refused_usd=0.3)
    assert BudgetState.from_plain(state.to_plain()) == state


def test_a_capped_run_whose_budget_left_the_scheduler_makes_no_call(cluster, tmp_path):
    options = CallOptions(provider="openai", prices=Prices(output_per_token=0.01), estimated_reply_tokens=1)
    gone, capped = "is not on the Dask scheduler", SpendingBudget(cap_usd=1.0)
    with LLMServer() as server:
        # The flow cannot take the budget back either: the run ends on the same error, not uncapped.
        with pytest.raises(BudgetGone, match=gone), shared_by_cluster(cluster, tmp_path / "ledger", capped):
            # As after a restart of the scheduler: the values it kept are gone.
            cluster.run_on_scheduler(
                lambda dask_scheduler: dask_scheduler.plugins[ValuesOnScheduler.name]._values.clear()
            )
            with pytest.raises(BudgetGone, match=gone):
                on_each_worker(cluster, ask, server.url, tmp_path / "ledger", ["question {worker}"], options)
        assert server.requests == []
