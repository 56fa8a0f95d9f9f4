"""The RSS source: feedparser, unchanged, reading feeds fetched from a local server by our client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from arxiv_replay import FIXTURES, ArxivReplay, Fault, replay_settings
from sqlalchemy import func, select

from monitor.config import Settings
from monitor.errors import SourceError
from monitor.sources.ingest import fetch
from monitor.store import open_store
from monitor.store.marks import get_mark
from monitor.store.models import Paper, PaperVersion
from monitor.store.runs import recorded_run

RECORDED = FIXTURES / "rss.arxiv.org_atom_cs.AI_2025-08-20.xml"
HEAD = """<?xml version='1.0' encoding='UTF-8'?>
<feed xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:dc="http://purl.org/dc/elements/1.1/"
 xmlns="http://www.w3.org/2005/Atom" xml:lang="en-us">
  <id>http://rss.arxiv.org/atom/cs.AI</id>
  <title>cs.AI updates on arXiv.org</title>
  <updated>{updated}</updated>
"""


def entry(arxiv_id: str, version: int, kind: str, title: str) -> str:
    return f"""  <entry>
    <id>oai:arXiv.org:{arxiv_id}v{version}</id>
    <title>{title}</title>
    <updated>2025-08-21T04:00:19+00:00</updated>
    <link href="https://arxiv.org/abs/{arxiv_id}" rel="alternate" type="text/html"/>
    <summary>arXiv:{arxiv_id}v{version} Announce Type: {kind}
Abstract: A revised abstract about {title}.</summary>
    <category term="cs.AI"/>
    <published>2025-08-21T00:00:00-04:00</published>
    <arxiv:announce_type>{kind}</arxiv:announce_type>
    <dc:creator>Ada Lovelace, Alan Turing</dc:creator>
  </entry>
"""


@pytest.fixture
def server() -> Iterator[ArxivReplay]:
    with ArxivReplay() as srv:
        srv.feeds["/atom/cs.AI"] = RECORDED.read_bytes()
        yield srv


def papers(store) -> int:
    with store.session() as s:
        return s.scalar(select(func.count()).select_from(Paper))


def test_truncated_feed_keeps_exactly_its_complete_entries(db_url: str, server: ArxivReplay) -> None:
    complete = RECORDED.read_bytes().count(b"</entry>")
    assert complete == 86  # the 87th entry (2508.13435) is cut off mid-way
    settings = replay_settings(server, db_url, categories=["cs.AI"])
    store = open_store(db_url)
    with recorded_run(store, "fetch") as run:
        summary = fetch(store, settings, "rss")
        run.record(summary)
    assert summary.new == complete == papers(store)
    assert summary.truncated and summary.requests == 1
    assert any("truncated" in w for w in run.warnings)
    with store.session() as s:
        assert s.get(Paper, "2508.13435") is None  # the half entry is not stored
        last = s.get(Paper, "2508.13434")
        assert last is not None and last.abstract and last.authors
        first = s.get(Paper, "2508.13167")
        assert first.title.startswith("Chain-of-Agents") and first.authors[0] == "Weizhen Li"
        assert not first.abstract.startswith("arXiv:")  # the announce preamble is stripped
        assert str(first.published) == "2025-08-20"
    assert get_mark(store, "rss", "cs.AI") is None  # the rest of the day is unstored
    again = fetch(store, settings, "rss")
    assert (again.new, again.unchanged) == (0, complete)
    store.close()


def test_replace_records_a_version_and_flags_the_paper(db_url: str, server: ArxivReplay) -> None:
    settings = replay_settings(server, db_url, categories=["cs.AI"])
    store = open_store(db_url)
    fetch(store, settings, "rss")
    server.feeds["/atom/cs.AI"] = (
        HEAD.format(updated="2025-08-21T04:00:19+00:00")
        + entry("2508.13167", 2, "replace", "Chain-of-Agents v2")
        + entry("2508.99999", 3, "replace-cross", "A paper we never saw")
        + entry("2508.88888", 1, "new", "A brand new paper")
        + "</feed>\n"
    ).encode()
    with recorded_run(store, "fetch") as run:
        summary = fetch(store, settings, "rss")
        run.record(summary)
    assert (summary.new, summary.updated) == (2, 1)
    assert run.warnings == []
    with store.session() as s:
        paper = s.get(Paper, "2508.13167")
        assert paper.version == 2 and paper.needs_rejudge and paper.title == "Chain-of-Agents v2"
        assert str(paper.published) == "2025-08-20"  # v1 date kept
        versions = s.scalars(select(PaperVersion.version).where(PaperVersion.arxiv_id == "2508.13167")).all()
        assert sorted(versions) == [1, 2]
        unseen = s.get(Paper, "2508.99999")
        assert unseen.version == 3 and unseen.published is None  # a replace does not tell the v1 date
        assert s.get(Paper, "2508.88888").authors == ["Ada Lovelace", "Alan Turing"]
    assert get_mark(store, "rss", "cs.AI") is not None
    store.close()


@pytest.mark.parametrize(
    ("updated", "is_warning"),
    [("2025-08-20T04:00:00+00:00", True), ("2025-08-23T04:00:00+00:00", False)],  # Wednesday, Saturday
)
def test_empty_feed_warns_only_on_announcement_days(
    sqlite_url: str, server: ArxivReplay, updated: str, is_warning: bool
) -> None:
    server.feeds["/atom/cs.AI"] = (HEAD.format(updated=updated) + "</feed>\n").encode()
    store = open_store(sqlite_url)
    with recorded_run(store, "fetch") as run:
        summary = fetch(store, replay_settings(server, sqlite_url, categories=["cs.AI"]), "rss")
        run.record(summary)
    assert summary.new == 0
    assert bool(run.warnings) is is_warning
    assert bool(summary.notes) is not is_warning
    store.close()


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"<html><body><h1>Service unavailable</h1><p>Try later", "not an arXiv answer: an HTML page"),
        # well-formed, so feedparser reports no error, just no entries: it read as an empty feed
        (
            b"<!DOCTYPE html><html><head><title>Network login</title></head>"
            b"<body><p>Sign in</p></body></html>",
            "not an arXiv answer: an HTML page titled 'Network login'",
        ),
        (b"<?xml version='1.0'?><error><p>quota</p></error>", "neither an Atom nor an RSS feed"),
    ],
)
def test_a_page_that_is_not_a_feed_is_a_source_error_and_stores_nothing(
    sqlite_url: str, server: ArxivReplay, body: bytes, says: str
) -> None:
    server.feeds["/atom/cs.AI"] = body
    store = open_store(sqlite_url)
    with pytest.raises(SourceError, match=says):
        fetch(store, replay_settings(server, sqlite_url, categories=["cs.AI"]), "rss")
    assert papers(store) == 0 and get_mark(store, "rss", "cs.AI") is None
    store.close()


def test_feed_url_joins_categories_and_503_is_retried(sqlite_url: str, server: ArxivReplay) -> None:
    server.feeds["/atom/cs.AI+cs.CL"] = RECORDED.read_bytes()
    server.faults.append(Fault(status=503, path="/atom"))
    store = open_store(sqlite_url)
    settings = replay_settings(server, sqlite_url, delay_seconds=0.05)
    summary = fetch(store, settings, "rss", categories=["cs.CL", "cs.AI"])
    assert [r.path for r in server.log] == ["/atom/cs.AI+cs.CL"] * 2
    assert summary.requests == 2 and summary.new == 86
    store.close()


def test_atom_file_source_reads_the_same_feed_offline(sqlite_url: str, tmp_path: Path) -> None:
    store = open_store(sqlite_url)
    summary = fetch(store, Settings(database={"url": sqlite_url}), str(RECORDED))
    assert summary.new == 86 and summary.truncated and summary.requests == 0
    store.close()


RSS2 = """<?xml version='1.0' encoding='UTF-8'?>
<rss xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:dc="http://purl.org/dc/elements/1.1/" version="2.0">
  <channel>
    <title>cs.CL updates on arXiv.org</title>
    <link>http://rss.arxiv.org/rss/cs.CL</link>
    <description>cs.CL updates</description>
    <lastBuildDate>Thu, 21 Aug 2025 00:00:00 -0400</lastBuildDate>
    <item>
      <title>Entropy Collapse in RLVR</title>
      <link>https://arxiv.org/abs/2508.77777</link>
      <description>arXiv:2508.77777v1 Announce Type: new
