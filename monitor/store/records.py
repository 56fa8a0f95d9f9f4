"""What runs did: `runs` and `locks` (the scheduler), `llm_exchanges`, `judge_batches` and
`judge_failures` (every LLM call, batch and pair the judge gave up on), `digests` (each one written and
sent). The tables of claims, papers and evidence are in `models.py`; both share its `Base`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import JSON, Date, DateTime, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from monitor.store.models import Base, utcnow


class LLMExchange(Base):
    """Every request to a judge model and what came back, with tokens, latency and any error."""

    __tablename__ = "llm_exchanges"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int | None] = mapped_column(Integer, index=True)
    provider: Mapped[str] = mapped_column(String(40))
    model: Mapped[str] = mapped_column(String(200))
    prompt_version: Mapped[str] = mapped_column(String(40))
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    response: Mapped[str | None] = mapped_column(Text)
    response_format: Mapped[str | None] = mapped_column(String(20))  # json_schema | json_object | text
    prompt_tokens: Mapped[int] = mapped_column(Integer, default=0)
    completion_tokens: Mapped[int] = mapped_column(Integer, default=0)
    # Of prompt_tokens, those the provider served from its prefix cache (usage.prompt_tokens_details),
    # billed at llm.price_cached_input_per_million (schema v12).
    cached_tokens: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    latency_ms: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class JudgeFailure(Base):
    """A pair the judge could not answer: how many judge passes failed on it and why (schema v5).

    Keyed by the assessment cache key, so a new model, prompt or claim text starts afresh. Only
    failures about the pair itself count (an invalid or refused answer), never a server that is down.
    After `judge.park_after_failures` of them `parked_at` is set and runs stop asking, until
    `--force` or `monitor retest`; a later success deletes the row.
    """

    __tablename__ = "judge_failures"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cache_key: Mapped[str] = mapped_column(String(64), unique=True)
    arxiv_id: Mapped[str] = mapped_column(String(40))
    version: Mapped[int] = mapped_column(Integer)
    claim_id: Mapped[str] = mapped_column(String(64), index=True)
    judge: Mapped[str] = mapped_column(String(40))
    model: Mapped[str] = mapped_column(String(200))
    prompt_version: Mapped[str] = mapped_column(String(40))
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str] = mapped_column(Text, default="")
    run_id: Mapped[int | None] = mapped_column(Integer)  # the run of the last failure
    parked_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class JudgeBatch(Base):
    """An OpenAI Batch API job (`monitor judge --batch`): the calls it carries, until its results are in.

    `requests` maps each custom_id to the paper version, claims (with cache keys) and request body it
    was built from, so collecting never depends on prompts or settings that changed since.
    """

    __tablename__ = "judge_batches"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    batch_id: Mapped[str] = mapped_column(String(200), unique=True)
    input_file_id: Mapped[str] = mapped_column(String(200))
    output_file_id: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20))  # the API's status, then "collected"
    model: Mapped[str] = mapped_column(String(200))
    prompt_version: Mapped[str] = mapped_column(String(40))
    # Which stage's calls it carries: "judge", "screen" (the relevance screen's) or "second" (second looks).
    stage: Mapped[str] = mapped_column(String(10), default="judge", server_default="judge")
    requests: Mapped[dict[str, Any]] = mapped_column(JSON)
    pairs: Mapped[int] = mapped_column(Integer, default=0)
    run_id: Mapped[int | None] = mapped_column(Integer)
    submitted_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    collected_at: Mapped[dt.datetime | None] = mapped_column(DateTime)


# --- verdicts and digests -----------------------------------------------------------------------


class Digest(Base):
    """A rendered digest for one period; `sent_at` is set only when the mail server accepted it."""

    __tablename__ = "digests"
    __table_args__ = (UniqueConstraint("period_key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    period_key: Mapped[str] = mapped_column(String(40))  # 2026-W12 | 2026-03 | 2026-03-01..2026-03-15
    period_start: Mapped[dt.date] = mapped_column(Date)
    period_end: Mapped[dt.date] = mapped_column(Date)
    markdown_path: Mapped[str | None] = mapped_column(String(500))
    html_path: Mapped[str | None] = mapped_column(String(500))
    content_sha256: Mapped[str] = mapped_column(String(64))
    stats: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    sent_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    recipients: Mapped[list[str]] = mapped_column(JSON, default=list)
    run_id: Mapped[int | None] = mapped_column(Integer)


# --- operations ---------------------------------------------------------------------------------


class Run(Base):
    """One invocation of a pipeline command, with its counts, tokens, errors and timing."""

    __tablename__ = "runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    command: Mapped[str] = mapped_column(String(40))  # run | fetch | judge | report | replay | retest
    status: Mapped[str] = mapped_column(String(20), default="running")
    # running | ok | failed | interrupted | partial
    started_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    host: Mapped[str | None] = mapped_column(String(200))
    pid: Mapped[int | None] = mapped_column(Integer)
    counts: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    tokens: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[list[Any]] = mapped_column(JSON, default=list)
    warnings: Mapped[list[Any]] = mapped_column(JSON, default=list)


class Lock(Base):
    """A named lock row (the run lock), so two machines sharing a database never run at once."""

    __tablename__ = "locks"
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    holder: Mapped[str] = mapped_column(String(300))
    acquired_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    heartbeat_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
