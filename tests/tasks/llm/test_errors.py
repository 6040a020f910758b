from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from tasks.llm.errors import parse_retry_after


def test_retry_after_is_read_in_every_form():
    in_two_minutes = format_datetime(datetime.now(UTC) + timedelta(minutes=2), usegmt=True)
    assert parse_retry_after(httpx.Headers({"Retry-After": "120"})) == 120
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert parse_retry_after(httpx.Headers({"Retry-After": in_two_minutes})) == pytest.approx(120, abs=2)
    assert parse_retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse_retry_after(None) is None
