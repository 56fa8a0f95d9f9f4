"""Logged LLM exchanges (`llm_exchanges` rows): one per request a model is sent, and the earlier answers
a stage may reuse instead of asking again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.records import LLMExchange


def add_exchange(session: Session, fields: dict[str, Any]) -> int:
    """Store one exchange (run_id, provider, model, prompt_version, request, response, tokens ...); its id."""
    row = LLMExchange(**fields)
    session.add(row)
    session.flush()
    return row.id


def answers_for(session: Session, prompt_version: str, cache_key: str) -> Iterator[str]:
    """The answers, newest first, of error-free exchanges under `prompt_version` whose request's meta
    carries `cache_key` (a stage's own key for "the same question")."""
    rows = session.scalars(
        select(LLMExchange)
        .where(LLMExchange.prompt_version == prompt_version, LLMExchange.error.is_(None))
        .order_by(LLMExchange.id.desc())
    )
    for row in rows:
        meta = (row.request or {}).get("meta") or {}
        if meta.get("cache_key") == cache_key and row.response:
            yield row.response