Abstract: Policy entropy collapses early.</description>
      <guid isPermaLink="false">oai:arXiv.org:2508.77777v1</guid>
      <category>cs.CL</category>
      <pubDate>Thu, 21 Aug 2025 00:00:00 -0400</pubDate>
      <arxiv:announce_type>new</arxiv:announce_type>
      <dc:creator>Grace Hopper, Edsger Dijkstra</dc:creator>
    </item>
    <item>
      <title>Cut off</title>
      <guid isPermaLink="false">oai:arXiv.org:2508.77778v1</guid>
"""


def test_rss_flavour_feed_truncated_keeps_its_complete_items(sqlite_url: str, server: ArxivReplay) -> None:
    server.feeds["/rss/cs.CL"] = RSS2.encode()
    store = open_store(sqlite_url)
    settings = replay_settings(server, sqlite_url, rss_flavour="rss", categories=["cs.CL"])
    summary = fetch(store, settings, "rss")
    assert summary.new == 1 and summary.truncated
    with store.session() as s:
        paper = s.get(Paper, "2508.77777")
        assert paper.abstract == "Policy entropy collapses early."
        assert paper.authors == ["Grace Hopper", "Edsger Dijkstra"] and paper.categories == ["cs.CL"]
    store.close()


def test_control_characters_in_feed_text_never_reach_the_store(sqlite_url: str, server: ArxivReplay) -> None:
    # feedparser's lenient parser turns a character reference to ESC (not XML 1.0) into the character
    # itself, and passes DEL through; C1 controls it maps to Windows-1252 punctuation on its own.
    body = HEAD.format(updated="2025-08-21T00:30:00-04:00") + entry(
        "2508.14001", 1, "new", "Agents &#x1b;[2Jthat\x7f plan"
    )
    server.feeds["/atom/cs.AI"] = (body + "</feed>\n").encode()
    store = open_store(sqlite_url)
    fetch(store, replay_settings(server, sqlite_url, categories=["cs.AI"]), "rss")
    with store.session() as s:
        paper = s.get(Paper, "2508.14001")
    assert paper.title == "Agents [2Jthat plan"
    assert paper.abstract == "A revised abstract about Agents [2Jthat plan."
    store.close()
