"""Fetch high-water marks (`fetch_marks` rows): how far each source's query has been stored."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.store.db import Store
from monitor.store.models import FetchMark, utcnow


def advance_mark(session: Session, source: str, query_key: str, mark: dt.datetime) -> None:
    """Move a high-water mark forward (never back) to `mark`."""
    row = session.get(FetchMark, (source, query_key))
    if row is None:
        session.add(FetchMark(source=source, query_key=query_key, high_water=mark, updated_at=utcnow()))
    elif mark > row.high_water:
        row.high_water = mark
        row.updated_at = utcnow()


def get_mark(store: Store, source: str, query_key: str) -> dt.datetime | None:
    """The stored high-water mark of one source's query, if it has one."""
    with store.session() as s:
        row = s.get(FetchMark, (source, query_key))
        return row.high_water if row else None


def newest_mark(session: Session) -> dt.datetime | None:
    """The furthest any source's query has been fetched to (None: only file sources, which set none)."""
    return session.scalar(select(func.max(FetchMark.high_water)))
