"""The run lock: one pipeline run at a time per database, across processes and machines.

PostgreSQL: a session-level `pg_try_advisory_lock` on a dedicated connection held for the whole run.
The server frees it when that connection ends, so a killed run (SIGKILL, power loss) never blocks the
next one. The key is derived from the lock name and the current schema, so databases that share a
server but live in different schemas do not block each other.

SQLite (and any other database): a row in `locks` with the holder (host:pid:token) and a heartbeat
that a background thread refreshes every `lock_heartbeat_seconds`. A later run takes the row over when
the holder is presumed dead: at once if the holder ran on this host and its pid no longer exists,
otherwise once its heartbeat is older than `lock_stale_seconds`. Takeover is a compare-and-swap on
(holder, heartbeat), so two runs racing for a stale lock cannot both win.

On both, the `locks` row says who holds the lock, so a refused run can name the holder.

Bootstrap order: the `locks` table exists only once the schema does, so this lock cannot guard
creating it. `open_store` migrates first under its own table-free lock (monitor/store/db.py), which
makes a second process wait for the first's migration; only then does a run ask for this lock.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError, OperationalError

from monitor.errors import LockHeld
from monitor.store.db import Store, redact
from monitor.store.locks import (
    advisory_unlock,
    current_schema,
    insert_holder,
    lock_holder,
    refresh_heartbeat,
    remove_holder,
    replace_holder,
    take_over,
    try_advisory_lock,
)
from monitor.store.models import utcnow
from monitor.store.runs import RunRecord, mark_abandoned, recorded_run

log = logging.getLogger(__name__)

RUN_LOCK = "run"


@dataclass
class LockInfo:
    """Who holds a lock, as recorded in the `locks` row."""

    holder: str
    acquired_at: dt.datetime
    heartbeat_at: dt.datetime

    def describe(self) -> str:
        host, pid, _ = (self.holder.split(":") + ["", "", ""])[:3]
        return (
            f"held by pid {pid} on {host} since {self.acquired_at:%Y-%m-%d %H:%M:%S} UTC "
            f"(last heartbeat {self.heartbeat_at:%H:%M:%S} UTC)"
        )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _advisory_key(name: str, schema: str) -> int:
    digest = hashlib.sha256(f"claim-monitor:{schema}:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class RunLock:
    """A named database lock. Use as a context manager, or `acquire()` / `release()`."""

    def __init__(
        self,
        store: Store,
        name: str = RUN_LOCK,
        stale_seconds: float = 300,
        heartbeat_seconds: float = 15,
    ) -> None:
        self.store = store
        self.name = name
        self.stale_seconds = stale_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.held = False
        self.took_over: LockInfo | None = None  # the dead holder we replaced, if any
        self._conn: Connection | None = None  # PostgreSQL: the connection that owns the advisory lock
        self._key: int | None = None
        self._stop = threading.Event()
        self._lost = threading.Event()
        self._beat: threading.Thread | None = None

    @classmethod
    def from_settings(cls, store: Store, settings: object, name: str = RUN_LOCK) -> RunLock:
        sched = settings.schedule  # type: ignore[attr-defined]
        return cls(store, name, sched.lock_stale_seconds, sched.lock_heartbeat_seconds)

    @property
    def lost(self) -> bool:
        """True when another process took our row over (we were presumed dead, e.g. suspended)."""
        return self._lost.is_set()

    # --- acquiring ------------------------------------------------------------------------------

    def acquire(
        self, wait_seconds: float = 0, poll_seconds: float = 1.0, stop: threading.Event | None = None
    ) -> None:
        """Take the lock, waiting up to `wait_seconds`; raise LockHeld if it stays taken.

        A set `stop` event (SIGTERM while waiting) ends the wait with Interrupted.
        """
        deadline = time.monotonic() + max(0.0, wait_seconds)
        while True:
            if self.try_acquire():
                return
            if time.monotonic() >= deadline:
                break
            pause = min(poll_seconds, max(0.05, deadline - time.monotonic()))
            if stop is not None and stop.wait(pause):
                from monitor.schedule.signals import Interrupted

                raise Interrupted("stopped while waiting for the run lock; nothing was done")
            if stop is None:
                time.sleep(pause)
        info = self.current()
        who = info.describe() if info else "held by another run"
        waited = f" after waiting {wait_seconds:.0f}s" if wait_seconds else ""
        raise LockHeld(
            f"another run is in progress on {redact(str(self.store.engine.url))}: run lock {who}{waited}. "
            'Try again later, or set schedule.on_lock_held = "wait".'
        )

    def try_acquire(self) -> bool:
        if self.held:
            return True
        ok = self._try_advisory() if self.store.dialect == "postgresql" else self._try_row()
        if ok:
            self.held = True
            self._stop.clear()
            self._lost.clear()
            self._beat = threading.Thread(target=self._heartbeat, name=f"lock-{self.name}", daemon=True)
            self._beat.start()
            log.info("run lock %r taken by %s", self.name, self.holder)
        return ok

    def _try_advisory(self) -> bool:
        conn = self.store.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            key = _advisory_key(self.name, current_schema(conn))
            got = try_advisory_lock(conn, key)
        except BaseException:
            conn.close()
            raise
        if not got:
            conn.close()
            return False
        self._conn, self._key = conn, key
        # The advisory lock is the truth; the row only tells others who holds it.
        replace_holder(conn, self.name, self.holder, utcnow())
        return True

    def _try_row(self) -> bool:
        now = utcnow()
        with self.store.engine.connect() as conn:
            immediate = self.store.dialect == "sqlite"
            if immediate:
                # Serialise lock attempts: BEGIN IMMEDIATE takes SQLite's write lock before we read.
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            else:
                conn.begin()
            try:
                row = lock_holder(conn, self.name)
                if row is None:
                    insert_holder(conn, self.name, self.holder, now)
                    won = True
                else:
                    info = LockInfo(*row)
                    won = info.holder == self.holder
                    if not won and self._presumed_dead(info, now):
                        won = take_over(conn, self.name, (info.holder, info.heartbeat_at), self.holder, now)
                        if won:
                            self.took_over = info
                            log.warning(
                                "run lock %r: took over from a dead run (%s)", self.name, info.describe()
                            )
                if immediate:
                    conn.exec_driver_sql("COMMIT")
                else:
                    conn.commit()
                return won
            except IntegrityError:
                self._rollback(conn, immediate)
                return False
            except OperationalError as exc:
                # "database is locked" beyond busy_timeout: someone else is busy; treat as held.
                self._rollback(conn, immediate)
                log.info("run lock attempt deferred: %s", exc.orig)
                return False
            except BaseException:
                self._rollback(conn, immediate)
                raise

    @staticmethod
    def _rollback(conn: Connection, immediate: bool) -> None:
        try:
            if immediate:
                conn.exec_driver_sql("ROLLBACK")
            else:
                conn.rollback()
        except Exception:  # noqa: BLE001 - nothing was begun, or the connection is gone
            pass

    def _presumed_dead(self, info: LockInfo, now: dt.datetime) -> bool:
        """The staleness rule (see the module docstring)."""
        host, pid_text = (info.holder.split(":") + ["", ""])[:2]
        if host == socket.gethostname() and pid_text.isdigit() and not _pid_alive(int(pid_text)):
            return True
        return (now - info.heartbeat_at).total_seconds() > self.stale_seconds

    def current(self) -> LockInfo | None:
        """The recorded holder of this lock, if any."""
        with self.store.session() as s:
            row = lock_holder(s, self.name)
        return LockInfo(*row) if row else None

    # --- holding ----------------------------------------------------------------------------------

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_seconds):
            try:
                self.beat()
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried; staleness allows many
                log.warning("run lock heartbeat failed: %s", exc)

    def beat(self) -> None:
        """Refresh the heartbeat; notices when another process took the row over."""
        if self._conn is not None:
            refresh_heartbeat(self._conn, self.name, self.holder)
            return
        with self.store.engine.begin() as conn:
            kept = refresh_heartbeat(conn, self.name, self.holder)
        if not kept:
            self._lost.set()
            log.error("run lock %r was taken over by another run", self.name)

    def release(self) -> None:
        if not self.held:
            return
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=5)
        try:
            if self._conn is not None:
                remove_holder(self._conn, self.name, self.holder)
                advisory_unlock(self._conn, self._key)  # type: ignore[arg-type]
            else:
                with self.store.engine.begin() as conn:
                    remove_holder(conn, self.name, self.holder)
        finally:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self.held = False
            log.info("run lock %r released by %s", self.name, self.holder)

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def acquire_run_lock(
    store: Store, settings: object, name: str = RUN_LOCK, stop: threading.Event | None = None
) -> RunLock:
    """Take the run lock as the settings say: exit at once (LockHeld) or wait up to lock_wait_seconds."""
    lock = RunLock.from_settings(store, settings, name)
    sched = settings.schedule  # type: ignore[attr-defined]
    lock.acquire(wait_seconds=sched.lock_wait_seconds if sched.on_lock_held == "wait" else 0, stop=stop)
    return lock


@contextmanager
def locked_run(
    store: Store,
    settings: object,
    command: str,
    stop: threading.Event,
    lock: RunLock | None = None,
) -> Iterator[tuple[RunRecord, RunLock, list[int]]]:
    """A recorded run under the run lock: `run`, `retest` and `replay` all start this way.

    Takes the lock unless `lock` (already held, as the daemon holds it) is given, and then releases
    only what it took. Yields the run, the lock and the ids of runs found dead and marked abandoned;
    the run row's warnings name those and a dead holder whose lock was taken over.
    """
    held = lock or acquire_run_lock(store, settings, stop=stop)
    try:
        with recorded_run(store, command) as run:
            run.stop = stop
            abandoned = mark_abandoned(store, run.id)
            if abandoned:
                run.warnings.append(f"marked runs {abandoned} abandoned (their process died)")
            if held.took_over is not None:
                run.warnings.append(f"took the run lock over from a dead run ({held.took_over.describe()})")
            yield run, held, abandoned
    finally:
        if lock is None:
            held.release()
