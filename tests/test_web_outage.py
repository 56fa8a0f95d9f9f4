"""The claim board while PostgreSQL goes away (issue 33, item 9): `monitor serve` on a private,
throwaway cluster (tests/pg_cluster.py) that the test stops or freezes (SIGSTOP) mid-serve. Every page
then answers 503 with a one-line reason and Retry-After, within web.request_timeout_seconds, and the
log gets one line per request, no traceback; once the cluster answers again, so does the board."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import pg_schema_url
from digest_world import TRUSTED_ENV
from pg_cluster import Cluster, private_cluster
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from web_world import TOKEN, board_settings, fill

from monitor.store import open_store

DEFAULT_DEADLINE = 15.0  # web.request_timeout_seconds' default, which these tests rely on


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with private_cluster() as running:
        yield running


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def board(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`monitor serve` over a filled store on the private cluster, with default settings."""
    store = open_store(cluster.url)
    fill(store, board_settings(cluster.url))
    store.close()
    port = _free_port()
    env = {**os.environ, **TRUSTED_ENV, "MONITOR_WEB__TOKEN": TOKEN, "MONITOR_DATABASE__URL": cluster.url}
    proc = subprocess.Popen(
        [sys.executable, "-c", "from monitor.cli import main; main()", "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None:
            pytest.fail(f"monitor serve exited {proc.returncode}: {proc.stderr.read()}")
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}", proc
    cluster.thaw()
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=30)


def get(url: str, timeout: float = 45) -> tuple[int, dict[str, str], str, float]:
    """Status, headers, body and seconds taken; an error status is an answer, not an exception."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            status, headers, body = r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as exc:
        status, headers, body = exc.code, dict(exc.headers), exc.read().decode()
    return status, {k.lower(): v for k, v in headers.items()}, body, time.monotonic() - started


def _log_of(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    _, err = proc.communicate(timeout=30)
    return err


PAGES = ("/", "/claims/c_calib", "/review")


def test_a_stopped_cluster_gives_503_with_retry_after_and_one_log_line_per_request(cluster, board) -> None:
    base, proc = board
    assert get(base + "/")[0] == 200  # the pool holds an open connection now
    cluster.stop()
    for page in PAGES:
        status, headers, body, _ = get(base + page)
        assert status == 503, (page, body[-500:])
        assert headers["retry-after"] == "30"
        assert "database is unavailable (it cannot be reached)" in body
        assert "127.0.0.1" not in body.split("<main>")[1]  # no server address for a visitor
    log = _log_of(proc)
    assert "Traceback" not in log, log
    lines = [line for line in log.splitlines() if "database unavailable" in line]
    assert len(lines) == len(PAGES), log
    assert all("Connection refused" in line or "connection" in line.lower() for line in lines), lines


def test_a_frozen_cluster_is_answered_503_within_the_deadline_and_the_board_recovers(cluster, board) -> None:
    base, proc = board
    assert get(base + "/")[0] == 200
    cluster.freeze()  # connections stay open; nothing answers on them
    for page in ("/", "/claims/c_calib"):
        status, headers, body, took = get(base + page)
        assert status == 503, (page, body[-500:])
        assert took < DEFAULT_DEADLINE + 5, took
        assert headers["retry-after"] == "30" and "database is unavailable" in body
    cluster.thaw()
    deadline = time.monotonic() + 30
    while (status := get(base + "/")[0]) != 200 and time.monotonic() < deadline:
        time.sleep(0.5)  # the stuck connections finish (or fail) and the pool answers again
    assert status == 200
    log = _log_of(proc)
    assert "Traceback" not in log, log
    assert "did not answer" in log or "no answer within" in log or "timeout" in log.lower(), log


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from pg_schema_url()


def test_a_bounded_store_has_the_server_cancel_a_long_statement(pg_url: str) -> None:
    """statement_timeout is PostgreSQL's (SQLite has its busy timeout): the shared cluster will do."""
    db_url = pg_url
    store = open_store(db_url, statement_timeout_seconds=1.5)
    try:
        with store.engine.connect() as conn:
            assert conn.execute(text("SHOW statement_timeout")).scalar() == "1500ms"
            # the URL's own options (this test's schema) are kept beside the timeout
            assert conn.execute(text("SELECT current_schema()")).scalar().startswith("t_")
            started = time.monotonic()
            with pytest.raises(OperationalError, match="statement timeout"):
                conn.execute(text("SELECT pg_sleep(10)"))
            assert time.monotonic() - started < 5
    finally:
        store.close()
    plain = open_store(db_url)
    with plain.engine.connect() as conn:
        assert conn.execute(text("SHOW statement_timeout")).scalar() == "0"  # commands are not bounded
    plain.close()
