"""The rules of a process's block of provider leases (`LeaseBook`, tasks/llm/cluster_limits.py), played out
against a scheduler that grants what the cluster has free: the calls in flight never outnumber the leases
held, nor these the limit; a lease is idle only for a waiting thread; every thread gets its calls made; and
once they are, every lease is back at the scheduler."""

from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from tasks.llm.cluster_limits import LeaseBook


@dataclass
class Thread:
    calls_left: int
    state: str = "ready"  # ready, waiting, calling
    served: int = 0  # calls its lease had served when it took it


@dataclass
class Process:
    """One process's book, its threads, and the scheduler's side: leases free, asks pending there."""

    book: LeaseBook
    threads: list[Thread]
    free: int  # leases the scheduler has free (the limit, less what other processes hold)
    pending: int = 0  # asks the scheduler has not answered
    acquisitions: int = 0  # leases the scheduler granted
    calls_made: int = 0
    served: list[int] = field(default_factory=list)  # of each lease given back, the calls it served

    def moves(self) -> list[tuple[str, int]]:
        """What may happen next: a thread asks for, takes or ends a call; the scheduler grants an ask."""
        possible = [("grant", 0)] if self.pending and self.free else []
        for index, thread in enumerate(self.threads):
            if thread.state == "ready" and thread.calls_left:
                possible.append(("want", index))
            elif thread.state == "waiting" and self.book.idle:
                possible.append(("take", index))
            elif thread.state == "calling":
                possible.append(("end", index))
        return possible

    def play(self, move: str, index: int) -> None:
        thread = self.threads[index]
        if move == "grant":
            self.pending -= 1
            self.free -= 1
            self.acquisitions += 1
            if not self.book.granted():
                self.free += 1
        elif move == "want":
            thread.state = "waiting"
            self.pending += self.book.want()
        elif move == "take":
            served = self.book.take()
            assert served is not None
            thread.state, thread.served = "calling", served
        else:  # the thread's call ends on its lease
            thread.state, thread.calls_left = "ready", thread.calls_left - 1
            self.calls_made += 1
            back, asks = self.book.done(thread.served + 1)
            if back:
                self.free += 1
                self.served.append(thread.served + 1)
            self.pending += asks

    def check(self, limit: int) -> None:
        calling = sum(thread.state == "calling" for thread in self.threads)
        waiting = sum(thread.state == "waiting" for thread in self.threads)
        book = self.book
        assert calling + len(book.idle) == book.held <= book.held + book.asking <= limit
        assert (book.waiting, book.asking) == (waiting, self.pending)
        assert len(book.idle) <= waiting
        assert all(served < book.turns for served in book.idle)


@given(
    limit=st.integers(1, 6),
    held_elsewhere=st.integers(0, 5),
    calls=st.lists(st.integers(0, 12), min_size=1, max_size=8),
    choices=st.lists(st.integers(0, 1000), max_size=300),
)
def test_a_process_s_leases_serve_its_calls_within_the_limit_and_all_go_back(
    limit, held_elsewhere, calls, choices
):
    free = max(1, limit - held_elsewhere)  # another process holds the rest until this one is done
    process = Process(LeaseBook(limit), [Thread(count) for count in calls], free)
    for choice in choices:  # an interleaving hypothesis picks
        if not (moves := process.moves()):
            break
        process.play(*moves[choice % len(moves)])
        process.check(limit)
    while moves := process.moves():  # then every thread to its end: nothing may be left stuck
        process.play(*moves[0])
        process.check(limit)
    assert (process.calls_made, [thread.state for thread in process.threads]) == (
        sum(calls),
        ["ready"] * len(calls),
    )
    book = process.book
    assert (book.held, book.asking, book.waiting, book.idle, process.free) == (0, 0, 0, [], free)
    assert all(served <= book.turns for served in process.served)
    assert sum(process.served) == sum(calls)  # every call was served by a lease since given back


def test_a_lease_goes_to_a_waiting_thread_with_no_round_trip_then_back_after_its_turns():
    book = LeaseBook(limit=1, turns=2)
    assert (book.want(), book.want()) == (1, 0)  # one lease asked for: the cluster has one
    assert (book.granted(), book.take()) == (True, 0)
    assert book.done(1) == (False, 0)  # the other thread waits: the lease goes to it
    assert book.take() == 1
    assert book.done(2) == (True, 0)  # its turns are served: back to the scheduler, no thread waits
    assert (book.held, book.asking, book.waiting, book.idle) == (0, 0, 0, [])


def test_a_lease_granted_once_no_thread_waits_for_it_goes_back():
    book = LeaseBook(limit=2)
    assert (book.want(), book.granted(), book.take()) == (1, True, 0)
    assert book.want() == 1  # a second thread: a second lease asked for
    assert book.done(1) == (False, 0)  # the first lease ends its call and goes to it
    assert book.take() == 1
    assert book.granted() is False  # the second lease, granted late, is not needed: it goes back
    assert (book.held, book.asking, book.waiting, book.idle) == (1, 0, 0, [])


def test_a_failed_ask_leaves_a_waiting_thread_without_a_lease_to_be_told():
    book = LeaseBook(limit=3)
    assert book.want() == 1
    assert book.refused() is True
    book.give_up()
    assert (book.held, book.asking, book.waiting, book.idle) == (0, 0, 0, [])
