"""The file source and the shipped sample: snapshots load fast, reload as no-ops, reject bad lines whole."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select

from monitor.config import Settings
from monitor.errors import InputError
from monitor.sources.ingest import fetch
from monitor.sources.sample import shipped_sample
from monitor.store import open_store
from monitor.store.models import Paper, PaperVersion

REPO = Path(__file__).resolve().parent.parent


def settings(url: str) -> Settings:
    return Settings(database={"url": url})


def count(store, model=Paper) -> int:
    with store.session() as s:
        return s.scalar(select(func.count()).select_from(model))


def row(arxiv_id: str, **extra) -> dict:
    base = {
        "arxiv_id": arxiv_id,
        "version": None,
        "title": f"Paper {arxiv_id}",
        "abstract": "Text.",
        "authors": ["A. Author"],
        "categories": ["cs.CL"],
        "primary_category": "cs.CL",
        "published": "2026-08-03",
        "updated": None,
    }
    base.update(extra)
    return base


def write_jsonl(path: Path, rows: list[dict | str]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_whole_corpus_loads_once_and_reloads_as_a_no_op(sqlite_url: str, shared: Path) -> None:
    corpus = shared / "arxiv" / "corpus.jsonl"
    store = open_store(sqlite_url)
    first = fetch(store, settings(sqlite_url), str(corpus))
    assert first.new == 22_120 == count(store) == count(store, PaperVersion)
    again = fetch(store, settings(sqlite_url), str(corpus))
    assert (again.new, again.updated, again.unchanged) == (0, 0, 22_120)
    assert count(store) == 22_120 == count(store, PaperVersion)
    with store.session() as s:
        # version null = v1; an explicit version is kept as the paper's version.
        rows = [json.loads(line) for line in corpus.open()]
        later = {r["arxiv_id"]: r["version"] for r in rows if (r["version"] or 1) > 1}
        assert len(later) == 11
        stored = dict(s.execute(select(Paper.arxiv_id, Paper.version).where(Paper.version > 1)).all())
        assert stored == later
    store.close()


def test_snapshot_versions_window_and_categories(db_url: str, tmp_path: Path) -> None:
    snap = write_jsonl(
        tmp_path / "s.jsonl",
        [
            row("2608.00001"),
            row("2608.00002", published="2026-08-20", categories=["cs.CV"]),
            row("2608.00003", published="2026-07-01"),
        ],
    )
    store = open_store(db_url)
    week = fetch(
        store,
        settings(db_url),
        str(snap),
        since=dt.date(2026, 8, 1),
        until=dt.date(2026, 8, 31),
        categories=["cs.CL"],
    )
    assert week.new == 1
    fetch(store, settings(db_url), str(snap))
    assert count(store) == 3
    v2 = write_jsonl(tmp_path / "v2.jsonl.gz.tmp", [row("2608.00001", version=2, title="Revised")])
    gz = tmp_path / "v2.jsonl.gz"
    gz.write_bytes(gzip.compress(v2.read_bytes()))
    summary = fetch(store, settings(db_url), str(gz))
    assert summary.updated == 1
    with store.session() as s:
        paper = s.get(Paper, "2608.00001")
        assert (paper.version, paper.title, paper.needs_rejudge) == (2, "Revised", True)
        assert count(store, PaperVersion) == 4
    store.close()


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("{not json", r"s\.jsonl:2: not valid JSON: .* at column 2$"),
        ('{"arxiv_id": "2608.00009", oops}', r"s\.jsonl:2: not valid JSON: .* at column 28$"),
        (json.dumps(row("2608.00009", published="August")), r"s\.jsonl:2: field published"),
        (json.dumps(row("not-an-id")), r"s\.jsonl:2: field arxiv_id"),
        (
            json.dumps({k: v for k, v in row("2608.00009").items() if k != "title"}),
            r"s\.jsonl:2: field title",
        ),
        (json.dumps(row("2608.00009", version=0)), r"s\.jsonl:2: field version"),
    ],
)
def test_a_bad_line_names_file_line_and_field_and_writes_nothing(
    db_url: str, tmp_path: Path, bad: str, message: str
) -> None:
    snap = write_jsonl(tmp_path / "s.jsonl", [row("2608.00001"), bad, row("2608.00003")])
    store = open_store(db_url)
    with pytest.raises(InputError, match=message):
        fetch(store, settings(db_url), str(snap))
    assert count(store) == 0
    store.close()


def test_missing_file_is_an_input_error(sqlite_url: str, tmp_path: Path) -> None:
    store = open_store(sqlite_url)
    with pytest.raises(InputError, match="no such file"):
        fetch(store, settings(sqlite_url), str(tmp_path / "nope.jsonl"))
    store.close()


def test_shipped_sample_is_small_real_and_covers_the_eval_and_last_week(
    sqlite_url: str, shared: Path
) -> None:
    path = shipped_sample()
    assert path.exists() and path.stat().st_size < 5_000_000
    store = open_store(sqlite_url)
    summary = fetch(store, settings(sqlite_url), "sample")
    assert 2_000 <= summary.new <= 6_000
    corpus_ids = {json.loads(line)["arxiv_id"] for line in (shared / "arxiv" / "corpus.jsonl").open()}
    eval_ids = {json.loads(line)["arxiv_id"] for line in (shared / "eval" / "domain_dev.jsonl").open()}
    with store.session() as s:
        stored = set(s.scalars(select(Paper.arxiv_id)))
        last = s.scalar(select(func.max(Paper.published)))
        last_week = s.scalars(select(Paper.title).where(Paper.published > last - dt.timedelta(days=7))).all()
    assert stored <= corpus_ids  # real papers only
    assert (eval_ids & corpus_ids) <= stored
    topical = [t for t in last_week if any(k in t.lower() for k in ("reinforcement", "rl", "reward", "grpo"))]
    assert len(last_week) >= 300 and len(topical) >= 20
    store.close()


def test_cli_fetch_prints_a_summary_and_bad_input_exits_3(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'm.db'}"
    snap = write_jsonl(tmp_path / "s.jsonl", [row("2608.00001"), row("2608.00002")])
    cmd = [sys.executable, "-m", "monitor", "--db", db, "fetch", "--source", str(snap)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2 new" in done.stdout and "0 request(s)" in done.stdout
    bad = write_jsonl(tmp_path / "bad.jsonl", [row("2608.00003"), "{oops"])
    cmd[-1] = str(bad)
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 3
    assert "bad.jsonl:2: not valid JSON" in done.stderr and "Traceback" not in done.stderr
    assert "at column 2" in done.stderr  # where on the line, not just which line
