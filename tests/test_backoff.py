"""One retry policy for the arXiv session and the LLM transport (monitor/backoff.py)."""

from __future__ import annotations

import email.utils
import time

from monitor.backoff import backoff_seconds, retry_after
from monitor.llm.retry import retry_after_seconds
from monitor.sources.client import parse_retry_after


def test_retry_after_reads_seconds_dates_and_milliseconds() -> None:
    assert retry_after("7") == 7.0
    assert retry_after(" 2.5 ") == 2.5
    assert retry_after("-3") == 0.0
    assert retry_after("soon") is None and retry_after(None) is None and retry_after("inf") is None
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 < (retry_after(later) or 0) <= 60
    assert retry_after("7", ms="250") == 0.25  # retry-after-ms wins when readable
    assert retry_after("7", ms="nan") == 7.0


def test_both_clients_read_retry_after_the_same_way() -> None:
    class Response:
        headers = {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}

    class Failed(Exception):
        response = Response()

    assert parse_retry_after is retry_after
    assert retry_after_seconds(Failed()) == 0.0  # a date in the past: go now


def test_backoff_doubles_to_a_cap_with_jitter_and_never_undercuts_the_server() -> None:
    for attempt, full in ((0, 1.0), (1, 2.0), (2, 4.0), (9, 30.0)):
        waits = [backoff_seconds(attempt, 1.0, 30.0, jitter=0.25) for _ in range(200)]
        assert full * 0.75 <= min(waits) and max(waits) <= full
        assert max(waits) - min(waits) > 0  # jittered: clients that failed together spread out
    assert backoff_seconds(0, 1.0, 30.0, jitter=0.5, asked=12.0) == 12.0
    assert backoff_seconds(3, 1.0, 30.0, jitter=0.0, asked=2.0) == 8.0
