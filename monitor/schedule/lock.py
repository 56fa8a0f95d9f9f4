"""The run lock: one pipeline run at a time per database, across processes and machines.

PostgreSQL: a session-level `pg_try_advisory_lock` on a dedicated connection held for the whole run.
The server frees it when that connection ends, so a killed run (SIGKILL, power loss) never blocks the
next one. The key is derived from the lock name and the current schema, so databases that share a
server but live in different schemas do not block each other.

SQLite (and any other database): a row in `locks` with the holder (host:pid:token) and a heartbeat
that a background thread refreshes every `lock_heartbeat_seconds`. A later run takes the row over from
a holder on this host only when it is dead: its pid no longer exists, or belongs to a process started
after the lock was taken (the pid was reused). A live local holder is never taken over, however old its
heartbeat (a suspended run wakes up and goes on). A holder on another host cannot be looked at: once its
heartbeat is older than `lock_stale_seconds` it is stale and taken over, and should it still be alive,
it finds out before its next call group (`holds`) and stops with LockHeld. Takeover is a
compare-and-swap on (holder, heartbeat), so two runs racing for a stale lock cannot both win.

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
from pathlib import Path

from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError, OperationalError

from monitor.errors import LockHeld
from monitor.files import pid_alive
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

    @property
    def host(self) -> str:
        return self.holder.split(":")[0]

    @property
    def pid(self) -> int | None:
        pid = (self.holder.split(":") + [""])[1]
        return int(pid) if pid.isdigit() else None

    def describe(self) -> str:
        return (
            f"held by pid {self.pid} on {self.host} since {self.acquired_at:%Y-%m-%d %H:%M:%S} UTC "
            f"(last heartbeat {self.heartbeat_at:%H:%M:%S} UTC)"
        )

    def silent_seconds(self, now: dt.datetime) -> float:
        return (now - self.heartbeat_at).total_seconds()


def _process_started(pid: int) -> dt.datetime | None:
    """When process `pid` started (UTC, naive like the lock's times), where /proc tells; else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = next(line for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
    except (OSError, StopIteration):
        return None
    ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, counted after the command name
    seconds = int(boot.split()[1]) + ticks / os.sysconf("SC_CLK_TCK")
    return dt.datetime.fromtimestamp(seconds, dt.UTC).replace(tzinfo=None)


def _local_holder_dead(info: LockInfo) -> bool:
    """The holder ran on this host and its process is gone (its pid is free, or reused since)."""
    if info.pid is None:
        return False
    if not pid_alive(info.pid):
        return True
    started = _process_started(info.pid)
    # A second of slack: the start time is in clock ticks, the lock's time a little after the start.
    return started is not None and started > info.acquired_at + dt.timedelta(seconds=1)


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
        self.took_over: LockInfo | None = None  # the dead or stale holder we replaced, if any
        self.took_over_from = ""  # how we said it: "a dead run" or "a stale run"
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
        if info is not None and self._suspended(info, utcnow()):
            who += (
                f"; that process is alive but has not heartbeated for {info.silent_seconds(utcnow()):.0f}s "
                f"(suspended? `kill -CONT {info.pid}` lets it finish, or stop it); a live run is never "
                "taken over"
            )
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
                    gone = "" if won else self._gone(info, now)
                    if gone:
                        won = take_over(conn, self.name, (info.holder, info.heartbeat_at), self.holder, now)
                        if won:
                            self.took_over, self.took_over_from = info, gone
                            log.warning(
                                "run lock %r: took over from %s (%s)", self.name, gone, info.describe()
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

    def _gone(self, info: LockInfo, now: dt.datetime) -> str:
        """The takeover rule (see the module docstring): "a dead run", "a stale run", or "" (keep off)."""
        if info.host == socket.gethostname():
            return "a dead run" if _local_holder_dead(info) else ""
        return "a stale run" if info.silent_seconds(now) > self.stale_seconds else ""

    def _suspended(self, info: LockInfo, now: dt.datetime) -> bool:
        """A local holder that is alive but silent past the staleness limit (stopped, or hung)."""
        return info.host == socket.gethostname() and info.silent_seconds(now) > self.stale_seconds

    def current(self) -> LockInfo | None:
        """The recorded holder of this lock, if any."""
        with self.store.session() as s:
            row = lock_holder(s, self.name)
        return LockInfo(*row) if row else None

    # --- holding ----------------------------------------------------------------------------------

    def holds(self) -> bool:
        """Whether this process still holds the lock, by the lock's row, read now (one indexed read per
        call group): a run suspended past the staleness limit may have been taken over meanwhile, and
        must learn it before it starts more work, not at its next heartbeat."""
        if not self.held or self._lost.is_set():
            return False
        if self._conn is not None:
            # PostgreSQL: nobody can take the advisory lock while our connection lives; the heartbeat
            # (the connection's only other user) notices when it dies.
            return True
        try:
            with self.store.engine.connect() as conn:
                row = lock_holder(conn, self.name)
        except OperationalError as exc:  # SQLite busy: the next check or the heartbeat will tell
            log.info("run lock %r: cannot read the lock now: %s", self.name, exc.orig)
            return True
        if row is None or row[0] != self.holder:
            self._lost.set()
            log.error("run lock %r was taken over by another run", self.name)
            return False
        return True

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_seconds):
            try:
                self.beat()
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried; staleness allows many
                log.warning("run lock heartbeat failed: %s", exc)

    def beat(self) -> None:
        """Refresh the heartbeat; notices when another process took the row over."""
        if self._conn is not None:
            try:
                kept = refresh_heartbeat(self._conn, self.name, self.holder)
            except Exception:
                self._lost.set()  # the connection is gone, and the advisory lock with it
                raise
        else:
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
def run_lock(store: Store, settings: object, needed: bool = True) -> Iterator[RunLock | None]:
    """The run lock held for a block, taken as the settings say, for commands that mail, post or call
    an LLM outside `locked_run` (`monitor report`, `review reword propose`): two of them at once would
    send the same digest twice or pay for the same answers twice. `needed` False: no lock (None)."""
    if not needed:
        yield None
        return
    lock = acquire_run_lock(store, settings)
    try:
        yield lock
    finally:
        lock.release()


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
            run.holds_lock = held.holds
            if held.took_over is not None:
                previous = held.took_over.describe()
                run.warnings.append(f"took the run lock over from {held.took_over_from} ({previous})")
            yield run, held, abandoned
    finally:
        if lock is None:
            held.release()
