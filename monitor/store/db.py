"""Engine, sessions and schema migrations.

Migrations are the numbered steps in monitor/store/migrations/ (version 1 the frozen first schema);
`open_store` applies the missing ones in order inside one transaction, so upgrading never asks the
user to delete their database.

Migrating is serialised and all-or-nothing, because two first runs on a fresh database used to race
(the loser died on "table already exists") and a kill mid-migration left some tables committed. The
run lock cannot guard this: on SQLite it is a row in a table the migration creates. So the migration
takes its own database lock, one that needs no table, and re-reads the version under it:
PostgreSQL a transaction-level advisory lock (freed at commit or when a killed process's connection
drops), SQLite `BEGIN IMMEDIATE` (the database's write lock). DDL is transactional on both, so a kill
rolls everything back. pysqlite would otherwise run CREATE TABLE outside any transaction (it only
opens one before INSERT/UPDATE/DELETE), so the SQLite connection is put in driver autocommit and the
BEGIN/COMMIT are ours. A second process waits for the first one's migration (up to
MIGRATION_WAIT_SECONDS, then LockHeld, exit 75), saying on stderr that it waits, and then finds
nothing to do; the run lock is taken only after that. When the schema is already current, opening
takes no lock at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path

from sqlalchemy import Connection, Engine, create_engine, event, inspect, select, text
from sqlalchemy.engine import URL, ExceptionContext, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from monitor.errors import ConfigError, DatabaseBusy, DatabaseError, LockHeld
from monitor.store.migrations import SCHEMA_VERSION, STEPS
from monitor.store.models import SchemaVersion
from monitor.testhooks import pause_at

log = logging.getLogger(__name__)

MIGRATION_WAIT_SECONDS = 30  # how long a second process waits for another's migration
BUSY_TIMEOUT_SECONDS = 30.0  # default database.busy_timeout_seconds: how long a write waits for SQLite
CONNECT_TIMEOUT_SECONDS = 10  # PostgreSQL: a server that does not complete a new connection by then failed


def _normalise_url(url: str) -> str:
    # Plain postgresql:// picks psycopg2, which we do not ship; use psycopg 3.
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def redact(url: str) -> str:
    """The URL with any password hidden, for messages and logs."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return "<unparseable database URL>"


def _require_database_name(parsed: URL, given: str) -> None:
    # Without one, libpq connects to the database named like the user (`postgres`), and the schema
    # lands among whatever lives there; never a choice anyone meant to make.
    if parsed.get_backend_name() == "postgresql" and not parsed.database:
        shown = redact(given)
        raise ConfigError(
            f"database.url {shown} names no database: PostgreSQL would use the user's default one. "
            f"Add the database name, e.g. {shown.rstrip('/')}/claim_monitor"
        )


def _create(url: str, parsed: URL, kwargs: dict[str, object]) -> Engine:
    try:
        return create_engine(url, **kwargs)
    except ImportError as exc:
        if parsed.get_backend_name() == "postgresql":
            # The driver is an extra: SQLite, the default, needs nothing more.
            raise DatabaseError(
                f"database URL {redact(url)} needs the PostgreSQL driver, which is not installed: "
                'pip install "claim-monitor[postgres]" (or pip install "psycopg[binary]")'
            ) from None
        raise DatabaseError(f"database URL {redact(url)} is not usable: {exc}") from None
    except (NoSuchModuleError, ArgumentError) as exc:
        raise DatabaseError(f"database URL {redact(url)} is not usable: {exc}") from None


def check_database_url(url: str) -> URL:
    """The parsed URL, or the one-line error opening it would end in; connects to nothing, so a command
    that writes files first (`monitor init`) can check before it writes anything."""
    given, url = url, _normalise_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise DatabaseError(f"database URL is not valid: {url!r}") from None
    _require_database_name(parsed, given)
    if parsed.get_backend_name() == "sqlite":
        db = parsed.database
        if db and db != ":memory:":
            parent = Path(db).expanduser().parent
            if not parent.exists():
                raise DatabaseError(f"database directory does not exist: {parent} (from {redact(url)})")
    return parsed


