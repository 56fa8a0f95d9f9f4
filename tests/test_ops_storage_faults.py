"""Storage faults: SQLite's write lock held too long, a reports folder that cannot be, full disks, and
the temp files a killed digest write leaves. Each is one line on stderr and a documented exit code,
with no digest file that has no `digests` row.
"""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import pg_schema_url
from digest_world import TRUSTED_PRECISION, World, sample, settled_digest, trusted_settings
from ops_helpers import MONITOR, env, monitor, start_paused, write_config
from sqlalchemy import event, func, select, text

from monitor.errors import DatabaseError
from monitor.report.period import resolve_period
from monitor.report.render import render
from monitor.store import open_store
from monitor.store.models import Paper
from monitor.store.records import Digest


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from pg_schema_url()


def one_line_error(done: subprocess.CompletedProcess[str], code: int, *expected: str) -> None:
    assert done.returncode == code, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    for text_ in expected:
        assert text_ in done.stderr, done.stderr


def digests(url: str) -> int:
    store = open_store(url)
    try:
        with store.session() as s:
            return int(s.scalar(select(func.count()).select_from(Digest)) or 0)
    finally:
        store.close()


def sample_store(url: str) -> None:
    store = open_store(url)
    sample(World(store))
    store.close()


def report_config(tmp_path: Path, url: str, **paths: str) -> Path:
    return write_config(tmp_path, url, verdicts={"precision": TRUSTED_PRECISION}, paths=paths)


def test_a_write_lock_held_past_the_busy_timeout_exits_75_in_one_line(tmp_path, sqlite_url) -> None:
    open_store(sqlite_url).close()  # the schema exists: opening needs no write
    config = write_config(tmp_path, sqlite_url, database={"busy_timeout_seconds": 1})
    holder = sqlite3.connect(tmp_path / "monitor.db")
    holder.execute("BEGIN IMMEDIATE")  # another process's write transaction, held open
    try:
        started = time.monotonic()
        done = monitor(config, "run", "--source", "sample", "--no-email", timeout=120)
        waited = time.monotonic() - started
        from monitor.errors import DatabaseBusy

        store = open_store(sqlite_url, busy_timeout_seconds=0.2)
        with pytest.raises(DatabaseBusy) as err, store.session() as s:
            s.execute(text("UPDATE schema_version SET version = version"))
        store.close()
    finally:
        holder.rollback()
        holder.close()
    one_line_error(done, 75, "stayed locked by another process's write for 1s", "busy_timeout_seconds")
    assert waited < 30  # the configured second, not SQLite's default 30 s wait
    assert err.value.exit_code == 75 and "0.2s" in str(err.value)
    # Once the other write is done, the same command works.
    again = monitor(config, "runs", timeout=60)
    assert again.returncode == 0, again.stderr


def test_reports_under_a_regular_file_is_one_line_and_records_nothing(tmp_path, sqlite_url) -> None:
    sample_store(sqlite_url)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the reports folder's parent should be")
    config = report_config(tmp_path, sqlite_url, reports=str(blocker / "reports"))
    done = monitor(config, "report", "--period", "2026-W11", timeout=120)
    one_line_error(done, 74, f"cannot write {blocker / 'reports' / 'digest-2026-W11.md'}", "Not a directory")
    assert digests(sqlite_url) == 0


def test_a_full_disk_for_reports_leaves_no_file_and_no_row(tmp_path, pg_url) -> None:
    """A real EFBIG: the child may write no file larger than the Markdown, so the HTML does not fit.

    PostgreSQL keeps the database out of the limit (its server writes it), so only the reports hit it.
    """
    sample_store(pg_url)
    store = open_store(pg_url)
    digest = settled_digest(store, trusted_settings(), resolve_period("2026-W11"))
    store.close()
    md, html = (len(render(digest, fmt, trusted_settings()).encode()) for fmt in ("md", "html"))
    assert md + 1024 < html  # room for the Markdown (its date may differ by a few bytes), not the HTML
    limit = md + 512
    reports = tmp_path / "reports"
    config = report_config(tmp_path, pg_url, reports=str(reports))
    done = subprocess.run(
        [MONITOR, "--config", str(config), "report", "--period", "2026-W11", "--format", "html"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env(),
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),  # in the child
    )
    one_line_error(done, 74, f"cannot write {reports / 'digest-2026-W11.html'}", "File too large")
    assert digests(pg_url) == 0
    assert sorted(p.name for p in reports.iterdir()) == []  # no Markdown without its row, no temp file
    # With room again the same command writes both files and the row.
    ok = monitor(config, "report", "--period", "2026-W11", "--format", "html", timeout=120)
    assert ok.returncode == 0, ok.stderr
    assert digests(pg_url) == 1
    assert {"digest-2026-W11.md", "digest-2026-W11.html"} <= {p.name for p in reports.iterdir()}


