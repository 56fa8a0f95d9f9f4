"""Ingest and request-count figures for the sources stage.

    python bench/ingest_bench.py [--corpus ../shared/arxiv/corpus.jsonl] [--pg postgresql+psycopg://postgres@127.0.0.1:5432/test]

1. Load the 22,120-paper snapshot into a fresh SQLite file and a fresh PostgreSQL schema, each in its
   own child process so peak memory (max RSS, interpreter included) is that load's alone; then load
   it again (the no-op reload) and time that too.
2. Requests the API source makes for one week of cs.CL+cs.LG+cs.AI at about 6,000 papers: the real
   ApiSource and the unchanged `arxiv` package page through a local replay server serving 6,000
   synthetic results (real corpus rows re-dated into one week), compared with the floor of one
   request per 2,000 results, and the politeness wait that costs at arXiv's 3 s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the replay server lives with the tests
os.environ.setdefault("MONITOR_ARXIV_MIN_DELAY", "0")

DEFAULT_CORPUS = REPO.parent / "shared" / "arxiv" / "corpus.jsonl"
DEFAULT_PG = os.environ.get("MONITOR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def load_once(url: str, corpus: str) -> None:
    """Child process: load, reload, print JSON figures."""
    from monitor.config import Settings
    from monitor.sources.ingest import fetch
    from monitor.store import open_store

    store = open_store(url)
    settings = Settings(database={"url": url})
    started = time.perf_counter()
    first = fetch(store, settings, corpus)
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    again = fetch(store, settings, corpus)
    reload_s = time.perf_counter() - started
    store.close()
    print(
        json.dumps(
            {
                "new": first.new,
                "load_s": load_s,
                "reload_new": again.new,
                "reload_s": reload_s,
                "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def run_child(url: str, corpus: Path) -> dict:
    done = subprocess.run(
        [sys.executable, __file__, "--child", url, "--corpus", str(corpus)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def pg_schema(base: str) -> tuple[str, str]:
    from sqlalchemy import create_engine, text

    schema = "bench_" + uuid.uuid4().hex[:10]
    engine = create_engine(base)
    with engine.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    engine.dispose()
    return schema, f"{base}?options=-csearch_path%3D{schema}"


def drop_schema(base: str, schema: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(base)
    with engine.begin() as conn:
        conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
    engine.dispose()


def api_week_requests(corpus: Path, papers: int = 6000) -> dict:
    from arxiv_replay import ArxivReplay, Row, replay_settings

    from monitor.sources.ingest import fetch
    from monitor.store import open_store

    base = [json.loads(line) for _, line in zip(range(papers), corpus.open(), strict=False)]
    start = dt.datetime(2026, 8, 10)
    cats = [["cs.CL"], ["cs.LG"], ["cs.AI"], ["cs.CL", "cs.AI"]]
    rows = [
        Row(
            arxiv_id=f"2608.{i:05d}",
            version=1,
            title=r["title"],
            abstract=r["abstract"],
            authors=r["authors"],
            categories=cats[i % 4],
            primary_category=cats[i % 4][0],
            submitted=start + dt.timedelta(seconds=i * 100),
            updated=start + dt.timedelta(seconds=i * 100),
        )
        for i, r in enumerate(base)
    ]
    with tempfile.TemporaryDirectory() as tmp, ArxivReplay(rows, fixtures=None) as server:
        url = f"sqlite:///{tmp}/week.db"
        store = open_store(url)
        settings = replay_settings(server, url, page_size=2000, categories=["cs.CL", "cs.LG", "cs.AI"])
        summary = fetch(store, settings, "api", since=dt.date(2026, 8, 10), until=dt.date(2026, 8, 16))
        store.close()
    floor = math.ceil(len(rows) / 2000)
    return {
        "results": len(rows),
        "stored": summary.new,
        "requests": summary.requests,
        "floor": floor,
        "politeness_wait_at_3s": (summary.requests - 1) * 3.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--pg", default=DEFAULT_PG)
    parser.add_argument("--child")
    args = parser.parse_args()
    if args.child:
        load_once(args.child, str(args.corpus))
        return

    print(f"snapshot: {args.corpus}")
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = run_child(f"sqlite:///{tmp}/bench.db", args.corpus)
    print(
        f"SQLite     : load {sqlite['new']} papers in {sqlite['load_s']:.1f} s, "
        f"peak RSS {sqlite['max_rss_mb']:.0f} MB; "
        f"reload adds {sqlite['reload_new']} in {sqlite['reload_s']:.1f} s"
    )
    try:
        schema, url = pg_schema(args.pg)
    except Exception as exc:  # noqa: BLE001 - report and go on without PostgreSQL
        print(f"PostgreSQL : not reachable ({exc.__class__.__name__}); skipped")
    else:
        try:
            pg = run_child(url, args.corpus)
        finally:
            drop_schema(args.pg, schema)
        print(
            f"PostgreSQL : load {pg['new']} papers in {pg['load_s']:.1f} s, "
            f"peak RSS {pg['max_rss_mb']:.0f} MB; reload adds {pg['reload_new']} in {pg['reload_s']:.1f} s"
        )
    week = api_week_requests(args.corpus)
    print(
        f"API week   : {week['results']} results (cs.CL+cs.LG+cs.AI, one week) -> "
        f"{week['requests']} requests "
        f"(floor ceil(n/2000) = {week['floor']}), {week['stored']} stored; "
        f"politeness wait at 3 s: {week['politeness_wait_at_3s']:.0f} s"
    )


if __name__ == "__main__":
    main()
