"""The embedded judge may withhold a stance ("related, stance unclear"); older rows never did."""

from __future__ import annotations

from sqlalchemy import Connection


def upgrade(conn: Connection) -> None:
    conn.exec_driver_sql("ALTER TABLE assessments ADD COLUMN abstained BOOLEAN NOT NULL DEFAULT FALSE")
