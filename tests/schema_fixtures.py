"""Stores of earlier schema versions, made from the DDL each version's own code created
(tests/fixtures/schemas: SQLite read back from a real store, PostgreSQL compiled from that code's models).

A test of one migration step loads the version before it, adds what rows it needs, and opens the store.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine

SCHEMAS = Path(__file__).resolve().parent / "fixtures" / "schemas"


def load_schema(url: str, version: int) -> None:
    """Create, in the empty database at `url`, the tables of a store at schema `version`."""
    dialect = "sqlite" if url.startswith("sqlite") else "postgresql"
    script = (SCHEMAS / f"v{version}.{dialect}.sql").read_text(encoding="utf-8")
    body = "\n".join(line for line in script.splitlines() if not line.startswith("--"))
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in body.split(";"):
                if statement.strip():
                    conn.exec_driver_sql(statement)
    finally:
        engine.dispose()
