"""Pairs the judge failed on, counted so repeat failures get parked; as the table was at version 6."""

from __future__ import annotations

from sqlalchemy import Column, Connection, DateTime, Integer, MetaData, String, Table, Text

judge_failures = Table(
    "judge_failures",
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("cache_key", String(64), nullable=False, unique=True),
    Column("arxiv_id", String(40), nullable=False),
    Column("version", Integer, nullable=False),
    Column("claim_id", String(64), nullable=False, index=True),
    Column("judge", String(40), nullable=False),
    Column("model", String(200), nullable=False),
    Column("prompt_version", String(40), nullable=False),
    Column("failures", Integer, nullable=False),
    Column("last_error", Text, nullable=False),
    Column("run_id", Integer),
    Column("parked_at", DateTime),
    Column("updated_at", DateTime, nullable=False),
)


def upgrade(conn: Connection) -> None:
    judge_failures.create(conn)
