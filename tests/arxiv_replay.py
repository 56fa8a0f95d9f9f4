"""A real HTTP server on 127.0.0.1 that plays arXiv for tests and benchmarks.

* `/api/query` answers from recorded exchanges (`tests/fixtures/arxiv/*.json`, matched on
  search_query, id_list, start and max_results), else from synthetic corpus rows: a
  `submittedDate:[A TO B]` window with `cat:` filters is filtered, sorted by submission and paged
  exactly like the real API (opensearch totalResults / startIndex / itemsPerPage), in its Atom format;
  `id_list` look-ups are answered from the same rows.
* `/atom/<cats>` and `/rss/<cats>` serve whatever feed bytes a test put in `feeds`.
* `faults` is a queue of scripted misbehaviours consumed one per matching request: a status with
  headers (429 + Retry-After, 503), a delay (a timeout), or a replacement body (malformed XML, an
  empty result, an error feed).
* Every request is logged with its server-side arrival time, so tests can measure politeness.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape, quoteattr

FIXTURES = Path(__file__).parent / "fixtures" / "arxiv"
_WINDOW = re.compile(r"submittedDate:\[(\d{12}) TO (\d{12})\]")
_CAT = re.compile(r"cat:([\w.-]+)")


@dataclass
class Fault:
    """One scripted misbehaviour for the next request whose path starts with `path`."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None  # replaces the normal answer
    delay: float = 0.0  # seconds to sit on the request before answering
    path: str = "/"


@dataclass
class Logged:
    path: str
    query: dict[str, str]
    at: float  # time.monotonic() when the request arrived
    user_agent: str
    status: int = 0


@dataclass
class Row:
    """A synthetic API paper (corpus fields plus a submission time)."""

    arxiv_id: str
    version: int
    title: str
    abstract: str
    authors: list[str]
    categories: list[str]
    primary_category: str
    submitted: dt.datetime  # v1
    updated: dt.datetime


def rows_from_corpus(items: list[dict[str, Any]]) -> list[Row]:
    """Corpus JSON rows as API rows; dates without a time are submitted at 12:00 UTC."""
    out = []
    for item in items:
        published = item["published"]
        stamp = (
            dt.datetime.fromisoformat(published.replace("Z", "+00:00")).replace(tzinfo=None)
            if "T" in published
            else dt.datetime.combine(dt.date.fromisoformat(published), dt.time(12))
        )
        cats = item.get("categories") or ["cs.CL"]
        out.append(
            Row(
                arxiv_id=item["arxiv_id"],
                version=item.get("version") or 1,
                title=item["title"],
                abstract=item["abstract"],
                authors=item.get("authors") or [],
                categories=cats,
                primary_category=item.get("primary_category") or cats[0],
                submitted=stamp,
                updated=stamp,
            )
        )
    return out


