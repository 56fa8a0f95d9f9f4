"""Recorded verdicts (`verdicts` rows): a claim's history and the row in force on a day."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.store.models import Verdict


def latest_verdict(session: Session, claim_id: str, as_of: dt.date | None = None) -> Verdict | None:
    """The claim's verdict in force at `as_of` (default: the newest): latest `as_of`, then latest written."""
    query = select(Verdict).where(Verdict.claim_id == claim_id)
    if as_of is not None:
        query = query.where(Verdict.as_of <= as_of)
    return session.scalars(query.order_by(Verdict.as_of.desc(), Verdict.id.desc()).limit(1)).first()


def latest_verdict_days(session: Session, claim_ids: list[str]) -> dict[str, dt.date]:
    """Each claim's current verdict row's `as_of` (claims with no verdict yet are left out)."""
    query = select(Verdict.claim_id, func.max(Verdict.as_of)).where(Verdict.claim_id.in_(claim_ids))
    return {claim_id: day for claim_id, day in session.execute(query.group_by(Verdict.claim_id))}


def verdict_history(session: Session, claim_id: str) -> list[Verdict]:
    """A claim's verdict rows, oldest first."""
    query = select(Verdict).where(Verdict.claim_id == claim_id).order_by(Verdict.as_of, Verdict.id)
    return list(session.scalars(query))
