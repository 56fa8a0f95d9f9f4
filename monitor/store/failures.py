"""Pairs the judge keeps failing on: counted per judge pass, parked after a configured number.

A model that answers one pair wrongly every time (llama.cpp ignoring the schema's number bounds, say)
would otherwise be asked, and paid, again on every run. Each write is its own small transaction, so a
crash loses at most the count of the pairs in flight.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from monitor.store.db import Store
from monitor.store.models import utcnow
from monitor.store.records import JudgeFailure


@dataclass(frozen=True)
class FailedPair:
    """Who failed: the pair's cache key and what it is about."""

    cache_key: str
    arxiv_id: str
    version: int
    claim_id: str
    judge: str
    model: str
    prompt_version: str


def parked_keys(session: Session, keys: Iterable[str] | None = None) -> set[str]:
    """Cache keys of parked pairs (all of them, or those among `keys`)."""
    query = select(JudgeFailure.cache_key).where(JudgeFailure.parked_at.is_not(None))
    if keys is not None:
        query = query.where(JudgeFailure.cache_key.in_(list(keys)))
    return set(session.scalars(query))


def count_parked(session: Session) -> int:
    return int(
        session.scalar(
            select(func.count()).select_from(JudgeFailure).where(JudgeFailure.parked_at.is_not(None))
        )
        or 0
    )


def record_failure(store: Store, pair: FailedPair, error: str, run_id: int | None, park_after: int) -> bool:
    """Count one failed judge pass for `pair`; True when this failure parks it (`park_after` 0: never)."""
    for _ in range(2):  # a concurrent run may insert the same key first; then update its row
        try:
            with store.session() as session:
                row = session.scalar(select(JudgeFailure).where(JudgeFailure.cache_key == pair.cache_key))
                if row is None:
                    row = JudgeFailure(
                        cache_key=pair.cache_key,
                        arxiv_id=pair.arxiv_id,
                        version=pair.version,
                        claim_id=pair.claim_id,
                        judge=pair.judge,
                        model=pair.model,
                        prompt_version=pair.prompt_version,
                        failures=0,
                    )
                    session.add(row)
                row.failures += 1
                row.last_error = error[:2000]
                row.run_id = run_id
                row.updated_at = utcnow()
                parks = park_after > 0 and row.parked_at is None and row.failures >= park_after
                if parks:
                    row.parked_at = utcnow()
            return parks
        except IntegrityError:
            continue
    return False


def clear_failures(session: Session, cache_keys: Sequence[str]) -> None:
    """The pairs were answered: forget their failures (and unpark them)."""
    session.execute(delete(JudgeFailure).where(JudgeFailure.cache_key.in_(list(cache_keys))))
