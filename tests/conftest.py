"""Shared fixtures. `db_url` runs a test once on SQLite and once on the PostgreSQL at 127.0.0.1:5432.

Each PostgreSQL test gets its own schema (carried in the URL's search_path), so tests and the
subprocesses they start see the same fresh, isolated database and leave nothing behind.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MONITOR_SHARED", REPO.parent / "shared"))
PG_BASE = os.environ.get("MONITOR_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")

# Tests may use a politeness delay below arXiv's 3 s floor; users cannot.
os.environ.setdefault("MONITOR_ARXIV_MIN_DELAY", "0")


def _pg_available() -> str | None:
    try:
        engine = create_engine(PG_BASE, connect_args={"connect_timeout": 3})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means "no PostgreSQL here"
        return f"PostgreSQL at {PG_BASE} not reachable: {exc.__class__.__name__}"


_PG_SKIP = _pg_available()


def pg_schema_url() -> Iterator[str]:
    if _PG_SKIP:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have PostgreSQL: {_PG_SKIP}")
        pytest.skip(_PG_SKIP)
    schema = "t_" + uuid.uuid4().hex[:12]
    admin = create_engine(PG_BASE)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    try:
        yield f"{PG_BASE}?options=-csearch_path%3D{schema}"
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL: SQLite in tmp_path, or an isolated PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'monitor.db'}"
    else:
        yield from pg_schema_url()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'monitor.db'}"


@pytest.fixture
def store(db_url: str):
    from monitor.store import open_store

    s = open_store(db_url)
    yield s
    s.close()


@pytest.fixture
def shared() -> Path:
    if not SHARED.exists():
        pytest.skip(f"{SHARED} not present")
    return SHARED
