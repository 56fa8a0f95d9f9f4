"""The polite client against a real local HTTP server: gaps, back-off, Retry-After, timeouts, errors."""

from __future__ import annotations

import socket
import threading

import pytest
from arxiv_replay import ArxivReplay, Fault

from monitor.errors import SourceError
from monitor.sources.client import PoliteSession, parse_retry_after, require_atom_feed

FEED = "/atom/cs.AI"
GOOD = b"<?xml version='1.0'?><feed xmlns='http://www.w3.org/2005/Atom'><title>t</title></feed>"


@pytest.fixture
def server():
    with ArxivReplay() as srv:
        srv.feeds[FEED] = GOOD
        yield srv


def session(delay: float = 0.2, retries: int = 3, timeout: float = 5.0, **kw) -> PoliteSession:
    return PoliteSession(delay, timeout, retries, contact="ops@example.org", **kw)


def test_requests_are_spaced_by_the_delay_measured_at_the_server(server: ArxivReplay) -> None:
    client = session(delay=0.2)
    for _ in range(5):
        assert client.get(server.url + FEED).status_code == 200
    gaps = list(server.gaps())
    assert len(gaps) == 4
    assert min(gaps) >= 0.19  # server-side arrival times, not the client's own bookkeeping
    assert client.stats.requests == 5
    assert client.stats.wait_seconds > 0.5


def test_user_agent_names_the_project_and_contact_even_when_a_library_sets_its_own(
    server: ArxivReplay,
) -> None:
    client = session(delay=0)
    client.get(server.url + FEED, headers={"user-agent": "arxiv.py/4.0.2"})
    agent = server.log[0].user_agent
    assert agent.startswith("claim-monitor/")
    assert "ops@example.org" in agent


def test_429_honours_retry_after(server: ArxivReplay) -> None:
    server.faults.append(Fault(status=429, headers={"Retry-After": "1"}, path=FEED))
    client = session(delay=0.05)
    assert client.get(server.url + FEED).content == GOOD
    assert [r.status for r in server.log] == [429, 200]
    assert next(server.gaps()) >= 0.99
    assert client.stats.retries == 1


def test_503_then_success(server: ArxivReplay) -> None:
    server.faults += [Fault(status=503, path=FEED), Fault(status=503, path=FEED)]
    client = session(delay=0.05)
    assert client.get(server.url + FEED).status_code == 200
    assert [r.status for r in server.log] == [503, 503, 200]
    gaps = list(server.gaps())
    assert gaps[1] >= gaps[0]  # back-off doubles: jitter ranges [0.1, 0.2] then [0.2, 0.4] s


def test_timeout_is_retried(server: ArxivReplay) -> None:
    server.faults.append(Fault(delay=1.5, path=FEED))
    client = session(delay=0.05, timeout=0.5)
    assert client.get(server.url + FEED).status_code == 200
    assert len(server.log) == 2


def test_persistent_failure_is_one_source_error(server: ArxivReplay) -> None:
    server.faults += [Fault(status=503, path=FEED) for _ in range(3)]
    client = session(delay=0.01, retries=2)
    with pytest.raises(SourceError, match="HTTP 503, still failing after 3 tries"):
        client.get(server.url + FEED)
    assert len(server.log) == 3


def test_http_400_error_feed_is_not_retried_and_says_why(server: ArxivReplay) -> None:
    client = session(delay=0)
    with pytest.raises(SourceError, match="HTTP 400: incorrect id format for abc"):
        client.get(server.url + "/api/query", params={"id_list": "abc", "search_query": ""})
    assert len(server.log) == 1


def test_malformed_xml_is_retried_when_validated(server: ArxivReplay) -> None:
    server.faults.append(Fault(body=b"<feed><entry>cut off", path=FEED))
    client = session(delay=0.01, validate=require_atom_feed)
    assert client.get(server.url + FEED).content == GOOD
    assert len(server.log) == 2


def test_no_connection_is_tried_once_more_then_says_no_network() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = session(delay=0.01, retries=5)
    with pytest.raises(
        SourceError, match=rf"no network, or arXiv unreachable: cannot connect to 127.0.0.1:{port}"
    ):
        client.get(f"http://127.0.0.1:{port}{FEED}")
    assert client.stats.requests == 2  # not max_retries + 1 with back-off between


def test_a_connection_dropped_after_it_was_accepted_is_retried_with_back_off() -> None:
    # A server that answers the connection is up: this is arXiv's fault, not the network's.
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def accept_and_close() -> None:
        while len(accepted) < 3:
            conn, _ = listener.accept()
            accepted.append(1)
            conn.recv(1024)
            conn.close()

    threading.Thread(target=accept_and_close, daemon=True).start()
    client = session(delay=0.01, retries=2)
    with pytest.raises(SourceError, match="ConnectionError, still failing after 3 tries"):
        client.get(f"http://127.0.0.1:{listener.getsockname()[1]}{FEED}")
    listener.close()
    assert len(accepted) == 3 and client.stats.wait_seconds > 0.02  # backed off between tries


def test_an_html_page_is_not_retried_and_says_it_is_not_an_arxiv_answer(server: ArxivReplay) -> None:
    page = b"<!DOCTYPE html>\n<html><head><title>Wi-Fi login</title></head><body></body></html>"
    server.faults.append(Fault(body=page, headers={"Content-Type": "text/html"}, path=FEED))
    client = session(delay=0.01, validate=require_atom_feed)
    with pytest.raises(SourceError, match="not an arXiv answer: an HTML page titled 'Wi-Fi login'"):
        client.get(server.url + FEED)
    assert len(server.log) == 1


def test_retry_after_forms() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past: go now
