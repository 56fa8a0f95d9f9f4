"""Each claim's full outcome at a date, stored by the verdicts stage so readers never recompute it."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    Connection,
    Date,
    DateTime,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    UniqueConstraint,
)

_meta = MetaData()
# A stand-in for the table the new one points at, so the foreign key compiles; never created here.
Table("claims", _meta, Column("id", String(32), primary_key=True))
claim_outcomes = Table(
    "claim_outcomes",
    _meta,
    Column("id", Integer, primary_key=True),
    Column("claim_id", String(32), ForeignKey("claims.id"), nullable=False),
    Column("as_of", Date, nullable=False),
    Column("fingerprint", String(64), nullable=False),
    Column("outcome", JSON, nullable=False),
    Column("run_id", Integer),
    Column("computed_at", DateTime, nullable=False),
    UniqueConstraint("claim_id", "as_of"),
)


def upgrade(conn: Connection) -> None:
    claim_outcomes.create(conn)
