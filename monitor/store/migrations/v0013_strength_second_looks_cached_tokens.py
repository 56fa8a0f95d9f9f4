"""Issue 30: each LLM assessment's strength (direct / indirect / weak) and the state of its second
look, the second readings themselves, and the prompt tokens a provider served from its prefix cache
(priced at their own rate)."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

_meta = MetaData()
# Stand-ins for the tables the new one points at, so its foreign keys compile; never created here.
Table("assessments", _meta, Column("id", Integer, primary_key=True))
Table("llm_exchanges", _meta, Column("id", Integer, primary_key=True))
second_looks = Table(
    "second_looks",
    _meta,
    Column("id", Integer, primary_key=True),
    Column("assessment_id", Integer, ForeignKey("assessments.id"), nullable=False),
    Column("model", String(200), nullable=False),
    Column("prompt_version", String(40), nullable=False),
    Column("label", String(12), nullable=False),
    Column("strength", String(10)),
    Column("confidence", Float, nullable=False),
    Column("rationale", Text, nullable=False),
    Column("evidence", Text, nullable=False),
    Column("grounded", Boolean, nullable=False),
    Column("agrees", Boolean, nullable=False),
    Column("exchange_id", Integer, ForeignKey("llm_exchanges.id")),
    Column("run_id", Integer),
    Column("created_at", DateTime, nullable=False),
    UniqueConstraint("assessment_id", "model", "prompt_version"),
)


def upgrade(conn: Connection) -> None:
    conn.exec_driver_sql("ALTER TABLE assessments ADD COLUMN strength VARCHAR(10)")
    conn.exec_driver_sql("ALTER TABLE assessments ADD COLUMN second_look VARCHAR(10)")
    conn.exec_driver_sql("ALTER TABLE llm_exchanges ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0")
    second_looks.create(conn)
