"""Relevance scan marks (`relevance_marks` rows): per claim and claim text, the highest
`paper_versions.id` the relevance stage has scanned, so each run scores only what a claim has not seen.

A mark belongs to a claim's text (its hash): an edited claim keeps its id but starts from no mark.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from monitor.store.chunks import in_chunks
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


def set_scanned_upto(session: Session, marks: Sequence[tuple[str, str, int]]) -> None:
    """Record, for each (claim id, text hash, last row), that the claim's text has been scanned up to
    version row `last_row`. A few statements for any number of claims: the relevance stage advances
    every claim's mark after each batch, and one row at a time cost a 1,000-claim week 40 s."""
    if not marks:
        return
    have: set[tuple[str, str]] = set()
    for part in in_chunks(sorted({claim_id for claim_id, _, _ in marks})):
        query = select(RelevanceMark.claim_id, RelevanceMark.claim_text_hash).where(
            RelevanceMark.claim_id.in_(part)
        )
        have.update((claim_id, text_hash) for claim_id, text_hash in session.execute(query))
    now = utcnow()
    rows = [
        {"claim_id": c, "claim_text_hash": h, "last_version_row": last, "updated_at": now}
        for c, h, last in marks
    ]
    known = [r for r in rows if (r["claim_id"], r["claim_text_hash"]) in have]
    new = [r for r in rows if (r["claim_id"], r["claim_text_hash"]) not in have]
    if known:
        session.execute(update(RelevanceMark), known)  # by primary key, one executemany
    if new:
        session.execute(insert(RelevanceMark), new)
