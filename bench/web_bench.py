"""Benchmark the claim board (`monitor serve`): page times, and review decisions per minute.

    python bench/web_bench.py pages --db sqlite:////path/monitor.db [--pg] [--requests 100]
    python bench/web_bench.py review --db sqlite:////path/monitor.db [--items 30] [--screenshots docs]

`pages`: starts `monitor serve` over the store, then GETs the board and claim pages (cycling over the
board's claims) `--requests` times each, one after another from one HTTP client, and prints p50/p95.
With `--pg` the SQLite store is first copied table by table into a fresh PostgreSQL schema and measured
there too. `review`: on two copies of the store, decides the first `--items` items of the review queue
by confirming each, once in the browser (Playwright driving /usr/bin/chromium, signed in with the
token) and once through the terminal walk (`monitor review`, one line per key from a pipe); prints
decisions per minute. Both are scripted, so they measure the tools' own latency, not a reader's.
`--screenshots DIR` then saves the board, a claim page (its top and its evidence) and a paper page from
the browser's copy as PNGs.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests
from sqlalchemy import create_engine, insert, select, text

REPO = Path(__file__).resolve().parent.parent
PG_BASE = os.environ.get("MONITOR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
TOKEN = "bench-" + uuid.uuid4().hex
CHROMIUM = "/usr/bin/chromium"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def served(url: str, cwd: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "MONITOR_WEB__TOKEN": TOKEN, "MONITOR_DATABASE__URL": url}
    cmd = [sys.executable, "-c", "from monitor.cli import main; main()", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"monitor serve did not start: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def timed(session: requests.Session, url: str) -> float:
    started = time.perf_counter()
    response = session.get(url, timeout=120)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed


def percentiles(times: list[float]) -> str:
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return f"p50 {1000 * cuts[49]:.0f} ms, p95 {1000 * cuts[94]:.0f} ms (n={len(times)})"


def page_times(url: str, cwd: Path, n: int) -> dict[str, str]:
    with served(url, cwd) as base, requests.Session() as session:
        board = session.get(base + "/", timeout=300).text
        claims = sorted(set(re.findall(r'href="/claims/([^"]+)"', board)))
        board_times = [timed(session, base + "/") for _ in range(n)]
        claim_times = [timed(session, f"{base}/claims/{claims[i % len(claims)]}") for i in range(n)]
    return {"claims": str(len(claims)), "board": percentiles(board_times), "claim": percentiles(claim_times)}


@contextmanager
def pg_copy(sqlite_url: str) -> Iterator[str]:
    """A PostgreSQL copy of the SQLite store in its own schema, dropped afterwards."""
    url = copy_to_pg(sqlite_url)
    try:
        yield url
    finally:
        schema = url.rsplit("%3D", 1)[1]
        with create_engine(PG_BASE).begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))


def copy_to_pg(sqlite_url: str) -> str:
    """The SQLite store copied into a fresh PostgreSQL schema (migrated first, then every table)."""
    import monitor.store.records  # noqa: F401 - registers the run tables with the metadata
    from monitor.store import open_store
    from monitor.store.models import Base

    schema = "web_bench_" + uuid.uuid4().hex[:8]
    admin = create_engine(PG_BASE)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    url = f"{PG_BASE}?options=-csearch_path%3D{schema}"
    open_store(url).close()
    source, target = create_engine(sqlite_url), create_engine(url)
    with source.connect() as src, target.begin() as dst:
        for table in Base.metadata.sorted_tables:
            dst.execute(table.delete())
            rows = [dict(r._mapping) for r in src.execute(select(table))]
            for start in range(0, len(rows), 5000):
                dst.execute(insert(table), rows[start : start + 5000])
            if "id" in table.c and table.c.id.autoincrement is True and rows:
                dst.execute(
                    text(f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), :n)"),
                    {"n": max(r["id"] for r in rows)},
                )
    return url


def browser_review(base: str, items: int, shots: Path | None) -> float:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        page.goto(base + "/login?next=/review")
        page.fill("input[name=name]", "bench")
        page.fill("input[name=token]", TOKEN)
        page.click("#sign-in")
        started = time.perf_counter()
        for _ in range(items):
            page.locator(".review-item").first.locator("button.confirm").click()
            page.wait_for_selector("#done")
        elapsed = time.perf_counter() - started
        if shots is not None:
            page.goto(base + "/")
            page.screenshot(path=str(shots / "web-board.png"))
            # A claim whose evidence stands several ways (counts, waits, withheld), if there is one.
            mixed = page.locator('#board tbody tr:not(:has(td.UNTESTED)):has-text("withheld") a').first
            moved = page.locator("#board tbody tr:not(:has(td.UNTESTED)) a").first
            first = page.locator("#board tbody tr a").first
            (mixed if mixed.count() else moved if moved.count() else first).click()
            page.screenshot(path=str(shots / "web-claim.png"))
            # Its evidence grouped by standing: where the withheld leanings begin, under their heading.
            groups = page.locator('h3.group[data-standing="withheld"], h3.group[data-standing="waits"]')
            heading = groups.first if groups.count() else page.locator("#evidence")
            heading.evaluate("e => e.scrollIntoView()")
            page.screenshot(path=str(shots / "web-claim-evidence.png"))
            page.locator(".card.evidence a").first.click()
            page.screenshot(path=str(shots / "web-paper.png"), full_page=True)
        browser.close()
    return elapsed


def terminal_review(url: str, cwd: Path, items: int) -> float:
    env = {**os.environ, "MONITOR_DATABASE__URL": url}
    keys = "y\n" * items + "q\n"
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", "from monitor.cli import main; main()", "review"],
        input=keys,
        text=True,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=1800,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or f"confirmed {items}" not in done.stdout.replace("\n", " "):
        raise SystemExit(
            f"terminal walk failed ({done.returncode}): {done.stdout[-1500:]}{done.stderr[-1500:]}"
        )
    return elapsed


def review(db: Path, items: int, shots: Path | None) -> None:
    with tempfile.TemporaryDirectory(prefix="web-bench-") as tmp:
        web, term = Path(tmp) / "web.db", Path(tmp) / "term.db"
        shutil.copy(db, web)
        shutil.copy(db, term)
        with served(f"sqlite:///{web}", db.parent) as base:
            browser = browser_review(base, items, shots)
        terminal = terminal_review(f"sqlite:///{term}", db.parent, items)
    print(
        f"browser: {items} confirmations in {browser:.1f} s = {60 * items / browser:.0f} decisions/min "
        "(each refreshes the verdicts and reloads the queue)"
    )
    print(
        f"terminal: {items} confirmations in {terminal:.1f} s = {60 * items / terminal:.0f} decisions/min "
        "(start-up, queue and one verdict refresh at the end included)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["pages", "review"])
    parser.add_argument("--db", required=True, help="a SQLite store URL (sqlite:////abs/path/monitor.db)")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--pg", action="store_true", help="pages: also on a PostgreSQL copy")
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--screenshots", type=Path)
    args = parser.parse_args()
    db = Path(args.db.removeprefix("sqlite:///"))
    if args.what == "review":
        review(db, args.items, args.screenshots)
        return
    print("SQLite:", page_times(args.db, db.parent, args.requests))
    if args.pg:
        with pg_copy(args.db) as url:
            print("PostgreSQL:", page_times(url, db.parent, args.requests))


if __name__ == "__main__":
    main()
