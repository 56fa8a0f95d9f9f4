"""`monitor fetch` and `monitor anchors verify` as a user runs them: a real process, a real local server."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from arxiv_replay import ArxivReplay, rows_from_corpus
from ops_helpers import bare_environ, cli
from sqlalchemy import select

from monitor.errors import ConfigError
from monitor.store import open_store
from monitor.store.db import make_engine
from monitor.store.models import Anchor, Line
from monitor.store.records import Run


def monitor(
    tmp_path: Path, db: str, *args: str, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "MONITOR_ARXIV_MIN_DELAY": "0", **(env or {})}
    return cli("--db", db, *args, environ=full_env, cwd=tmp_path)


def test_fetch_api_records_a_run_with_its_counts(tmp_path: Path, shared: Path) -> None:
    rows = []
    with (shared / "arxiv" / "corpus.jsonl").open() as fh:
        for line in fh:
            row = json.loads(line)
            if "2026-08-17" <= row["published"][:10] <= "2026-08-18":
                rows.append(row)
    db = f"sqlite:///{tmp_path / 'm.db'}"
    with ArxivReplay(rows_from_corpus(rows), fixtures=None) as server:
        env = {
            "MONITOR_ARXIV__API_URL": server.url + "/api/query",
            "MONITOR_ARXIV__DELAY_SECONDS": "0.1",
            "MONITOR_ARXIV__PAGE_SIZE": "100",
        }
        args = ("fetch", "--source", "api", "--since", "2026-08-17", "--until", "2026-08-18")
        done = monitor(tmp_path, db, *args, "--category", "cs.CL", "--category", "cs.AI", env=env)
        assert done.returncode == 0, done.stderr
        requests = len(server.api_requests())
        queries = {r.query["search_query"] for r in server.api_requests()}
    assert queries == {"(cat:cs.AI OR cat:cs.CL) AND submittedDate:[202608170000 TO 202608182359]"}
    assert f"{requests} request(s)" in done.stdout and "waiting on politeness" in done.stdout
    store = open_store(db)
    with store.session() as s:
        run = s.scalars(select(Run).where(Run.command == "fetch")).one()
        assert run.status == "ok"
        assert run.counts["fetch"]["requests"] == requests and run.counts["fetch"]["new"] > 100
        assert f"{run.counts['fetch']['new']} new" in done.stdout
    store.close()


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_offline_fetch_says_no_network_and_exits_5_within_seconds(tmp_path: Path) -> None:
    # Default retries (5) and politeness delay (3 s): back-off on them used to take minutes.
    db = f"sqlite:///{tmp_path / 'm.db'}"
    port = closed_port()
    env = {"MONITOR_ARXIV__API_URL": f"http://127.0.0.1:{port}/api/query"}
    started = time.monotonic()
    done = monitor(tmp_path, db, "fetch", "--source", "api", env=env, timeout=60)
    elapsed = time.monotonic() - started
    assert done.returncode == 5, done.stderr  # SourceError
    assert elapsed < 15
    error = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1 and "no network, or arXiv unreachable" in error[0]
    assert f"127.0.0.1:{port}" in error[0] and "Connection refused" in error[0]
    assert "Traceback" not in done.stderr
    store = open_store(db)
    with store.session() as s:
        run = s.scalars(select(Run).where(Run.command == "fetch")).one()
    assert run.status == "failed" and run.errors == [error[0].removeprefix("error: ")]
    store.close()


def test_a_postgresql_url_without_a_database_name_is_a_configuration_error(tmp_path: Path) -> None:
    # libpq would connect to the user's default database (`postgres`) and create the schema there.
    with pytest.raises(ConfigError, match="database.url .* names no database"):
        make_engine("postgresql://postgres@127.0.0.1:5432")
    done = monitor(tmp_path, "postgresql://postgres:pw@127.0.0.1:5432/", "runs")
    assert done.returncode == 2, done.stderr
    assert "names no database" in done.stderr and "pw" not in done.stderr


@pytest.mark.parametrize(
    ("how", "code", "says"),
    [
        ({"--db": "postgresql://postgres:pw@127.0.0.1:5432"}, 2, "names no database"),
        ({"MONITOR_DATABASE__URL": "postgresql://postgres:pw@127.0.0.1:5432/"}, 2, "names no database"),
        ({"--db": "sqlite:///no/such/folder/m.db"}, 4, "database directory does not exist: no/such/folder"),
    ],
)
def test_init_with_an_unusable_database_url_writes_nothing(
    tmp_path: Path, how: dict[str, str], code: int, says: str
) -> None:
    """Before, `init` wrote monitor.toml, seeds/ and reports/, and only then found the URL unusable."""
    args = ["--db", how["--db"]] if "--db" in how else []
    environ = bare_environ(**{k: v for k, v in how.items() if not k.startswith("--")})
    done = cli(*args, "init", "--no-detect", cwd=tmp_path, environ=environ)
    assert done.returncode == code, done.stdout + done.stderr
    assert says in done.stderr and "pw" not in done.stderr + done.stdout
    assert list(tmp_path.iterdir()) == []  # no config, no seeds/, no reports/, no database


def test_anchors_verify_offline_and_listing(tmp_path: Path, shared: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    store = open_store(db)
    with store.session() as s:
        s.add(Line(id="l1", question="q"))
        s.flush()
        s.add(
            Anchor(
                line_id="l1",
                arxiv_id="2506.03106",
                cited_date_text="2025-06",
                cited_title="Natural language + numerical feedback",
            )
        )
        s.add(
            Anchor(line_id="l1", arxiv_id="2504.07912", cited_date_text="2025-04", cited_title="RL amplifies")
        )
    done = monitor(tmp_path, db, "anchors", "verify", "--source", str(shared / "arxiv" / "corpus.jsonl"))
    assert done.returncode == 0, done.stderr
    assert "grounded 1" in done.stdout and "not_in_snapshot 1" in done.stdout and "requests 0" in done.stdout
    with store.session() as s:
        checked = {a.arxiv_id: (a.status, a.checked_at is not None) for a in s.scalars(select(Anchor))}
    assert checked == {"2506.03106": ("grounded", True), "2504.07912": ("not_in_snapshot", True)}
    assert dt.date(2025, 6, 3).isoformat() in done.stdout
    store.close()
