"""The `locks` table and PostgreSQL advisory locks: the statements the run lock (monitor/schedule/lock.py)
is made of. Each takes the connection the lock works on, since the lock decides what commits when
(an autocommit connection that holds an advisory lock, or a BEGIN IMMEDIATE on SQLite)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Connection, delete, insert, select, text, update
from sqlalchemy.orm import Session

from monitor.store.models import utcnow
from monitor.store.records import Lock


def current_schema(conn: Connection) -> str:
    """The PostgreSQL schema the connection works in."""
    return conn.execute(text("SELECT current_schema()")).scalar() or "public"


def try_advisory_lock(conn: Connection, key: int) -> bool:
    """Take a session-level PostgreSQL advisory lock without waiting; False when another session has it."""
    return bool(conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar())


def advisory_unlock(conn: Connection, key: int) -> None:
    conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})


def lock_holder(conn: Connection | Session, name: str) -> tuple[str, dt.datetime, dt.datetime] | None:
    """(holder, acquired_at, heartbeat_at) of the lock's row, if it has one."""
    row: Any = conn.execute(
        select(Lock.holder, Lock.acquired_at, Lock.heartbeat_at).where(Lock.name == name)
    ).first()
    return (row[0], row[1], row[2]) if row else None


def insert_holder(conn: Connection, name: str, holder: str, now: dt.datetime) -> None:
    """A row for a lock nobody holds (IntegrityError when another process inserted it first)."""
    conn.execute(insert(Lock.__table__).values(name=name, holder=holder, acquired_at=now, heartbeat_at=now))


def replace_holder(conn: Connection, name: str, holder: str, now: dt.datetime) -> None:
    """The lock's row names `holder`, whoever it named before."""
    conn.execute(delete(Lock).where(Lock.name == name))
    insert_holder(conn, name, holder, now)


def take_over(
    conn: Connection, name: str, dead: tuple[str, dt.datetime], holder: str, now: dt.datetime
) -> bool:
    """Compare-and-swap: hand the row to `holder` if it still names the `dead` (holder, heartbeat_at)."""
    res = conn.execute(
        update(Lock)
        .where(Lock.name == name, Lock.holder == dead[0], Lock.heartbeat_at == dead[1])
        .values(holder=holder, acquired_at=now, heartbeat_at=now)
    )
    return res.rowcount == 1


def refresh_heartbeat(conn: Connection, name: str, holder: str) -> bool:
    """Stamp the holder's heartbeat now; False when the row no longer names `holder` (taken over)."""
    res = conn.execute(
        update(Lock).where(Lock.name == name, Lock.holder == holder).values(heartbeat_at=utcnow())
    )
    return res.rowcount != 0


def remove_holder(conn: Connection, name: str, holder: str) -> None:
    """Delete the lock's row if it still names `holder`."""
    conn.execute(delete(Lock).where(Lock.name == name, Lock.holder == holder))
