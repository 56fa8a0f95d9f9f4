"""A curator may mark a decision decisive; a verdict row keeps what its readers print with it."""

from __future__ import annotations

from sqlalchemy import Connection


def upgrade(conn: Connection) -> None:
    conn.exec_driver_sql("ALTER TABLE reviews ADD COLUMN decisive BOOLEAN NOT NULL DEFAULT FALSE")
    conn.exec_driver_sql("ALTER TABLE verdicts ADD COLUMN details JSON")
