"""Stored claim outcomes (`claim_outcomes` rows): the verdicts stage's full computation per claim and date."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from monitor.store.models import ClaimOutcome, utcnow


def outcome_rows(
    session: Session, claim_ids: Iterable[str], days: Iterable[dt.date]
) -> dict[tuple[str, dt.date], ClaimOutcome]:
    """The stored rows for these claims at these dates, by (claim id, date)."""
    ids, wanted = list(claim_ids), sorted(set(days))
    if not ids or not wanted:
        return {}
    query = select(ClaimOutcome).where(ClaimOutcome.claim_id.in_(ids), ClaimOutcome.as_of.in_(wanted))
    return {(row.claim_id, row.as_of): row for row in session.scalars(query)}


def save_outcome(
    session: Session,
    row: ClaimOutcome | None,
    claim_id: str,
    as_of: dt.date,
    fingerprint: str,
    outcome: dict[str, Any],
    run_id: int | None,
) -> None:
    """Write a claim's outcome at `as_of` over its earlier row (`row`, None: the first), one per date."""
    if row is None:
        fields = {"fingerprint": fingerprint, "outcome": outcome, "run_id": run_id}
        session.add(ClaimOutcome(claim_id=claim_id, as_of=as_of, **fields))
        return
    row.fingerprint, row.outcome, row.run_id = fingerprint, outcome, run_id
    row.computed_at = utcnow()


def prune_outcomes(session: Session, keep: dict[str, set[dt.date]]) -> int:
    """Delete each listed claim's rows at dates other than its `keep` ones; returns how many went."""
    query = select(ClaimOutcome.id, ClaimOutcome.claim_id, ClaimOutcome.as_of)
    stored = session.execute(query.where(ClaimOutcome.claim_id.in_(list(keep)))).all()
    gone = [row_id for row_id, claim_id, day in stored if day not in keep[claim_id]]
    if gone:
        session.execute(delete(ClaimOutcome).where(ClaimOutcome.id.in_(gone)))
    return len(gone)