def _z(value: dt.datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def api_feed(rows: list[Row], total: int, start: int, per_page: int, title: str = "query") -> bytes:
    """An arXiv API Atom page in the current (2025+) format."""
    parts = [
        "<?xml version='1.0' encoding='UTF-8'?>",
        '<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">',
        "  <id>https://arxiv.org/api/replay</id>",
        f"  <title>arXiv Query: {escape(title)}</title>",
        f"  <updated>{_z(dt.datetime(2026, 9, 1))}</updated>",
        f"  <opensearch:itemsPerPage>{per_page}</opensearch:itemsPerPage>",
        f"  <opensearch:totalResults>{total}</opensearch:totalResults>",
        f"  <opensearch:startIndex>{start}</opensearch:startIndex>",
    ]
    for r in rows:
        vid = f"{r.arxiv_id}v{r.version}"
        parts += [
            "  <entry>",
            f"    <id>http://arxiv.org/abs/{vid}</id>",
            f"    <title>{escape(r.title)}</title>",
            f"    <updated>{_z(r.updated)}</updated>",
            f'    <link href="https://arxiv.org/abs/{vid}" rel="alternate" type="text/html"/>',
            f"    <summary>{escape(r.abstract)}</summary>",
            *(
                f'    <category term={quoteattr(c)} scheme="http://arxiv.org/schemas/atom"/>'
                for c in r.categories
            ),
            f"    <published>{_z(r.submitted)}</published>",
            f"    <arxiv:primary_category term={quoteattr(r.primary_category)}/>",
            *(f"    <author><name>{escape(a)}</name></author>" for a in r.authors),
            "  </entry>",
        ]
    parts.append("</feed>")
    return "\n".join(parts).encode()


def _fixture_key(query: dict[str, str]) -> tuple[str, str, str, str]:
    if query.get("id_list"):
        # An id look-up's answer does not depend on the page size asked for.
        return ("", query["id_list"], "", "")
    return (query.get("search_query", ""), "", query.get("start", "0"), query.get("max_results", ""))


def replay_settings(server: ArxivReplay, db_url: str, **arxiv: Any) -> Any:
    """Settings pointing every arXiv URL at `server` (MONITOR_ARXIV_MIN_DELAY=0 allows small delays)."""
    from monitor.config import Settings

    values = {
        "api_url": server.url + "/api/query",
        "rss_url": server.url,
        "delay_seconds": 0.0,
        "timeout_seconds": 5.0,
        "max_retries": 3,
        "contact": "tests@example.org",
    }
    values.update(arxiv)
    return Settings(database={"url": db_url}, arxiv=values)


class ArxivReplay:
    """The server. Use as a context manager; `.url` is its base URL."""

    def __init__(self, rows: list[Row] | None = None, fixtures: Path | None = FIXTURES) -> None:
        self.rows: list[Row] = rows or []
        self.feeds: dict[str, bytes] = {}
        self.faults: list[Fault] = []
        self.log: list[Logged] = []
        self.recorded: dict[tuple[str, str, str, str], tuple[int, bytes]] = {}
        if fixtures is not None:
            for path in sorted(fixtures.glob("*.json")):
                exchange = json.loads(path.read_text())
                query = {
                    k: v[0]
                    for k, v in parse_qs(urlsplit(exchange["url"]).query, keep_blank_values=True).items()
                }
                self.recorded[_fixture_key(query)] = (exchange["status_code"], exchange["body"].encode())
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ArxivReplay:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def api_requests(self) -> list[Logged]:
        return [r for r in self.log if r.path.startswith("/api")]

    def gaps(self) -> Iterator[float]:
        """Seconds between the arrivals of consecutive requests."""
        times = [r.at for r in self.log]
        return (b - a for a, b in zip(times, times[1:], strict=False))

    # --- answering ------------------------------------------------------------------------------

    def _next_fault(self, path: str) -> Fault | None:
        with self._lock:
            for i, fault in enumerate(self.faults):
                if path.startswith(fault.path):
                    return self.faults.pop(i)
        return None

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if path.startswith("/api"):
            return self._api(query)
        if path in self.feeds:
            return 200, {"Content-Type": "application/atom+xml"}, self.feeds[path]
        return 404, {}, b"not found"

    def _api(self, query: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        headers = {"Content-Type": "application/atom+xml; charset=utf-8"}
        recorded = self.recorded.get(_fixture_key(query))
        if recorded is not None:
            return recorded[0], headers, recorded[1]
        start = int(query.get("start", "0"))
        per_page = int(query.get("max_results", "10"))
        if query.get("id_list"):
            ids = [
                i.split("v")[0] if re.match(r"^\d{4}\.\d+v\d+$", i) else i
                for i in query["id_list"].split(",")
            ]
            by_id = {r.arxiv_id: r for r in self.rows}
            hits = [by_id[i] for i in ids if i in by_id]
            return 200, headers, api_feed(hits[start : start + per_page], len(hits), start, per_page)
        search = query.get("search_query", "")
        window = _WINDOW.search(search)
        cats = set(_CAT.findall(search))
        hits = self.rows
        if window:
            lo = dt.datetime.strptime(window.group(1), "%Y%m%d%H%M")
            hi = dt.datetime.strptime(window.group(2), "%Y%m%d%H%M") + dt.timedelta(seconds=59)
            hits = [r for r in hits if lo <= r.submitted <= hi]
        if cats:
            hits = [r for r in hits if cats.intersection(r.categories)]
        hits = sorted(
            hits, key=lambda r: (r.submitted, r.arxiv_id), reverse=query.get("sortOrder") == "descending"
        )
        return 200, headers, api_feed(hits[start : start + per_page], len(hits), start, per_page, search)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
                entry = Logged(parts.path, query, time.monotonic(), self.headers.get("User-Agent", ""))
                with replay._lock:
                    replay.log.append(entry)
                fault = replay._next_fault(parts.path)
                if fault is not None and fault.delay:
                    time.sleep(fault.delay)
                if fault is not None and (fault.status != 200 or fault.body is not None):
                    status, headers, body = fault.status, fault.headers, fault.body or b""
                else:
                    status, headers, body = replay.answer(parts.path, query)
                entry.status = status
                try:
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return

        return Handler
