"""Creating and upgrading the schema (issue 13 item 3): serialised between processes, all or nothing.

Real processes on real databases (SQLite and PostgreSQL); the crash point is the test-only pause hook
`migrate:v<N>` (monitor/testhooks.py), reached inside the migration's transaction.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import pg_schema_url
from ops_helpers import env, wait_paused, write_config
from schema_fixtures import load_schema
from sqlalchemy import create_engine, inspect

from monitor.store import SCHEMA_VERSION, open_store
from monitor.store.db import current_version
from monitor.store.models import Base


def _monitor(config: Path, *args: str, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "monitor", "--config", str(config), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(**extra),
    )


WAITING = "waiting for another process to finish creating or upgrading the database schema"


class _StderrLines:
    """A process's stderr, read in the background line by line, so a test can wait for one line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.ended = False
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._reader.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def _seen(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def wait_for(self, text: str, timeout: float) -> bool:
        """Whether a line containing `text` arrives within `timeout` seconds, before the stream ends."""
        with self._changed:
            self._changed.wait_for(lambda: self._seen(text) or self.ended, timeout)
            return self._seen(text)

    def all(self, timeout: float = 300) -> str:
        """Everything the process wrote to stderr, once it closed the stream."""
        self._reader.join(timeout)
        with self._changed:
            return "".join(self.lines)


def _tables(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return set(inspect(conn).get_table_names())
    finally:
        engine.dispose()


def test_a_kill_mid_migration_leaves_no_partial_schema(tmp_path: Path, db_url: str) -> None:
    config = write_config(tmp_path, db_url)
    marker = tmp_path / "pause.txt"
    victim = _monitor(
        config, "seeds", "import", MONITOR_TEST_PAUSE_AT="migrate:v1", MONITOR_TEST_PAUSE_FILE=str(marker)
    )
    wait_paused(victim, marker, "migrate:v1")  # every table created, the version not yet written
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    assert _tables(db_url) == set()  # nothing committed: not 16 of 19 tables, none
    store = open_store(db_url)  # the next open migrates completely
    try:
        with store.engine.connect() as conn:
            assert current_version(conn) == SCHEMA_VERSION
    finally:
        store.close()
    assert set(Base.metadata.tables) <= _tables(db_url)


def test_two_first_runs_on_a_fresh_database_never_fail_on_the_schema(tmp_path: Path, db_url: str) -> None:
    """The second run waits for the first one's migration, then runs (0) or finds the run lock (75)."""
    config = write_config(tmp_path, db_url)
    marker = tmp_path / "pause.txt"
    args = ("run", "--no-fetch", "--no-email")
    first = _monitor(config, *args, MONITOR_TEST_PAUSE_AT="migrate:v1", MONITOR_TEST_PAUSE_FILE=str(marker))
    wait_paused(first, marker, "migrate:v1")  # inside the migration, holding its lock
    second = _monitor(config, *args)
    try:
        said = _StderrLines(second)
        assert said.wait_for(WAITING, timeout=120), "".join(said.lines)  # it says it waits...
        assert second.poll() is None  # ...and does: for the first migration, not failing on half a schema
        (tmp_path / "pause.txt.resume").touch()
        out1, err1 = first.communicate(timeout=300)
        assert second.stdout is not None
        second.stdout.read()
        err2 = said.all()
        second.wait(timeout=300)
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.kill()
    # Once the schema is there both go for the run lock, and either may get it first: one runs (0), the
    # other runs after it (0) or finds the lock held (75); neither fails on the schema.
    codes = sorted((first.returncode, second.returncode))
    assert codes in ([0, 0], [0, 75]), err1 + err2
    for code, err in ((first.returncode, err1), (second.returncode, err2)):
        assert "already exists" not in err and "Traceback" not in err
        if code == 75:
            assert "another run" in err
    store = open_store(db_url)
    try:
        with store.engine.connect() as conn:
            assert current_version(conn) == SCHEMA_VERSION
    finally:
        store.close()


def test_migrating_leaves_the_connection_waiting_as_configured(tmp_path: Path) -> None:
    """The migration looks for the lock without waiting first (to say so when it must wait); the pooled
    connection it used still waits database.busy_timeout_seconds for a write afterwards."""
    store = open_store(f"sqlite:///{tmp_path / 'fresh.db'}", busy_timeout_seconds=7)
    try:
        with store.engine.connect() as conn:  # the one connection the migration used, from the pool
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 7000
    finally:
        store.close()


def _schema(url: str) -> dict[str, object]:
    """Tables, columns, keys and indexes, as the database reports them."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            found = inspect(conn)
            indexes = {t: found.get_indexes(t) for t in found.get_table_names()}
            return {
                table: (
                    sorted((c["name"], str(c["type"]), c["nullable"]) for c in found.get_columns(table)),
                    found.get_pk_constraint(table)["constrained_columns"],
                    sorted((i["name"], i["column_names"], bool(i["unique"])) for i in indexes[table]),
                    sorted(u["column_names"] for u in found.get_unique_constraints(table)),
                    sorted(
                        (f["constrained_columns"], f["referred_table"], f["referred_columns"])
                        for f in found.get_foreign_keys(table)
                    ),
                )
                for table in found.get_table_names()
            }
    finally:
        engine.dispose()


def _models_schema(url: str, tmp_path: Path) -> dict[str, object]:
    """What create_all of today's models makes on the same kind of database."""
    with contextlib.ExitStack() as stack:
        if url.startswith("sqlite"):
            other = f"sqlite:///{tmp_path / 'models.db'}"
        else:
            other = stack.enter_context(contextlib.contextmanager(pg_schema_url)())
        engine = create_engine(other)
        Base.metadata.create_all(engine)
        engine.dispose()
        return _schema(other)


def _load(url: str, version: int) -> None:
    load_schema(url, version)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO claims (id, text, kind, date_approximate, topics, created_at) "
            "VALUES ('c1', 'a claim kept across upgrades', 'dated', FALSE, '[]', '2026-11-20 00:00:00')"
        )
    engine.dispose()


@pytest.mark.parametrize("version", [0, *range(1, SCHEMA_VERSION + 1)])
def test_a_store_of_every_earlier_version_upgrades_to_the_models(
    db_url: str, tmp_path: Path, version: int
) -> None:
    """Version 0 is a fresh database: the frozen first schema and every step after it."""
    if version:
        _load(db_url, version)
    store = open_store(db_url)
    try:
        with store.engine.connect() as conn:
            assert current_version(conn) == SCHEMA_VERSION
            if version:
                assert conn.exec_driver_sql("SELECT text FROM claims").scalars().all() == [
                    "a claim kept across upgrades"
                ]
    finally:
        store.close()
    assert _schema(db_url) == _models_schema(db_url, tmp_path)
