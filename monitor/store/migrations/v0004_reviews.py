"""Curators' decisions (`monitor review`), as the table was at version 4."""

from __future__ import annotations

from sqlalchemy import Column, Connection, DateTime, ForeignKey, Index, Integer, MetaData, String, Table, Text

_meta = MetaData()
# Stand-ins for the tables the new one points at, so the foreign keys compile; never created here.
Table("claims", _meta, Column("id", String(32), primary_key=True))
Table("papers", _meta, Column("arxiv_id", String(40), primary_key=True))
Table("assessments", _meta, Column("id", Integer, primary_key=True))
reviews = Table(
    "reviews",
    _meta,
    Column("id", Integer, primary_key=True),
    Column("claim_id", String(32), ForeignKey("claims.id"), nullable=False),
    Column("arxiv_id", String(40), ForeignKey("papers.arxiv_id"), nullable=False),
    Column("assessment_id", Integer, ForeignKey("assessments.id"), nullable=False),
    Column("action", String(10), nullable=False),
    Column("from_label", String(12), nullable=False),
    Column("label", String(12)),
    Column("note", Text, nullable=False),
    Column("created_at", DateTime, nullable=False),
    Index("ix_reviews_pair", "claim_id", "arxiv_id"),
)


def upgrade(conn: Connection) -> None:
    reviews.create(conn)
