"""Batch API bookkeeping (`judge_batches` rows): one row per submitted batch, from submit to collect.

The judge's and the LLM screen's batches share the table; its `stage` column tells them apart.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.models import utcnow
from monitor.store.records import JudgeBatch


def uncollected_batches(session: Session, stage: str) -> list[JudgeBatch]:
    """The `stage`'s batches not collected yet, oldest first."""
    query = select(JudgeBatch).where(JudgeBatch.status != "collected", JudgeBatch.stage == stage)
    return list(session.scalars(query.order_by(JudgeBatch.id)))


def add_batch(session: Session, fields: dict[str, Any]) -> None:
    """Record a submitted batch (its batch_id, input file, status, model, prompt version, stage, requests,
    pairs)."""
    session.add(JudgeBatch(**fields))


def set_batch_status(session: Session, row_id: int, status: str) -> None:
    """The status the Batch API last reported for a batch still running."""
    session.get(JudgeBatch, row_id).status = status  # type: ignore[union-attr]


def mark_batch_collected(session: Session, row_id: int, output_file_id: str | None) -> None:
    """Every answer of the batch is stored: it is never polled again."""
    stored = session.get(JudgeBatch, row_id)
    stored.status, stored.output_file_id, stored.collected_at = (  # type: ignore[union-attr]
        "collected",
        output_file_id,
        utcnow(),
    )
