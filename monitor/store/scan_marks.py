"""Relevance scan marks (`relevance_marks` rows): per claim and claim text, the highest
`paper_versions.id` the relevance stage has scanned, so each run scores only what a claim has not seen.

A mark belongs to a claim's text (its hash): an edited claim keeps its id but starts from no mark.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.models import RelevanceMark, utcnow


def scanned_upto(session: Session, wanted: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Claim id -> the last version row scanned, for each wanted (claim id, text hash) that has a mark."""
    wanted = set(wanted)
    query = select(RelevanceMark).where(RelevanceMark.claim_id.in_(list({cid for cid, _ in wanted})))
    return {
        row.claim_id: row.last_version_row
        for row in session.scalars(query)
        if (row.claim_id, row.claim_text_hash) in wanted
    }


def set_scanned_upto(session: Session, claim_id: str, text_hash: str, last_row: int) -> None:
    """Record that the claim's text has been scanned up to version row `last_row`."""
    row = session.get(RelevanceMark, (claim_id, text_hash))
    if row is None:
        row = RelevanceMark(claim_id=claim_id, claim_text_hash=text_hash)
        session.add(row)
    row.last_version_row = last_row
    row.updated_at = utcnow()
