"""The file source and the shipped sample: snapshots load fast, reload as no-ops, reject bad lines whole."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import subprocess
from pathlib import Path

import pytest
from ops_helpers import cli, start_paused, write_config
from ops_helpers import monitor as ops_monitor
from sqlalchemy import func, insert, select
from sqlalchemy.exc import IntegrityError

from monitor.config import Settings
from monitor.errors import InputError
from monitor.sources.ingest import fetch
from monitor.sources.sample import shipped_sample
from monitor.store import open_store
from monitor.store.models import Paper, PaperVersion
from monitor.store.records import Run
from monitor.store.runs import recorded_run

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


def monitor_cli(cwd: Path, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    return cli("--db", db, *args, cwd=cwd)


@pytest.mark.slow
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
    cmd = ["--db", db, "fetch", "--source", str(snap)]
    done = cli(*cmd, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "2 new" in done.stdout and "0 request(s)" in done.stdout
    bad = write_jsonl(tmp_path / "bad.jsonl", [row("2608.00003"), "{oops"])
    cmd[-1] = str(bad)
    done = cli(*cmd, cwd=tmp_path)
    assert done.returncode == 3
    assert "bad.jsonl:2: not valid JSON" in done.stderr and "Traceback" not in done.stderr
    assert "at column 2" in done.stderr  # where on the line, not just which line


def test_nul_surrogates_and_escapes_are_removed_and_the_whole_batch_stored(
    db_url: str, tmp_path: Path
) -> None:
    # A NUL made PostgreSQL refuse the whole batch (exit 1, every rerun); a lone surrogate could not
    # be encoded on either database; ESC sequences reached the digest and the terminal.
    rows = [
        row("2608.00001"),
        row("2608.00002", abstract="Nul \u0000 in the middle."),
        row("2608.00003", title="Half an emoji \ud83d here"),
        row(
            "2608.00004",
            title="\x1b]8;;https://evil.example\x1b\\Click\x1b]8;;\x1b\\ me\x1b[2J",
            comment="\x07",
        ),
        row("2608.00005"),
    ]
    snap = write_jsonl(tmp_path / "s.jsonl", rows)
    done = monitor_cli(tmp_path, db_url, "fetch", "--source", str(snap))
    assert done.returncode == 0, done.stderr
    assert "5 new" in done.stdout
    warning = " ".join(done.stderr.split())
    assert f"{snap}:2: abstract (a NUL character)" in warning
    assert f"{snap}:3: title (a lone UTF-16 surrogate)" in warning
    assert f"{snap}:4: title (control characters), comment (control characters)" in warning
    assert ":1:" not in warning and ":5:" not in warning
    store = open_store(db_url)
    with store.session() as s:
        papers = {p.arxiv_id: p for p in s.scalars(select(Paper))}
        versions = {v.arxiv_id: v for v in s.scalars(select(PaperVersion))}
        run = s.scalars(select(Run)).one()
    assert len(papers) == len(versions) == 5
    assert papers["2608.00002"].abstract == versions["2608.00002"].abstract == "Nul in the middle."
    assert papers["2608.00003"].title == "Half an emoji \ufffd here"
    assert papers["2608.00004"].title == "]8;;https://evil.example\\Click]8;;\\ me[2J"
    assert papers["2608.00004"].comment == ""
    assert run.status == "ok" and run.errors == [] and any(":4: title" in w for w in run.warnings)
    store.close()


@pytest.mark.parametrize("name", ["s.jsonl", "s.jsonl.gz"])
def test_bytes_that_are_not_utf8_are_reported_by_line(sqlite_url: str, tmp_path: Path, name: str) -> None:
    good = "".join(json.dumps(row(f"2608.0000{i}")) + "\n" for i in range(1, 4)).encode()
    body = good + json.dumps(row("2608.00004")).encode().replace(b"Text.", b"Caf\xe9.") + b"\n"
    path = tmp_path / name
    path.write_bytes(gzip.compress(body) if name.endswith(".gz") else body)
    store = open_store(sqlite_url)
    with pytest.raises(InputError, match=rf"{name}:4: not UTF-8 text \(byte \d+ of the line\)"):
        fetch(store, settings(sqlite_url), str(path))
    assert count(store) == 0  # the file is checked whole before anything is stored
    store.close()


def test_two_fetches_of_the_same_papers_at_once_both_finish(db_url: str, tmp_path: Path) -> None:
    # Both read "not stored yet" for the same papers, then both insert them: the second used to die on
    # the unique key (IntegrityError, exit 1) with kilobytes of SQL parameters in runs.errors.
    first = write_jsonl(
        tmp_path / "a.jsonl", [row(f"2608.0000{i}", version=2 if i == 3 else None) for i in range(1, 6)]
    )
    second = write_jsonl(tmp_path / "b.jsonl", [row(f"2608.0000{i}") for i in range(1, 7)])
    config = write_config(tmp_path, db_url)
    marker = tmp_path / "paused"
    paused = start_paused(config, "fetch:before_insert", marker, "fetch", "--source", str(first))
    try:
        other = ops_monitor(config, "fetch", "--source", str(second), timeout=120)
        assert other.returncode == 0, other.stderr
        assert "6 new" in other.stdout
        marker.with_name(marker.name + ".resume").touch()
        out, err = paused.communicate(timeout=120)
    finally:
        if paused.poll() is None:
            paused.kill()
    assert paused.returncode == 0, err
    store = open_store(db_url)
    with store.session() as s:
        papers = {p.arxiv_id: p.version for p in s.scalars(select(Paper))}
        versions = sorted(tuple(r) for r in s.execute(select(PaperVersion.arxiv_id, PaperVersion.version)))
        runs = [tuple(r) for r in s.execute(select(Run.status, Run.errors))]
    assert papers == {f"2608.0000{i}": 2 if i == 3 else 1 for i in range(1, 7)}  # the newer version won
    assert versions == sorted([(f"2608.0000{i}", 1) for i in range(1, 7)] + [("2608.00003", 2)])
    assert runs == [("ok", []), ("ok", [])]
    store.close()


def test_an_unexpected_database_error_is_stored_on_the_run_as_one_short_line(db_url: str) -> None:
    store = open_store(db_url)
    rows = [dict(row(f"2608.{i:05d}"), version=1, abstract="x" * 500, source="file") for i in range(200)]
    for r in rows:
        r["published"] = dt.date(2026, 8, 3)
    with store.session() as s:
        s.execute(insert(Paper.__table__), rows[:1])
    with pytest.raises(IntegrityError), recorded_run(store, "fetch"), store.session() as s:
        s.execute(insert(Paper.__table__), rows)  # the first one is stored already
    with store.session() as s:
        [error] = s.scalars(select(Run.errors)).one()
    assert error.startswith("IntegrityError: ") and "\n" not in error
    assert len(error) <= 300 and "parameters" not in error and "xxxxxxxx" not in error
    store.close()


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        # 2**40: PostgreSQL DataError (the whole batch, no line), SQLite stored it; 10**30: OverflowError.
        (row("2608.00009", version=2**40), "field version: must be from 1 to 1000"),
        (row("2608.00009", version=10**30), "field version: must be from 1 to 1000"),
        (row("2608.00009", version=1e300), "field version: "),
        (
            row("2608.00009v1099511627776"),
            "field arxiv_id: version 1099511627776 of 2608.00009 is out of range",
        ),
        # A date no arXiv paper has, whose week arithmetic (periods, cutoffs) would overflow.
        (row("2608.00009", published="9999-12-31"), "field published: 9999-12-31 is out of range"),
        (row("2608.00009", published=10**30), "field published: "),
        (row("2608.00009", updated="0001-01-01T00:00:00Z"), "field updated: 0001-01-01 is out of range"),
    ],
)
def test_an_out_of_range_version_or_date_names_file_line_and_field_and_writes_nothing(
    db_url: str, tmp_path: Path, bad: dict, says: str
) -> None:
    snap = write_jsonl(tmp_path / "s.jsonl", [row("2608.00001"), bad, row("2608.00003")])
    done = monitor_cli(tmp_path, db_url, "fetch", "--source", str(snap))
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{snap}:2: {says}" in done.stderr and "Traceback" not in done.stderr
    store = open_store(db_url)
    assert count(store) == 0  # as for every bad line: the file is refused whole, nothing stored
    store.close()


def test_the_highest_version_and_the_edge_dates_are_stored(db_url: str, tmp_path: Path) -> None:
    rows = [
        row("2608.00001", version=1000, updated="2100-12-31T23:59:59Z"),
        row("2608.00002v1000", published="1991-01-01"),
    ]
    snap = write_jsonl(tmp_path / "s.jsonl", rows)
    store = open_store(db_url)
    assert fetch(store, settings(db_url), str(snap)).new == 2
    with store.session() as s:
        assert {p.arxiv_id: p.version for p in s.scalars(select(Paper))} == {
            "2608.00001": 1000,
            "2608.00002": 1000,
        }
    store.close()
