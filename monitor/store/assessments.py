"""Assessments as the judge writes them: the cache keys judged already, the next generation of a forced
rejudgement, a new current assessment, and the evidence quoted for a pair.

"Current" means the latest assessment per (arxiv_id, claim_id): `supersede` marks every older row of
the pair `is_current = False` once a new one is written, in the writer's same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from monitor.store.models import Assessment


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


def is_judged(session: Session, cache_key: str) -> bool:
    """Whether some assessment (of any generation) has this cache key."""
    return session.scalar(select(Assessment.id).where(Assessment.cache_key == cache_key).limit(1)) is not None


def next_generation(session: Session, cache_key: str) -> int:
    """The generation a new judgement of this cache key gets: 0 for the first, else one past the latest."""
    latest = session.scalar(select(func.max(Assessment.generation)).where(Assessment.cache_key == cache_key))
    return 0 if latest is None else latest + 1


def add_assessment(session: Session, fields: dict[str, Any]) -> Assessment:
    """A new current assessment with the given column values; flushed, so it has an id."""
    row = Assessment(is_current=True, **fields)
    session.add(row)
    session.flush()
    return row


def supersede(session: Session, row: Assessment) -> None:
    """Make `row` the pair's only current assessment."""
    session.execute(
        update(Assessment)
        .where(
            Assessment.arxiv_id == row.arxiv_id,
            Assessment.claim_id == row.claim_id,
            Assessment.id != row.id,
            Assessment.is_current.is_(True),
        )
        .values(is_current=False)
    )


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
