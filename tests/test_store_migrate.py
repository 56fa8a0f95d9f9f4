"""Creating and upgrading the schema (issue 13 item 3): serialised between processes, all or nothing.

Real processes on real databases (SQLite and PostgreSQL); the crash point is the test-only pause hook
`migrate:v<N>` (monitor/testhooks.py), reached inside the migration's transaction.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ops_helpers import env, wait_paused, write_config
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
    time.sleep(3)
    assert second.poll() is None  # waiting for the first migration, not failing on half a schema
    (tmp_path / "pause.txt.resume").touch()
    out1, err1 = first.communicate(timeout=300)
    out2, err2 = second.communicate(timeout=300)
    assert first.returncode == 0, err1
    assert second.returncode in (0, 75), err2
    assert "already exists" not in err2 and "Traceback" not in err2
    if second.returncode == 75:
        assert "another run" in err2
    store = open_store(db_url)
    try:
        with store.engine.connect() as conn:
            assert current_version(conn) == SCHEMA_VERSION
    finally:
        store.close()
