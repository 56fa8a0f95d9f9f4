"""Assessments as the judge writes them: the cache keys judged already, the next generation of a forced
rejudgement, new current assessments, and the evidence quoted for a pair.

"Current" means the latest assessment per (arxiv_id, claim_id): `add_current` marks every older row of
the pair `is_current = False` as it writes the new one, in the writer's same transaction.
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