def test_sqlite_on_a_full_disk_is_a_database_error_not_a_traceback(sqlite_url) -> None:
    """SQLite's own SQLITE_FULL: the database may not grow past the pages it has (max_page_count)."""
    store = open_store(sqlite_url)
    with store.engine.connect() as conn:
        pages = int(conn.exec_driver_sql("PRAGMA page_count").scalar() or 0)
    store.engine.dispose()

    def cap(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        dbapi_conn.execute(f"PRAGMA max_page_count = {pages}")

    event.listen(store.engine, "connect", cap)
    with pytest.raises(DatabaseError) as err:
        for n in range(100):  # 100 papers of 8 kB cannot fit in the pages a fresh schema has
            with store.session() as s:
                s.add(Paper(arxiv_id=f"2601.{n:05d}", title="t", abstract="x" * 8000, source="file"))
    store.close()
    assert err.value.exit_code == 4
    assert "cannot be written: database or disk is full" in str(err.value) and "monitor.db" in str(err.value)


def test_a_killed_digest_writes_temp_file_is_removed_by_the_next_write(tmp_path, sqlite_url) -> None:
    sample_store(sqlite_url)
    reports = tmp_path / "reports"
    config = report_config(tmp_path, sqlite_url, reports=str(reports))
    victim = start_paused(
        config, "write:digest-2026-W11.md", tmp_path / "pause.txt", "report", "--period", "2026-W11"
    )
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    (half,) = reports.glob(".digest-2026-W11.md.*")
    assert half.stat().st_size > 0 and digests(sqlite_url) == 0
    # A later write into the folder, even of another period's digest, removes it at once: its
    # writer is dead (not only once it is ten minutes old, and not only a rewrite of the same file).
    done = monitor(config, "report", "--period", "2026-W10", timeout=120)
    assert done.returncode == 0, done.stderr
    assert not half.exists()
    assert sorted(p.name for p in reports.iterdir()) == ["digest-2026-W10.md", "feed.xml"]


def test_a_live_writers_temp_file_and_the_users_dot_files_are_left_alone(tmp_path) -> None:
    from monitor.files import HOST_TAG, write_atomic

    reports = tmp_path / "reports"
    reports.mkdir()
    keep = reports / ".keep"  # the user's, however old
    keep.write_text("")
    old = time.time() - 3600
    os.utime(keep, (old, old))
    live = subprocess.Popen(["sleep", "60"])
    busy = reports / f".digest-2026-W11.md.abc.{HOST_TAG}-{live.pid}.tmp"  # its write in progress
    busy.write_text("being written")
    try:
        write_atomic(reports / "digest-2026-W12.md", "text")
        assert busy.exists() and keep.exists()
    finally:
        live.kill()
        live.wait()
    write_atomic(reports / "digest-2026-W12.md", "text")  # now its writer is gone
    assert not busy.exists() and keep.exists()


def test_a_digest_row_that_cannot_be_saved_leaves_no_new_file(tmp_path, sqlite_url) -> None:
    """The files are in place before the row; a failed row write (here a real lock) takes them back."""
    from monitor.errors import DatabaseBusy
    from monitor.report.digest import write_digest
    from monitor.report.gather import settle_period

    sample_store(sqlite_url)
    store = open_store(sqlite_url, busy_timeout_seconds=0.2)
    settings = trusted_settings()
    settings.paths.reports = tmp_path / "reports"
    # The period's outcomes stored before the lock, so the digest gets as far as its own row.
    week = resolve_period("2026-W11")
    settle_period(store, settings, week)
    holder = sqlite3.connect(tmp_path / "monitor.db")
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(DatabaseBusy):
            write_digest(store, settings, week, formats=["html"])
    finally:
        holder.rollback()
        holder.close()
    assert list((tmp_path / "reports").iterdir()) == []  # neither file, no temp file
    assert digests(sqlite_url) == 0
    write_digest(store, settings, week, formats=["html"])  # the lock gone, the rerun writes all
    store.close()
    assert digests(sqlite_url) == 1
    assert {p.name for p in (tmp_path / "reports").iterdir()} == {
        "digest-2026-W11.md",
        "digest-2026-W11.html",
        "feed.xml",
    }
