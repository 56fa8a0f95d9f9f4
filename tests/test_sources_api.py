"""The API source: the unchanged `arxiv` package talking to a local replay server, through our client.

Synthetic pages are generated from real corpus rows for submittedDate windows; the recorded API
exchanges are replayed for the package's own paging. Every store-touching test runs on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path

import arxiv
import pytest
from arxiv_replay import FIXTURES, ArxivReplay, Fault, Row, api_feed, replay_settings, rows_from_corpus
from sqlalchemy import func, select

from monitor.errors import SourceError
from monitor.sources import api as api_module
from monitor.sources.api import make_client, plan_queries
from monitor.sources.client import PoliteSession
from monitor.sources.ingest import fetch
from monitor.store import open_store
from monitor.store.marks import get_mark
from monitor.store.models import FetchMark, Paper, PaperVersion
from monitor.store.runs import recorded_run

WEEK = (dt.date(2026, 8, 10), dt.date(2026, 8, 16))
CATS = ["cs.AI", "cs.CL", "cs.LG", "cs.CV"]


@functools.cache
def corpus_week(corpus: Path) -> tuple[dict, ...]:
    rows = []
    with corpus.open() as fh:
        for line in fh:
            row = json.loads(line)
            if WEEK[0].isoformat() <= row["published"][:10] <= WEEK[1].isoformat():
                rows.append(row)
    return tuple(rows)


@pytest.fixture
def week_rows(shared: Path) -> list[dict]:
    return list(corpus_week(shared / "arxiv" / "corpus.jsonl"))


@pytest.fixture
def server(week_rows: list[dict]) -> Iterator[ArxivReplay]:
    with ArxivReplay(rows_from_corpus(week_rows)) as srv:
        yield srv


def expected(server: ArxivReplay) -> int:
    return sum(1 for r in server.rows if set(CATS) & set(r.categories))


def count(store, model) -> int:
    with store.session() as s:
        return s.scalar(select(func.count()).select_from(model))


def test_plan_is_one_broad_query_per_category_set_and_window() -> None:
    start, end = dt.datetime(2026, 8, 10), dt.datetime(2026, 8, 16, 23, 59)
    [query] = plan_queries(["cs.LG", "cs.CL", "cs.AI"], start, end)
    assert (
        query.query
        == "(cat:cs.AI OR cat:cs.CL OR cat:cs.LG) AND submittedDate:[202608100000 TO 202608162359]"
    )
    per_line = plan_queries(["cs.CL"], start, end, {"l1": ["entropy collapse", "rlvr"], "l2": []})
    assert [q.key for q in per_line] == ["cs.CL|l1"]
    assert 'abs:"entropy collapse" OR abs:rlvr' in per_line[0].query


def test_window_is_paged_stored_and_refetching_adds_nothing(db_url: str, server: ArxivReplay) -> None:
    settings = replay_settings(server, db_url, page_size=100, delay_seconds=0.05, categories=CATS)
    store = open_store(db_url)
    total = expected(server)
    assert total > 300
    with recorded_run(store, "fetch") as run:
        summary = fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
        run.record(summary)
    assert summary.new == total and summary.unchanged == 0
    assert summary.requests == math.ceil(total / 100)
    assert run.counts["fetch"]["new"] == total
    assert count(store, Paper) == total == count(store, PaperVersion)
    # The package asked for what we planned: sorted by submission, through our session.
    first = server.api_requests()[0].query
    assert first["sortBy"] == "submittedDate" and first["sortOrder"] == "ascending"
    assert "submittedDate:[202608100000 TO 202608162359]" in first["search_query"]
    assert min(server.gaps()) >= 0.045
    again = fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    assert (again.new, again.updated, again.unchanged) == (0, 0, total)
    assert count(store, Paper) == total == count(store, PaperVersion)
    assert get_mark(store, "api", "+".join(sorted(CATS))) == dt.datetime(2026, 8, 16, 23, 59)
    store.close()


def test_a_new_version_is_stored_as_a_version_and_flagged(db_url: str, server: ArxivReplay) -> None:
    settings = replay_settings(server, db_url, page_size=500, categories=CATS)
    store = open_store(db_url)
    fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    old: Row = server.rows[0]
    server.rows[0] = Row(
        **{
            **old.__dict__,
            "version": 2,
            "title": old.title + " (revised)",
            "updated": old.updated + dt.timedelta(days=3),
        }
    )
    summary = fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    assert summary.updated == 1 and summary.new == 0
    with store.session() as s:
        paper = s.get(Paper, old.arxiv_id)
        assert paper.version == 2 and paper.needs_rejudge and paper.title.endswith("(revised)")
        assert paper.published == old.submitted.date()  # still the v1 date
        versions = s.scalars(select(PaperVersion.version).where(PaperVersion.arxiv_id == old.arxiv_id)).all()
        assert sorted(versions) == [1, 2]
        assert s.scalar(select(func.count()).select_from(Paper).where(Paper.needs_rejudge)) == 1
    store.close()


def test_malformed_page_loses_nothing_and_mark_stops_at_what_is_stored(
    db_url: str, server: ArxivReplay
) -> None:
    settings = replay_settings(server, db_url, page_size=100, max_retries=1, categories=CATS)
    store = open_store(db_url)
    total = expected(server)
    # Page 1 passes untouched; page 2 is cut off on both tries (max_retries=1).
    cut = b"<?xml version='1.0'?><feed xmlns='http://www.w3.org/2005/Atom'><entry><id>x"
    server.faults += [Fault(path="/api"), Fault(path="/api", body=cut), Fault(path="/api", body=cut)]
    with pytest.raises(SourceError, match="not well-formed XML"):
        fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    assert count(store, Paper) == 100  # page 1 stayed
    mark = get_mark(store, "api", "+".join(sorted(CATS)))
    with store.session() as s:
        newest_stored = s.scalar(select(func.max(Paper.published)))
    assert mark is not None and mark.date() <= newest_stored  # not past what was stored
    summary = fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])  # the rerun finishes
    assert summary.new == total - 100 and summary.unchanged == 100
    assert count(store, Paper) == total
    store.close()


def test_faults_mid_paging_are_retried_and_nothing_doubles(db_url: str, server: ArxivReplay) -> None:
    settings = replay_settings(
        server, db_url, page_size=100, delay_seconds=0.05, timeout_seconds=0.5, categories=CATS
    )
    store = open_store(db_url)
    total = expected(server)
    server.faults += [
        Fault(path="/api"),  # page 1 untouched
        Fault(path="/api", status=429, headers={"Retry-After": "1"}),
        Fault(path="/api", status=503),
        Fault(path="/api", delay=1.0),  # the client times out after 0.5 s
    ]
    summary = fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    assert summary.new == total == count(store, Paper) == count(store, PaperVersion)
    assert summary.requests == math.ceil(total / 100) + 3
    statuses = [r.status for r in server.api_requests()]
    assert statuses[:4] == [200, 429, 503, 200]  # the timed-out request is logged with 200 after all
    arrivals = [r.at for r in server.api_requests()]
    assert arrivals[2] - arrivals[1] >= 0.99  # Retry-After: 1 honoured
    store.close()


def test_http_400_mid_paging_keeps_stored_pages(db_url: str, server: ArxivReplay) -> None:
    settings = replay_settings(server, db_url, page_size=100, categories=CATS)
    store = open_store(db_url)
    error_feed = (FIXTURES / "id_abc_s0_m100_b79c8dcf6bc3.json").read_text()
    body = json.loads(error_feed)["body"].encode()
    server.faults += [Fault(path="/api"), Fault(path="/api", status=400, body=body)]
    with pytest.raises(SourceError, match="HTTP 400: incorrect id format for abc"):
        fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    assert count(store, Paper) == 100
    assert len(server.api_requests()) == 2  # a 400 is not retried
    store.close()


def test_empty_result_is_a_quiet_no_op(db_url: str, server: ArxivReplay) -> None:
    settings = replay_settings(server, db_url, categories=CATS)
    store = open_store(db_url)
    summary = fetch(store, settings, "api", since=dt.date(2020, 1, 6), until=dt.date(2020, 1, 12))
    assert (summary.new, summary.requests, summary.warnings) == (0, 1, [])
    assert count(store, Paper) == 0
    assert count(store, FetchMark) == 0  # nothing stored, nothing earned


def test_empty_first_page_of_a_non_empty_query_is_an_error_not_a_quiet_window(
    db_url: str, server: ArxivReplay
) -> None:
    settings = replay_settings(server, db_url, categories=CATS)
    store = open_store(db_url)
    empty = api_feed([], total=42, start=0, per_page=100)
    server.faults.append(Fault(path="/api", body=empty))
    with pytest.raises(SourceError, match="empty page"):
        fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    assert count(store, FetchMark) == 0
    store.close()


def test_the_30000_cap_stops_with_a_warning_and_keeps_the_mark_at_the_last_stored(
    db_url: str, server: ArxivReplay, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api_module, "API_RESULT_CAP", 150)  # the real cap, scaled down
    settings = replay_settings(server, db_url, page_size=100, categories=CATS)
    store = open_store(db_url)
    summary = fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    assert summary.new == 150
    [warning] = summary.warnings
    assert "at most 150" in warning and "--since/--until" in warning and "--category" in warning
    with store.session() as s:
        mark = s.scalars(select(FetchMark)).one().high_water
    assert mark < dt.datetime(2026, 8, 16, 23, 59)  # not the window's end: the rest is unstored
    store.close()


def test_recorded_search_pages_replay_through_the_unchanged_package(tmp_path: Path) -> None:
    with ArxivReplay() as server:
        settings = replay_settings(server, f"sqlite:///{tmp_path / 'x.db'}", page_size=10)
        session = PoliteSession.from_settings(settings.arxiv)
        client = make_client(settings, session)
        results = list(client.results(arxiv.Search(query="testing", max_results=20)))
        assert len(results) == 20 and len({r.entry_id for r in results}) == 20
        assert [r.query["start"] for r in server.log] == ["0", "10"]
        assert session.stats.requests == 2


@pytest.mark.parametrize(
    ("body", "says"),
    [
        # well-formed, so it used to parse as a feed with no entries: "0 results", exit 0
        (
            b"<!DOCTYPE html><html><head><title>arXiv is down for maintenance</title></head>"
            b"<body><p>Back soon.</p></body></html>",
            "an HTML page titled 'arXiv is down for maintenance'",
        ),
        (b"<html><body><h1>502 Bad Gateway</h1>", "an HTML page"),
        (b"<?xml version='1.0'?><status>ok</status>", "XML whose root element is <status>, not an Atom feed"),
    ],
)
def test_a_200_answer_that_is_not_an_atom_feed_is_a_source_error_not_zero_results(
    db_url: str, server: ArxivReplay, body: bytes, says: str
) -> None:
    settings = replay_settings(server, db_url, categories=CATS)
    store = open_store(db_url)
    server.faults.append(Fault(path="/api", body=body))
    with pytest.raises(SourceError, match=f"not an arXiv answer: {re.escape(says)}") as raised:
        fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    assert raised.value.exit_code == 5
    assert len(server.api_requests()) == 1  # a page from someone else: asking again will not help
    assert count(store, Paper) == 0 and count(store, FetchMark) == 0
    store.close()


def test_control_characters_in_api_text_never_reach_the_store(db_url: str, server: ArxivReplay) -> None:
    # C1 controls are legal in XML 1.0: CSI (U+009B) clears a terminal, OSC (U+009D) 8 makes a link.
    row = server.rows[0]
    row.title = "Scaling \x9b2J laws\x7f"
    row.abstract = "See \x9d8;;https://evil.example\x9cthis link\x9d8;;\x9c."
    row.authors = ["Ada \x9b31mLovelace"]
    settings = replay_settings(server, db_url, categories=CATS)
    store = open_store(db_url)
    fetch(store, settings, "api", since=WEEK[0], until=WEEK[1])
    with store.session() as s:
        paper = s.get(Paper, row.arxiv_id)
        version = s.scalars(select(PaperVersion).where(PaperVersion.arxiv_id == row.arxiv_id)).one()
    assert paper.title == version.title == "Scaling 2J laws"
    assert paper.abstract == version.abstract == "See 8;;https://evil.examplethis link8;;."
    assert paper.authors == ["Ada 31mLovelace"]
    store.close()
