"""Proposed and accepted narrowed wordings (`monitor review reword`), as the table was at version 5."""

from __future__ import annotations

from sqlalchemy import JSON, Column, Connection, DateTime, ForeignKey, Integer, MetaData, String, Table, Text

_meta = MetaData()
Table("claims", _meta, Column("id", String(32), primary_key=True))  # stand-in for the foreign key
claim_rewordings = Table(
    "claim_rewordings",
    _meta,
    Column("id", Integer, primary_key=True),
    Column("claim_id", String(32), ForeignKey("claims.id"), nullable=False, index=True),
    Column("text", Text, nullable=False),
    Column("condition", Text, nullable=False),
    Column("cited", JSON, nullable=False),
    Column("model", String(200), nullable=False),
    Column("prompt_version", String(40), nullable=False),
    Column("exchange_id", Integer),
    Column("status", String(10), nullable=False),
    Column("note", Text, nullable=False),
    Column("new_claim_id", String(32)),
    Column("created_at", DateTime, nullable=False),
    Column("decided_at", DateTime),
)


def upgrade(conn: Connection) -> None:
    claim_rewordings.create(conn)
