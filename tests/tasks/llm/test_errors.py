from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from tasks.llm.errors import batch_line_error, parse_retry_after


def test_retry_after_is_read_in_every_form():
    in_two_minutes = format_datetime(datetime.now(UTC) + timedelta(minutes=2), usegmt=True)
    assert parse_retry_after(httpx.Headers({"Retry-After": "120"})) == 120
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert parse_retry_after(httpx.Headers({"Retry-After": in_two_minutes})) == pytest.approx(120, abs=2)
    assert parse_retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse_retry_after(None) is None


@pytest.mark.parametrize(
    ("status", "error", "kind", "retryable"),
    [
        (500, {"message": "scripted 500", "type": "test"}, "server_error", True),
        (429, {"message": "Too many requests"}, "rate_limit", True),
        (400, {"message": "Unsupported value: 'temperature'"}, "bad_request", False),
        (200, {"message": "The server is overloaded"}, "server_error", True),
    ],
)
def test_a_failed_batch_line_is_classified_by_its_status_then_its_message(status, error, kind, retryable):
    classified = batch_line_error(status, error, "openai/m")
    assert (classified.kind, classified.retryable) == (kind, retryable)
    assert classified.message.startswith(f"openai/m: batch line HTTP {status}: {error['message']}")
