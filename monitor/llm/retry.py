"""What the transport needs to know about a failed request: retry or not, how long to wait, how many
requests to keep in flight, and how to name the server in a message without its credentials."""

from __future__ import annotations

import re
import threading
import time
from urllib.parse import urlsplit, urlunsplit

import openai

from monitor.backoff import retry_after
from monitor.errors import JudgeError
from monitor.llm.answers import AnswerRejected

# Status codes with which a server says "I do not support that request form". A 500 says it only when
# its message names the form (llama-cpp-python answers `json_schema` so); any other 500 is a failure.
UNSUPPORTED = {400, 404, 415, 422, 501}
_NAMES_FORM = re.compile(r"response_format|json_schema|json_object|not supported|unsupported", re.IGNORECASE)
MAX_BACKOFF_SECONDS = 30.0
# Server failures in a row it takes, however long they last, before the failure breaker may open.
MIN_FAILURES = 3


class ServerUnavailable(JudgeError):
    """The server refuses every request (bad key, no such model, nobody there): asking more is pointless.

    `fatal` tells the worker loop to start no further call.
    """

    fatal = True


class TruncatedReply(AnswerRejected):
    """The server answered, but its reply was cut off (the token limit, or a body that ends early)."""


class FailureStreak:
    """Server failures in a row (5xx, 429, 408, 409), shared by every call of a transport.

    Any other answer from the server ends the streak. Once it has lasted `window` seconds (and at least
    MIN_FAILURES failures), the breaker is open: the server is failing, not busy, and asking on only
    spends time and requests.
    """

    def __init__(self, window: float) -> None:
        self.window = window
        self.count = 0
        self._first = 0.0
        self.last = ""  # the latest failure, for the message
        self._lock = threading.Lock()

    def failed(self, what: str) -> None:
        with self._lock:
            if self.count == 0:
                self._first = time.monotonic()
            self.count += 1
            self.last = what

    def answered(self) -> None:
        with self._lock:
            self.count = 0

    @property
    def seconds(self) -> float:
        return time.monotonic() - self._first if self.count else 0.0

    @property
    def open(self) -> bool:
        return self.count >= MIN_FAILURES and self.seconds >= self.window


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


def safe_url(url: str, path: bool = True) -> str:
    """A base URL fit for messages: without user:password@, query or fragment (and without the path
    unless `path`: a webhook's path is its token)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path if path else "", "", ""))


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a failed response asks for (`retry-after-ms`, `retry-after` seconds or HTTP date)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    return retry_after(headers.get("retry-after"), headers.get("retry-after-ms"))


def status_of(exc: BaseException) -> int | None:
    return exc.status_code if isinstance(exc, openai.APIStatusError) else None


def server_failure(status: int | None) -> bool:
    """A status with which the server failed the request, not answered it: worth retrying."""
    return status is not None and (status in (408, 409, 429) or status >= 500)


def unsupported_form(exc: BaseException) -> bool:
    """The server answered that it does not take this request form (see UNSUPPORTED)."""
    status = status_of(exc)
    if status == 500:
        return bool(_NAMES_FORM.search(getattr(exc, "message", None) or str(exc)))
    return status in UNSUPPORTED


def _cause(exc: BaseException | None) -> tuple[str, str]:
    """The class names and message of the HTTP library's error under an openai.APIConnectionError."""
    cause = exc.__cause__ if exc is not None else None
    if cause is None:
        return "", ""
    return " ".join(c.__name__ for c in type(cause).__mro__), str(cause)


def refused_connection(exc: BaseException | None) -> bool:
    """Nothing answered on the port (a timeout is not that: the server is there, only slow; nor is a
    reply cut off on its way: the server answered)."""
    if not isinstance(exc, openai.APIConnectionError) or isinstance(exc, openai.APITimeoutError):
        return False
    return not cut_off(exc)


def cut_off(exc: BaseException | None) -> bool:
    """The server sent a reply but closed the connection before its declared end."""
    names, message = _cause(exc)
    return "RemoteProtocolError" in names and "complete message body" in message
