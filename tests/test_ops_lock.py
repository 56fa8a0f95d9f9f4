"""The run lock on SQLite and PostgreSQL: exclusion, waiting, stale takeover, a killed holder, run rows."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from sqlalchemy import select

from monitor.errors import LockHeld
from monitor.schedule.lock import RunLock
from monitor.store import open_store
from monitor.store.models import utcnow
from monitor.store.records import Lock, Run
from monitor.store.runs import list_runs, mark_abandoned, recorded_run


def test_second_lock_is_refused_with_exit_code_75_and_names_the_holder(store) -> None:
    first = RunLock(store)
    first.acquire()
    try:
        second = RunLock(store)
        assert not second.try_acquire()
        with pytest.raises(LockHeld) as err:
            second.acquire()
        assert err.value.exit_code == 75
        assert f"pid {os.getpid()}" in str(err.value)
    finally:
        first.release()
    third = RunLock(store)
    assert third.try_acquire()
    third.release()
    with store.session() as s:
        assert s.scalars(select(Lock)).all() == []


def test_waiting_run_gets_the_lock_when_the_first_releases(store) -> None:
    first = RunLock(store)
    first.acquire()
    threading.Timer(0.6, first.release).start()
    second = RunLock(store)
    started = time.monotonic()
    second.acquire(wait_seconds=10, poll_seconds=0.1)
    waited = time.monotonic() - started
    second.release()
    assert 0.4 < waited < 5


def test_wait_gives_up_after_the_limit(store) -> None:
    first = RunLock(store)
    first.acquire()
    try:
        started = time.monotonic()
        with pytest.raises(LockHeld, match="after waiting"):
            RunLock(store).acquire(wait_seconds=0.5, poll_seconds=0.1)
        assert time.monotonic() - started >= 0.5
    finally:
        first.release()


def _insert_holder(store, holder: str, heartbeat_age_s: float) -> None:
    beat = utcnow() - dt.timedelta(seconds=heartbeat_age_s)
    with store.session() as s:
        s.add(Lock(name="run", holder=holder, acquired_at=beat, heartbeat_at=beat))


def test_sqlite_row_of_a_dead_local_pid_is_taken_over_at_once(sqlite_url) -> None:
    store = open_store(sqlite_url)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    _insert_holder(store, f"{os.uname().nodename}:{dead.stdout.strip()}:deadbeef", heartbeat_age_s=1)
    lock = RunLock(store, stale_seconds=3600)
    assert lock.try_acquire()
    assert lock.took_over is not None and lock.took_over.holder.endswith("deadbeef")
    lock.release()


def test_sqlite_remote_holder_is_stale_only_after_the_timeout(sqlite_url) -> None:
    store = open_store(sqlite_url)
    _insert_holder(store, "other-host:123:cafe", heartbeat_age_s=10)
    assert not RunLock(store, stale_seconds=60).try_acquire()  # fresh heartbeat: alive
    lock = RunLock(store, stale_seconds=5)  # 10 s without a heartbeat: stale, not known dead
    assert lock.try_acquire()
    assert lock.took_over_from == "a stale run"
    lock.release()


def test_a_live_local_holder_is_never_taken_over_however_old_its_heartbeat(sqlite_url) -> None:
    store = open_store(sqlite_url)
    now = utcnow()
    with store.session() as s:  # this very process, silent for an hour (as if suspended)
        s.add(
            Lock(
                name="run",
                holder=f"{os.uname().nodename}:{os.getpid()}:sleepy",
                acquired_at=now,
                heartbeat_at=now - dt.timedelta(hours=1),
            )
        )
    lock = RunLock(store, stale_seconds=5)
    assert not lock.try_acquire()
    with pytest.raises(LockHeld) as err:
        lock.acquire()
    assert "alive but has not heartbeated" in str(err.value) and f"kill -CONT {os.getpid()}" in str(err.value)


def test_a_local_pid_reused_since_the_lock_was_taken_is_a_dead_holder(sqlite_url) -> None:
    store = open_store(sqlite_url)
    long_ago = utcnow() - dt.timedelta(days=30)  # before this process started: the pid was reused
    with store.session() as s:
        s.add(
            Lock(
                name="run",
                holder=f"{os.uname().nodename}:{os.getpid()}:old",
                acquired_at=long_ago,
                heartbeat_at=utcnow(),
            )
        )
    lock = RunLock(store, stale_seconds=3600)
    assert lock.try_acquire()
    assert lock.took_over_from == "a dead run" and lock.took_over is not None
    lock.release()


def test_a_holder_learns_it_lost_the_lock_at_once(sqlite_url) -> None:
    store = open_store(sqlite_url)
    lock = RunLock(store, heartbeat_seconds=3600)  # no heartbeat will tell it
    lock.acquire()
    assert lock.holds()
    with store.session() as s:
        s.get(Lock, "run").holder = "thief:1:x"  # type: ignore[union-attr]
    assert not lock.holds() and lock.lost
    lock.release()


def test_heartbeat_keeps_the_lock_fresh_and_notices_a_takeover(sqlite_url) -> None:
    store = open_store(sqlite_url)
    lock = RunLock(store, stale_seconds=2, heartbeat_seconds=0.2)
    lock.acquire()
    first_beat = lock.current().heartbeat_at  # type: ignore[union-attr]
    time.sleep(0.7)
    assert lock.current().heartbeat_at > first_beat  # type: ignore[union-attr]
    assert not RunLock(store, stale_seconds=2).try_acquire()
    # Someone presumes us dead and takes the row: the next heartbeat notices.
    with store.session() as s:
        s.get(Lock, "run").holder = "thief:1:x"  # type: ignore[union-attr]
    deadline = time.monotonic() + 3
    while not lock.lost and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock.lost
    lock.release()
    with store.session() as s:
        assert s.get(Lock, "run").holder == "thief:1:x"  # type: ignore[union-attr]  # not ours to delete


HOLDER = textwrap.dedent(
    """
    import sys, time
    from monitor.store import open_store
    from monitor.schedule.lock import RunLock
    lock = RunLock(open_store(sys.argv[1]), stale_seconds=3600)
    lock.acquire()
    print("held", flush=True)
    time.sleep(600)
    """
)


def test_a_sigkilled_holder_does_not_block_the_next_run(db_url) -> None:
    store = open_store(db_url)
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, db_url], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        assert not RunLock(store).try_acquire()
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        lock = RunLock(store, stale_seconds=3600)
        deadline = time.monotonic() + 10  # PostgreSQL notices the closed connection at once, or nearly
        while not lock.try_acquire():
            assert time.monotonic() < deadline, "lock still held after its holder was killed"
            time.sleep(0.1)
        lock.release()
    finally:
        proc.kill()
        proc.wait()


def test_pg_locks_in_different_schemas_do_not_collide() -> None:
    from conftest import pg_schema_url

    first, second = pg_schema_url(), pg_schema_url()
    try:
        a, b = RunLock(open_store(next(first))), RunLock(open_store(next(second)))
        assert a.try_acquire() and b.try_acquire()
        assert not RunLock(a.store).try_acquire()
        a.release()
        b.release()
    finally:
        first.close()
        second.close()


def test_rows_left_running_are_marked_abandoned(store) -> None:
    with store.session() as s:
        s.add(Run(command="run", status="running", host="elsewhere", pid=1))
        s.add(Run(command="fetch", status="running", host="elsewhere", pid=1))  # not lock-taking: unknown
    with recorded_run(store, "run") as run:
        abandoned = mark_abandoned(store, run.id)
    runs = {r.id: r for r in list_runs(store)}
    assert [runs[i].command for i in abandoned] == ["run"]
    assert runs[abandoned[0]].status == "abandoned" and runs[abandoned[0]].finished_at
    assert runs[run.id].status == "ok"
    assert sorted(r.status for r in runs.values()) == ["abandoned", "ok", "running"]


def test_a_stop_request_ends_the_wait(store) -> None:
    from monitor.schedule.signals import Interrupted

    first = RunLock(store)
    first.acquire()
    try:
        stop = threading.Event()
        threading.Timer(0.3, stop.set).start()
        started = time.monotonic()
        with pytest.raises(Interrupted) as err:
            RunLock(store).acquire(wait_seconds=60, poll_seconds=0.1, stop=stop)
        assert err.value.exit_code == 130 and time.monotonic() - started < 5
    finally:
        first.release()
