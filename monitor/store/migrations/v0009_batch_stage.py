"""Screen batches were told apart by a "screen:" prefix on their prompt version; a column says it now."""

from __future__ import annotations

from sqlalchemy import Connection, text


def upgrade(conn: Connection) -> None:
    conn.exec_driver_sql("ALTER TABLE judge_batches ADD COLUMN stage VARCHAR(10) NOT NULL DEFAULT 'judge'")
    # text(), not the driver's own SQL: psycopg would read the LIKE pattern's "%" as a placeholder.
    conn.execute(
        text(
            "UPDATE judge_batches SET stage = 'screen', prompt_version = substr(prompt_version, 8) "
            "WHERE prompt_version LIKE 'screen:%'"
        )
    )
