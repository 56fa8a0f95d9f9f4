"""What the transport needs to know about a failed request: retry or not, how long to wait, how many
requests to keep in flight, and how to name the server in a message without its credentials."""

from __future__ import annotations

import email.utils
import math
import threading
import time
from urllib.parse import urlsplit, urlunsplit

import openai

from monitor.errors import JudgeError

# Status codes with which a server says "I do not support that request form" (llama.cpp: 500).
UNSUPPORTED = {400, 404, 415, 422, 500, 501}
MAX_BACKOFF_SECONDS = 30.0


class ServerUnavailable(JudgeError):
    """The server refuses every request (bad key, no such model, nobody there): asking more is pointless.

    `fatal` tells the worker loop to start no further call.
    """

    fatal = True


class InFlightLimit:
    """How many requests may be in flight at once; lowered (never raised) when the server times out."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._active = 0
        self._cond = threading.Condition()

    def __enter__(self) -> InFlightLimit:
        with self._cond:
            self._cond.wait_for(lambda: self._active < self.limit)
            self._active += 1
        return self

    def __exit__(self, *_exc: object) -> None:
        with self._cond:
            self._active -= 1
            self._cond.notify()

    def halve(self) -> tuple[int, int] | None:
        """Halve the limit (down to 1); returns (old, new), or None when it was 1 already."""
        with self._cond:
            if self.limit == 1:
                return None
            old, self.limit = self.limit, max(1, self.limit // 2)
            return old, self.limit


def safe_url(url: str) -> str:
    """A base URL fit for messages: without user:password@, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a failed response asks for (`retry-after-ms`, `retry-after` seconds or HTTP date)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def status_of(exc: BaseException) -> int | None:
    return exc.status_code if isinstance(exc, openai.APIStatusError) else None


def refused_connection(exc: BaseException | None) -> bool:
    """Nothing answered on the port (a timeout is not that: the server is there, only slow)."""
    return isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError)
