import itertools
import time

from tasks.llm.limits import ProviderLimiter
from tasks.llm.request import ProviderLimits


def test_requests_per_minute_spaces_call_starts():
    limiter = ProviderLimiter(ProviderLimits(max_concurrency=5, requests_per_minute=600))
    starts = []
    for _ in range(4):
        with limiter.slot():
            starts.append(time.monotonic())
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.095


def test_a_pause_holds_every_new_call():
    limiter = ProviderLimiter(ProviderLimits(max_concurrency=5))
    limiter.pause(0.2)
    began = time.monotonic()
    with limiter.slot():
        assert time.monotonic() - began >= 0.19