def make_engine(
    url: str,
    echo: bool = False,
    busy_timeout_seconds: float = BUSY_TIMEOUT_SECONDS,
    statement_timeout_seconds: float | None = None,
) -> Engine:
    """An engine whose lock waits and full disks surface as one-line MonitorErrors (`_user_error`).

    `statement_timeout_seconds` (PostgreSQL; for a server answering requests, the claim board): the
    server cancels a statement that runs longer, and a pooled connection is waited for no longer."""
    parsed = check_database_url(url)
    url = _normalise_url(url)
    kwargs: dict[str, object] = {"echo": echo, "future": True}
    if parsed.get_backend_name() == "sqlite":
        kwargs["connect_args"] = {"timeout": busy_timeout_seconds}
    else:
        kwargs["pool_pre_ping"] = True
        connect_args: dict[str, object] = {"connect_timeout": CONNECT_TIMEOUT_SECONDS}
        if statement_timeout_seconds is not None:
            statement_ms = max(1, round(statement_timeout_seconds * 1000))
            # after the URL's own options (a search_path), which connect_args would otherwise replace
            given = parsed.query.get("options", "")
            given = given if isinstance(given, str) else " ".join(given)
            connect_args["options"] = f"{given} -c statement_timeout={statement_ms}".strip()
            kwargs["pool_timeout"] = statement_timeout_seconds
        kwargs["connect_args"] = connect_args
    engine = _create(url, parsed, kwargs)
    if parsed.get_backend_name() == "sqlite":
        busy_ms = max(1, round(busy_timeout_seconds * 1000))

        def pragmas(dbapi_conn: object, _record: object) -> None:
            cur = dbapi_conn.cursor()  # type: ignore[attr-defined]
            # WAL lets a reader (monitor claims) run beside a writer (monitor run).
            cur.execute("PRAGMA journal_mode=WAL")
            # In WAL mode NORMAL syncs at checkpoints, not at every commit: a process that dies loses
            # nothing committed, a power cut at most the last commits (assessments a rerun judges
            # again), and the file stays consistent. FULL spent 16 of a week's 90 s judging in fsync.
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA busy_timeout={busy_ms}")
            cur.close()

        event.listen(engine, "connect", pragmas)

    def user_error(context: ExceptionContext) -> Exception | None:
        return _user_error(context.original_exception, redact(url), busy_timeout_seconds)

    event.listen(engine, "handle_error", user_error)
    return engine


# SQLite's messages, and PostgreSQL's SQLSTATE, for a disk that is full (or a file over its size limit).
_DISK_FULL = ("database or disk is full", "disk I/O error")
_PG_DISK_FULL = "53100"


def _user_error(exc: BaseException | None, where: str, busy_seconds: float) -> Exception | None:
    """The MonitorError a driver error stands for, wherever in the code it happens; None: no such.

    A write that waited out the busy timeout is another process holding SQLite's write lock: try
    again later (75), not a crash with a traceback. A full disk is the database unusable (4).
    """
    message = str(exc).strip().splitlines()[0] if exc is not None else ""
    if "database is locked" in message:
        return DatabaseBusy(
            f"database {where} stayed locked by another process's write for {busy_seconds:g}s "
            "(database.busy_timeout_seconds); this write was not made, finished work is kept: try again later"
        )
    if any(text in message for text in _DISK_FULL) or getattr(exc, "sqlstate", None) == _PG_DISK_FULL:
        return DatabaseError(f"database {where} cannot be written: {message} (is the disk full?)")
    return None


def current_version(conn: Connection) -> int:
    if not inspect(conn).has_table(SchemaVersion.__tablename__):
        return 0
    row = conn.execute(select(SchemaVersion.version).where(SchemaVersion.id == 1)).first()
    return int(row[0]) if row else 0


def _too_new(found: int) -> None:
    if found > SCHEMA_VERSION:
        raise DatabaseError(
            f"database schema is version {found}, newer than this claim-monitor ({SCHEMA_VERSION}); "
            "upgrade claim-monitor"
        )


