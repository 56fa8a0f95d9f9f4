"""An index on each assessment's pair: "is this candidate judged?" and "retire the pair's older
assessment" looked a pair up through every current assessment of its claim (hundreds a claim)."""

from __future__ import annotations

from sqlalchemy import Connection


def upgrade(conn: Connection) -> None:
    conn.exec_driver_sql(
        "CREATE INDEX ix_assessments_pair ON assessments (arxiv_id, claim_id, is_current)"
    )
