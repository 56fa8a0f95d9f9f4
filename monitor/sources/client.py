"""The one HTTP client for all arXiv traffic (API, RSS, anchor look-ups).

`PoliteSession` is a `requests.Session`, so the `arxiv` package can use it unchanged (we hand it to
`arxiv.Client._session`) and feeds can be fetched with it before feedparser reads the bytes. It
enforces what arXiv's terms ask for, whoever calls it:

* one request at a time (a lock) and at least `delay_seconds` between the start of any two requests;
* retries with exponential back-off and jitter on 429 / 5xx, timeouts and dropped connections,
  honouring `Retry-After` (never waiting less than it says);
* a per-request timeout and a User-Agent naming the project and the operator's contact address;
* an optional `validate` hook, so a 200 response whose body is not well-formed XML is retried like a
  transient fault instead of being parsed into silently partial results, and one that is not an
  arXiv answer at all (an HTML page from a proxy, a captive portal or a maintenance notice) fails at
  once instead of reading as "no results";
* no network: a connection that cannot be made (refused, name not resolved, no route, connect
  timeout) is tried once more after the politeness gap, then fails. Back-off is for a server that
  answers (429, 5xx) or drops a connection it accepted; waiting minutes on one that never answers
  only hides that the machine is offline.

Any failure that retries do not fix becomes one `SourceError` line for the user.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from lxml import etree
from urllib3.exceptions import NewConnectionError

from monitor import __version__ as monitor_version
from monitor.backoff import backoff_seconds
from monitor.backoff import retry_after as parse_retry_after
from monitor.config import ArxivSettings
from monitor.errors import SourceError

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_BACKOFF_SECONDS = 300.0


CONNECT_TIMEOUT_SECONDS = 10.0  # a TCP connect slower than this is a dead route, not a slow arXiv
CONNECT_TRIES = 2  # the first failed connection plus one more try (none with max_retries = 0)
_ATOM_FEED = "{http://www.w3.org/2005/Atom}feed"
_HTML_TITLE = re.compile(rb"<title[^>]*>(.*?)</title", re.I | re.S)


class MalformedResponse(Exception):
    """A 200 response whose body cannot be what it claims to be (raised by a `validate` hook)."""


class NotArxivAnswer(Exception):
    """A 200 response that did not come from arXiv's feed service (raised by a `validate` hook)."""


def reject_html(response: requests.Response) -> None:
    """A `validate` hook: an HTML page (a proxy's, a captive portal's, a maintenance notice) is no feed."""
    head = response.content[:512].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if head.startswith((b"<!doctype html", b"<html")) or "html" in response.headers.get("Content-Type", ""):
        found = _HTML_TITLE.search(response.content[:4096])
        title = " ".join(found.group(1).decode("utf-8", "replace").split())[:120] if found else ""
        raise NotArxivAnswer(f"an HTML page{f' titled {title!r}' if title else ''}")


def require_atom_feed(response: requests.Response) -> None:
    """A `validate` hook for API answers: not HTML, well-formed XML (truncation shows here), an Atom feed."""
    reject_html(response)
    try:
        root = etree.fromstring(
            response.content, parser=etree.XMLParser(resolve_entities=False, no_network=True)
        )
    except etree.XMLSyntaxError as exc:
        raise MalformedResponse(f"response is not well-formed XML: {exc}") from None
    if root.tag != _ATOM_FEED:
        raise NotArxivAnswer(f"XML whose root element is <{etree.QName(root).localname}>, not an Atom feed")


def connection_failure(exc: requests.RequestException) -> str | None:
    """Why no connection could be made at all (refused, DNS, no route, connect timeout), else None.

    A connection arXiv accepted and then dropped, or a read timeout, is a server fault: None.
    """
    if isinstance(exc, requests.ConnectTimeout):
        return "connection timed out"
    if not isinstance(exc, requests.ConnectionError):
        return None
    reason = exc.args[0] if exc.args else None
    reason = getattr(reason, "reason", reason)  # urllib3's MaxRetryError wraps the real error
    if isinstance(reason, NewConnectionError):
        # "HTTPConnection(host='x', port=80): Failed to resolve 'x' (...)": the part after the host
        return str(reason).split("): ", 1)[-1]
    return None


@dataclass
class ClientStats:
    """What the client did, for the fetch summary: requests sent and seconds spent being polite."""

    requests: int = 0
    retries: int = 0
    wait_seconds: float = 0.0  # sleeping for the politeness gap and back-off


def user_agent(contact: str) -> str:
    return f"claim-monitor/{monitor_version} (+https://github.com/claim-monitor; mailto:{contact})"


