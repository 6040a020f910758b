import time

from tasks.llm.limits import ProviderLimiter
from tasks.llm.request import ProviderLimits


def test_requests_per_minute_spaces_call_starts():
    limiter = ProviderLimiter(ProviderLimits(max_concurrency=5, requests_per_minute=600))
    began = time.monotonic()
    starts = []
    for _ in range(4):
        with limiter.slot():
            starts.append(time.monotonic() - began)
    # The i-th start is held until i intervals after the first was let in. Gaps between measured starts
    # would also hold how late the scheduler woke each thread: a busy machine shortens some of them.
    assert [start >= i * 0.1 - 1e-3 for i, start in enumerate(starts)] == [True] * 4


def test_a_pause_holds_every_new_call():
    limiter = ProviderLimiter(ProviderLimits(max_concurrency=5))
    limiter.pause(0.2)
    began = time.monotonic()
    with limiter.slot():
        assert time.monotonic() - began >= 0.19
