"""Assessments as the judge writes them: the cache keys judged already, the next generation of a forced
rejudgement, new current assessments, the evidence quoted for a pair, and the second looks a label
waits for before it counts.

"Current" means the latest assessment per (arxiv_id, claim_id): `add_current` marks every older row of
the pair `is_current = False` as it writes the new one, in the writer's same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, func, insert, select, update
from sqlalchemy.orm import Session

from monitor.store.models import Assessment, Claim, Paper, PaperVersion, SecondLook, utcnow


def judged_keys(
    session: Session, judge: str, model: str, prompt_version: str, claim_ids: Sequence[str] | None = None
) -> set[str]:
    """Cache keys of every assessment by this judge, model and prompt version (of `claim_ids`, if given)."""
    query = select(Assessment.cache_key).where(
        Assessment.judge == judge,
        Assessment.model == model,
        Assessment.prompt_version == prompt_version,
    )
    if claim_ids:
        query = query.where(Assessment.claim_id.in_(claim_ids))
    return set(session.scalars(query))


def judged_among(session: Session, cache_keys: Sequence[str]) -> set[str]:
    """Those of `cache_keys` that some assessment (of any generation) has."""
    query = select(Assessment.cache_key).where(Assessment.cache_key.in_(list(cache_keys)))
    return set(session.scalars(query))


def next_generations(session: Session, cache_keys: Sequence[str]) -> dict[str, int]:
    """The generation a new judgement of each key gets: 0 for the first, else one past the latest."""
    query = (
        select(Assessment.cache_key, func.max(Assessment.generation))
        .where(Assessment.cache_key.in_(list(cache_keys)))
        .group_by(Assessment.cache_key)
    )
    latest = {key: int(generation) for key, generation in session.execute(query)}
    return {key: latest[key] + 1 if key in latest else 0 for key in cache_keys}


def add_current(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """New current assessments of one paper version, with the given column values; every earlier
    current row of each pair (arxiv_id, claim_id) stops being current first. One UPDATE and one batch
    of INSERTs, in the caller's transaction."""
    if not rows:
        return
    for arxiv_id in {r["arxiv_id"] for r in rows}:
        claim_ids = sorted({r["claim_id"] for r in rows if r["arxiv_id"] == arxiv_id})
        session.execute(
            update(Assessment)
            .where(
                Assessment.arxiv_id == arxiv_id,
                Assessment.claim_id.in_(claim_ids),
                Assessment.is_current.is_(True),
            )
            .values(is_current=False)
        )
    session.add_all([Assessment(is_current=True, **r) for r in rows])
    session.flush()


def latest_quote(session: Session, claim_id: str, arxiv_id: str) -> str | None:
    """The evidence the newest assessment of the pair that quoted any quoted."""
    return session.scalar(
        select(Assessment.evidence)
        .where(Assessment.claim_id == claim_id, Assessment.arxiv_id == arxiv_id, Assessment.evidence != "")
        .order_by(Assessment.id.desc())
        .limit(1)
    )


def claims_judged_on(session: Session, arxiv_id: str) -> list[str]:
    """Ids of the claims a current assessment pairs with the paper (the web app's paper page)."""
    query = select(Assessment.claim_id).where(
        Assessment.arxiv_id == arxiv_id, Assessment.is_current.is_(True)
    )
    return sorted(set(session.scalars(query)))


# `assessments.second_look`: the judge's second reading of a label before it counts (judge/second_look.py).
SECOND_PENDING, SECOND_AGREED, SECOND_DISAGREED = "pending", "agreed", "disagreed"


def pending_second_looks(session: Session, claim_ids: Sequence[str] | None = None) -> list[Row[Any]]:
    """Current assessments waiting for their second look (of `claim_ids`, if given), with what the second
    reader reads: (assessment id, arxiv_id, version, claim id, claim text, claim date text, title,
    abstract, published, label, strength, confidence, evidence, rationale), paper version by paper version."""
    query = (
        select(
            Assessment.id,
            Assessment.arxiv_id,
            Assessment.version,
            Assessment.claim_id,
            Claim.text,
            Claim.date_text,
            func.coalesce(PaperVersion.title, Paper.title),
            func.coalesce(PaperVersion.abstract, Paper.abstract),
            Paper.published,
            Assessment.label,
            Assessment.strength,
            Assessment.confidence,
            Assessment.evidence,
            Assessment.rationale,
        )
        .join(Claim, Claim.id == Assessment.claim_id)
        .join(Paper, Paper.arxiv_id == Assessment.arxiv_id)
        .outerjoin(
            PaperVersion,
            (PaperVersion.arxiv_id == Assessment.arxiv_id) & (PaperVersion.version == Assessment.version),
        )
        .where(Assessment.is_current, Assessment.second_look == SECOND_PENDING)
        .order_by(Assessment.arxiv_id, Assessment.version, Assessment.claim_id)
    )
    if claim_ids:
        query = query.where(Assessment.claim_id.in_(list(claim_ids)))
    return list(session.execute(query))


def add_second_look(session: Session, row: dict[str, Any]) -> bool:
    """Store one second reading and settle its assessment's state (agreed or disagreed), in the caller's
    transaction. False (nothing written) when the assessment no longer waits for one: another run wrote
    it first, or a newer judgement replaced it."""
    settled = session.execute(
        update(Assessment)
        .where(Assessment.id == row["assessment_id"], Assessment.second_look == SECOND_PENDING)
        .values(second_look=SECOND_AGREED if row["agrees"] else SECOND_DISAGREED)
    )
    if not settled.rowcount:
        return False
    session.execute(insert(SecondLook).values(created_at=utcnow(), **row))
    return True


def count_second_looks_pending(session: Session) -> int:
    query = select(func.count()).select_from(Assessment).where(
        Assessment.is_current, Assessment.second_look == SECOND_PENDING
    )
    return session.scalar(query) or 0
