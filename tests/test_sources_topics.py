"""Line topics: config, then the line's own, then its claims', then derived; and per-line API queries."""

from __future__ import annotations

import datetime as dt

from arxiv_replay import ArxivReplay, Row, replay_settings

from monitor.config import Settings
from monitor.sources.ingest import fetch
from monitor.sources.topics import derive_terms, line_topics
from monitor.store import open_store
from monitor.store.models import Anchor, Claim, Line, LineClaim


def seed_lines(store) -> None:
    with store.session() as s:
        s.add_all(
            [
                Line(id="cfg", question="q"),
                Line(id="own", question="q", topics=["preference tuning"]),
                Line(id="claims", question="q"),
                Line(id="derived", question="q"),
                Line(id="gone", question="q", topics=["x"], retired_at=dt.datetime(2026, 1, 1)),
            ]
        )
        s.add_all(
            [
                Claim(
                    id="c1", text="RLVR narrows output diversity", kind="dated", topics=["rlvr", "diversity"]
                ),
                Claim(id="c2", text="Entropy collapse limits exploration in RL for LLMs", kind="dated"),
                Claim(id="c3", text="Entropy collapse appears early in RLVR training", kind="dated"),
            ]
        )
        s.flush()
        s.add_all(
            [
                LineClaim(line_id="claims", claim_id="c1", role="dated"),
                LineClaim(line_id="derived", claim_id="c2", role="dated"),
                LineClaim(line_id="derived", claim_id="c3", role="dated"),
            ]
        )
        s.add(
            Anchor(line_id="derived", arxiv_id="2505.11711", cited_title="Entropy collapse in reasoning RL")
        )


def test_where_each_lines_topics_come_from(db_url: str) -> None:
    store = open_store(db_url)
    seed_lines(store)
    settings = Settings(database={"url": db_url}, arxiv={"topics": {"cfg": ["calibration"]}})
    topics = line_topics(store, settings)
    assert set(topics) == {"cfg", "own", "claims", "derived"}  # retired lines are not watched
    assert topics["cfg"] == ["calibration"]
    assert topics["own"] == ["preference tuning"]
    assert topics["claims"] == ["diversity", "rlvr"]
    assert topics["derived"][0] == "entropy collapse"  # shared by all three texts
    store.close()


def test_derived_terms_prefer_shared_phrases() -> None:
    terms = derive_terms(["Entropy collapse limits exploration", "entropy collapse in RLVR", "RLVR sharpens"])
    assert terms[:2] == ["entropy collapse", "rlvr"]
    assert "entropy" not in terms and "collapse" not in terms


def test_topics_mode_sends_one_query_per_line(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    seed_lines(store)
    stamp = dt.datetime(2026, 8, 12, 12)
    rows = [
        Row(
            "2608.00001",
            1,
            "Entropy collapse",
            "entropy collapse in RLVR",
            [],
            ["cs.CL"],
            "cs.CL",
            stamp,
            stamp,
        )
    ]
    with ArxivReplay(rows, fixtures=None) as server:
        settings = replay_settings(server, sqlite_url, query_mode="topics", categories=["cs.CL"])
        summary = fetch(store, settings, "api", since=dt.date(2026, 8, 10), until=dt.date(2026, 8, 16))
        queries = [r.query["search_query"] for r in server.api_requests()]
    assert len(queries) == 3 and summary.requests == 3  # "cfg" has no terms here: warned, not queried
    assert [w for w in summary.warnings if "line cfg has no search terms" in w]
    assert all(q.startswith("cat:cs.CL AND (abs:") for q in queries)
    assert any('abs:"preference tuning"' in q for q in queries)
    store.close()