def _migration_key(schema: str) -> int:
    # Per schema, so databases sharing a server do not wait on each other; distinct from run-lock keys.
    digest = hashlib.sha256(f"claim-monitor:{schema}:migrate".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _busy(url: object) -> LockHeld:
    return LockHeld(
        f"another process is creating or upgrading the schema of {redact(str(url))} and did not finish "
        f"within {MIGRATION_WAIT_SECONDS}s; try again later"
    )


def _say_waiting(url: object) -> None:
    # A process that would otherwise sit silent for up to MIGRATION_WAIT_SECONDS says why.
    log.warning(
        "waiting for another process to finish creating or upgrading the database schema of %s (up to %ss)",
        redact(str(url)),
        MIGRATION_WAIT_SECONDS,
    )


@contextlib.contextmanager
def _migration_transaction(engine: Engine) -> Iterator[Connection]:
    """One transaction holding the migration lock (see the module docstring); commits on success."""
    if engine.dialect.name == "sqlite":
        conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        configured = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()  # the pooled connection's own
        try:
            # First without waiting, so a process that has to wait says so before it does.
            conn.exec_driver_sql("PRAGMA busy_timeout=0")
            try:
                conn.exec_driver_sql("BEGIN IMMEDIATE")
            except DatabaseBusy:
                _say_waiting(engine.url)
                conn.exec_driver_sql(f"PRAGMA busy_timeout={MIGRATION_WAIT_SECONDS * 1000}")
                try:
                    conn.exec_driver_sql("BEGIN IMMEDIATE")
                except DatabaseBusy:
                    raise _busy(engine.url) from None
            try:
                yield conn
                conn.exec_driver_sql("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    conn.exec_driver_sql("ROLLBACK")
                raise
        finally:
            with contextlib.suppress(Exception):  # back to the pool as it came, waiting as configured
                conn.exec_driver_sql(f"PRAGMA busy_timeout={int(configured or 0)}")
            conn.close()
        return
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text(f"SET LOCAL lock_timeout = '{MIGRATION_WAIT_SECONDS}s'"))
            schema = conn.execute(text("SELECT current_schema()")).scalar() or "public"
            key = {"k": _migration_key(schema)}
            if not conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), key).scalar():
                _say_waiting(engine.url)
                try:
                    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), key)
                except OperationalError:
                    raise _busy(engine.url) from None
        yield conn


def migrate(engine: Engine) -> int:
    """Bring the schema up to SCHEMA_VERSION; returns the version found before."""
    with engine.connect() as conn:
        found = current_version(conn)
    _too_new(found)
    if found == SCHEMA_VERSION:
        return found  # the common case: no lock, no write
    with _migration_transaction(engine) as conn:
        found = current_version(conn)  # again, under the lock: another process may have done it
        _too_new(found)
        for step in STEPS:
            if step.version > found:
                step.upgrade(conn)
                pause_at(f"migrate:v{step.version}")  # test-only: crash tests kill a migration here
        if found == 0:
            conn.execute(SchemaVersion.__table__.insert().values(id=1, version=SCHEMA_VERSION))
        elif found < SCHEMA_VERSION:
            conn.execute(text("UPDATE schema_version SET version = :v WHERE id = 1"), {"v": SCHEMA_VERSION})
    return found


class Store:
    """The database: an engine plus a session factory. Create with `open_store`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.sessions = sessionmaker(engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextlib.contextmanager
    def session(self) -> Iterator[Session]:
        """A session in one transaction: committed on success, rolled back on any error."""
        with self.sessions() as session, session.begin():
            yield session

    def close(self) -> None:
        self.engine.dispose()


def _cannot_open(url: str, exc: OperationalError) -> DatabaseError:
    reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
    return DatabaseError(f"cannot open database {redact(url)}: {reason}")


def require_existing(url: str) -> None:
    """For commands that only read: a database never created is an error, not a new empty one.

    Run in the wrong folder, `sqlite:///monitor.db` would otherwise create an empty file there and a
    report would print an empty digest and exit 0.
    """
    try:
        parsed = make_url(_normalise_url(url))
    except ArgumentError:
        raise DatabaseError(f"database URL is not valid: {url!r}") from None
    engine = make_engine(url)  # names a missing directory, connects to nothing yet
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(parsed.database).expanduser()
        if not path.exists():
            engine.dispose()
            raise DatabaseError(
                f"no database at {path.resolve()}: run `monitor init` (or `monitor run`) in the project "
                "folder first, or point --db / --config at your database"
            )
    try:
        with engine.connect() as conn:
            empty = current_version(conn) == 0
    except OperationalError as exc:
        raise _cannot_open(url, exc) from None
    finally:
        engine.dispose()
    if empty:
        raise DatabaseError(
            f"database {redact(url)} holds no claim-monitor data yet: "
            "run `monitor init` or `monitor run` first"
        )


def open_store(
    url: str,
    echo: bool = False,
    migrate_schema: bool = True,
    busy_timeout_seconds: float = BUSY_TIMEOUT_SECONDS,
    statement_timeout_seconds: float | None = None,
) -> Store:
    """Connect, check the database answers, and migrate it. Every failure is one DatabaseError line."""
    engine = make_engine(
        url,
        echo=echo,
        busy_timeout_seconds=busy_timeout_seconds,
        statement_timeout_seconds=statement_timeout_seconds,
    )
    try:
        if migrate_schema:
            migrate(engine)
        else:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        raise _cannot_open(url, exc) from None
    except SQLAlchemyError as exc:
        raise DatabaseError(f"database {redact(url)} failed: {exc.__class__.__name__}: {exc}") from None
    return Store(engine)