class PoliteSession(requests.Session):
    """A requests Session that is polite to arXiv on every request, whoever sends it."""

    def __init__(
        self,
        delay_seconds: float,
        timeout_seconds: float,
        max_retries: int,
        contact: str,
        validate: Callable[[requests.Response], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__()
        self.delay_seconds = delay_seconds
        self.timeout_seconds = timeout_seconds
        self.max_retries = max_retries
        self.validate = validate
        self.stats = ClientStats()
        self.headers["User-Agent"] = user_agent(contact)
        self._sleep = sleep
        self._lock = threading.Lock()
        self._last_start: float | None = None

    @classmethod
    def from_settings(
        cls, settings: ArxivSettings, validate: Callable[[requests.Response], None] | None = None
    ) -> PoliteSession:
        return cls(
            delay_seconds=settings.delay_seconds,
            timeout_seconds=settings.timeout_seconds,
            max_retries=settings.max_retries,
            contact=settings.contact,
            validate=validate,
        )

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self.stats.wait_seconds += seconds
            self._sleep(seconds)

    def _wait_for_turn(self) -> None:
        if self._last_start is not None:
            self._wait(self._last_start + self.delay_seconds - time.monotonic())
        self._last_start = time.monotonic()

    def _count_no_connection(self, shown: str, exc: requests.RequestException, before: int) -> int:
        """Connection failures in a row after `exc`; raises SourceError once they reach CONNECT_TRIES."""
        reason = connection_failure(exc)
        if reason is None:
            return 0
        host = urlsplit(shown).netloc or shown
        if before + 1 >= min(CONNECT_TRIES, self.max_retries + 1):
            raise SourceError(
                f"no network, or arXiv unreachable: cannot connect to {host} ({reason}; "
                f"{before + 1} tries); try again when the machine is online"
            )
        log.warning(
            "no network, or arXiv unreachable: cannot connect to %s (%s); trying once more", host, reason
        )
        self.stats.retries += 1
        return before + 1

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        # Starting at twice the politeness gap; half of it jittered away at most.
        first = max(self.delay_seconds, 0.1) * 2
        return backoff_seconds(attempt, first, MAX_BACKOFF_SECONDS, jitter=0.5, asked=retry_after)

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        # Our User-Agent wins over any a library passes (arxiv.py sends its own).
        headers = {k: v for k, v in (kwargs.pop("headers", None) or {}).items() if k.lower() != "user-agent"}
        kwargs["headers"] = headers
        kwargs.setdefault(
            "timeout", (min(self.timeout_seconds, CONNECT_TIMEOUT_SECONDS), self.timeout_seconds)
        )
        with self._lock:
            return self._request_with_retries(method, url, args, kwargs)

    def _request_with_retries(
        self, method: str | bytes, url: str | bytes, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> requests.Response:
        shown = url.decode() if isinstance(url, bytes) else url
        attempt = 0
        no_connection = 0  # connection failures in a row
        while True:
            self._wait_for_turn()
            self.stats.requests += 1
            retry_after: float | None = None
            try:
                response = super().request(method, url, *args, **kwargs)
            except (requests.Timeout, requests.ConnectionError) as exc:
                problem = f"{exc.__class__.__name__}"
                no_connection = self._count_no_connection(shown, exc, no_connection)
                if no_connection:
                    continue  # the politeness gap before the next start is the pause; no back-off
            else:
                no_connection = 0
                problem = self._problem(shown, response)
                if problem is None:
                    return response
                retry_after = parse_retry_after(response.headers.get("Retry-After"))
            if attempt >= self.max_retries:
                raise SourceError(f"{shown}: {problem}, still failing after {attempt + 1} tries")
            if retry_after is not None and retry_after > MAX_BACKOFF_SECONDS:
                raise SourceError(f"{shown}: {problem}, arXiv asks to wait {retry_after:.0f} s; try later")
            pause = self._backoff(attempt, retry_after)
            log.warning("arXiv request failed (%s); retrying in %.1f s: %s", problem, pause, shown)
            self.stats.retries += 1
            self._wait(pause)
            attempt += 1

    def _problem(self, shown: str, response: requests.Response) -> str | None:
        """What is wrong with an answer that a retry may fix (None: nothing); raises for what it cannot."""
        status = response.status_code
        if status in RETRY_STATUSES:
            return f"HTTP {status}"
        if status >= 400:
            raise SourceError(f"{shown}: HTTP {status}: {error_feed_message(response.content)}")
        try:
            if self.validate is not None:
                self.validate(response)
        except MalformedResponse as exc:
            return str(exc)
        except NotArxivAnswer as exc:
            raise SourceError(
                f"{shown}: not an arXiv answer: {exc} (HTTP {status}); a proxy, captive portal "
                "or maintenance page? Nothing was read from it"
            ) from None
        return None


def error_feed_message(body: bytes) -> str:
    """arXiv reports a bad query as an Atom feed with one entry whose summary says what was wrong."""
    try:
        root = etree.fromstring(body, parser=etree.XMLParser(recover=True, no_network=True))
    except (etree.XMLSyntaxError, ValueError):
        root = None
    if root is not None:
        summary = root.find(".//{http://www.w3.org/2005/Atom}entry/{http://www.w3.org/2005/Atom}summary")
        if summary is not None and summary.text:
            return summary.text.strip()
    text = body[:200].decode("utf-8", "replace").strip()
    return text or "no message"
