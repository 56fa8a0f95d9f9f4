"""`monitor serve` records who made each curator decision."""

from __future__ import annotations

from sqlalchemy import Connection


def upgrade(conn: Connection) -> None:
    conn.exec_driver_sql("ALTER TABLE reviews ADD COLUMN reviewer VARCHAR(100) NOT NULL DEFAULT ''")
