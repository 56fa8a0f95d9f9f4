"""The LLM screen's verdict on a candidate and the exchange it came from."""

from __future__ import annotations

from sqlalchemy import Connection


def upgrade(conn: Connection) -> None:
    conn.exec_driver_sql("ALTER TABLE candidates ADD COLUMN screen VARCHAR(10)")
    conn.exec_driver_sql("CREATE INDEX ix_candidates_screen ON candidates (screen)")
    conn.exec_driver_sql("ALTER TABLE candidates ADD COLUMN screen_exchange_id INTEGER")
