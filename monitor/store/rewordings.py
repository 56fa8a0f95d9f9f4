"""Proposed wordings for claims (`claim_rewordings` rows): the open one per claim, listing, deciding.

The review stage writes proposals and decisions through these; the claims importer reads the accepted
ones (`accepted_wordings`) so a re-import of unchanged seeds keeps what a curator accepted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.models import ClaimRewording, utcnow

STATUSES = ("proposed", "accepted", "rejected")


def open_proposals(session: Session, claim_ids: Iterable[str] | None = None) -> dict[str, ClaimRewording]:
    """claim id -> its newest proposal still waiting for a curator."""
    query = select(ClaimRewording).where(ClaimRewording.status == "proposed").order_by(ClaimRewording.id)
    if claim_ids is not None:
        query = query.where(ClaimRewording.claim_id.in_(list(claim_ids)))
    return {row.claim_id: row for row in session.scalars(query)}


def get_rewording(session: Session, rewording_id: int) -> ClaimRewording | None:
    return session.get(ClaimRewording, rewording_id)


def add_proposal(session: Session, fields: dict[str, Any]) -> int:
    """A new proposed wording (claim_id, text, condition, cited, model, prompt_version, exchange_id).

    Returns its id."""
    row = ClaimRewording(**fields)
    session.add(row)
    session.flush()
    return row.id


def accepted_wordings(session: Session) -> dict[str, ClaimRewording]:
    """Old claim id -> the accepted rewording that replaced it (the newest, if ever several)."""
    query = select(ClaimRewording).where(ClaimRewording.status == "accepted").order_by(ClaimRewording.id)
    return {row.claim_id: row for row in session.scalars(query)}


def record_decision(
    session: Session, row: ClaimRewording, status: str, note: str, new_claim_id: str | None
) -> None:
    if status not in STATUSES[1:]:
        raise ValueError(f"unknown decision {status!r}")
    row.status, row.note, row.new_claim_id, row.decided_at = status, note, new_claim_id, utcnow()
    session.flush()


def wording_history(session: Session, claim_id: str) -> list[ClaimRewording]:
    """Every wording proposed for the claim, and the accepted one it replaced (if it is a rewording),
    oldest first: the claim page's history of wordings."""
    query = select(ClaimRewording).where(
        (ClaimRewording.claim_id == claim_id) | (ClaimRewording.new_claim_id == claim_id)
    )
    return list(session.scalars(query.order_by(ClaimRewording.id)))
