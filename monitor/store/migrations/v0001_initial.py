"""The first schema, frozen as the SQL claim-monitor created it (one file per supported database)."""

from __future__ import annotations

from importlib.resources import files

from sqlalchemy import Connection

from monitor.errors import DatabaseError


def upgrade(conn: Connection) -> None:
    script = files(__package__).joinpath(f"v0001_initial.{conn.dialect.name}.sql")
    if not script.is_file():
        raise DatabaseError(f"claim-monitor stores in SQLite or PostgreSQL, not {conn.dialect.name}")
    body = "\n".join(ln for ln in script.read_text(encoding="utf-8").splitlines() if not ln.startswith("--"))
    for statement in body.split(";"):
        if statement.strip():
            conn.exec_driver_sql(statement)
