"""Recorded verdicts (`verdicts` rows): a claim's history and the row in force on a day."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.models import Verdict


def latest_verdict(session: Session, claim_id: str, as_of: dt.date | None = None) -> Verdict | None:
    """The claim's verdict in force at `as_of` (default: the newest): latest `as_of`, then latest written."""
    query = select(Verdict).where(Verdict.claim_id == claim_id)
    if as_of is not None:
        query = query.where(Verdict.as_of <= as_of)
    return session.scalars(query.order_by(Verdict.as_of.desc(), Verdict.id.desc()).limit(1)).first()


def verdict_history(session: Session, claim_id: str) -> list[Verdict]:
    """A claim's verdict rows, oldest first."""
    query = select(Verdict).where(Verdict.claim_id == claim_id).order_by(Verdict.as_of, Verdict.id)
    return list(session.scalars(query))
