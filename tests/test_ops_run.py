"""`monitor run`: the whole pipeline, recorded; two runs at once; SIGKILL anywhere and a rerun finishes.

The runs use a small real snapshot (papers of the shipped sample), the seeds and the embedded judge.
Crash points are the test-only pause hooks (monitor/testhooks.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from arxiv_replay import ArxivReplay
from ops_helpers import MONITOR, env, make_settings, monitor, start_paused, write_config, write_snapshot
from sqlalchemy import func, select

from monitor.report.render import fmt_date
from monitor.schedule.pipeline import RunOptions, run_once
from monitor.store import open_store
from monitor.store.models import Assessment, Candidate, Paper, PaperVersion
from monitor.store.records import Digest, Run


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "snapshot.jsonl"
    assert write_snapshot(path, limit=30) == 30
    return path


def _count(store, what) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(what)) or 0)


def _assert_nothing_doubled(store) -> None:
    """Each paper and version once, each (cache key, generation) once, every candidate judged, one digest."""
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(Paper)) == 30
        assert s.scalar(select(func.count()).select_from(PaperVersion)) == 30
        keys = s.execute(select(Assessment.cache_key, Assessment.generation)).all()
        assert len(keys) == len(set(keys)), "an assessment was written twice"
        pairs = s.execute(select(Assessment.arxiv_id, Assessment.claim_id)).all()
        assert len(pairs) == len(set(pairs)), "a (paper, claim) pair was judged twice"
        candidates = set(s.execute(select(Candidate.arxiv_id, Candidate.claim_id)).all())
        assert candidates and set(pairs) == candidates, "some candidate was lost"
        assert s.scalar(select(func.count()).select_from(Digest)) == 1


def test_run_once_does_everything_and_a_second_run_has_nothing_left(tmp_path, db_url, snapshot) -> None:
    store = open_store(db_url)
    settings = make_settings(tmp_path, db_url)
    first = run_once(store, settings, RunOptions(source=str(snapshot), email=False))
    assert first.status == "ok"
    assert first.counts["fetch"]["new"] == 30
    assert first.counts["judge"]["judged"] > 0
    assert first.counts["verdicts"]["claims"] > 0
    assert first.digest_paths and Path(first.digest_paths[0]).exists()
    second = run_once(store, settings, RunOptions(source=str(snapshot), email=False))
    assert second.status == "ok"
    assert second.counts["fetch"]["new"] == 0 and second.counts["judge"]["judged"] == 0
    _assert_nothing_doubled(store)
    with store.session() as s:
        rows = s.scalars(select(Run).order_by(Run.id)).all()
        assert [(r.command, r.status) for r in rows] == [("run", "ok"), ("run", "ok")]
        assert all(r.finished_at and r.counts.get("seconds") for r in rows)


# The snapshot's papers span ISO weeks 2025-W10 and 2025-W11; its digest reports W11.
REPORTED_FROM = dt.date(2025, 3, 10)


def _earlier_candidates(store) -> tuple[int, int]:
    """(pairs, papers): the candidates of papers published before the reported week."""
    with store.session() as s:
        rows = s.execute(
            select(Candidate.arxiv_id)
            .join(Paper, Paper.arxiv_id == Candidate.arxiv_id)
            .where(Paper.published < REPORTED_FROM)
        ).all()
    return len(rows), len(set(rows))


def test_a_period_scoped_run_judges_what_its_digest_reports_and_the_digest_says_what_waits(
    tmp_path, db_url, snapshot
) -> None:
    store = open_store(db_url)
    settings = make_settings(tmp_path, db_url)
    run = run_once(store, settings, RunOptions(source=str(snapshot), email=False, judge_scope="period"))
    assert run.status == "ok"
    assert run.counts["scope"]["period"] == run.counts["report"]["period"] == "2025-W11"
    with store.session() as s:
        judged_days = s.scalars(
            select(Paper.published).join(Assessment, Assessment.arxiv_id == Paper.arxiv_id)
        ).all()
    assert judged_days and min(judged_days) >= REPORTED_FROM
    assert len(judged_days) == run.counts["judge"]["judged"]
    pairs, papers = _earlier_candidates(store)
    assert pairs > 0
    assert (run.counts["scope"]["unjudged_pairs"], run.counts["scope"]["unjudged_papers"]) == (pairs, papers)
    assert run.counts["report"]["unjudged_pairs"] == pairs
    text = Path(run.digest_paths[0]).read_text(encoding="utf-8")
    assert f"**Not judged yet: {pairs} candidate pair{'s' if pairs != 1 else ''} of {papers} paper" in text
    assert "No verdict here rests on them" in text

    # What the digest says to do: `monitor judge` judges the rest, `monitor report` rewrites the digest.
    config = write_config(tmp_path, db_url)
    judged = monitor(config, "judge")
    assert judged.returncode == 0, judged.stderr
    assert _count(store, Assessment) == len(judged_days) + pairs
    reported = monitor(config, "report")
    assert reported.returncode == 0, reported.stderr
    _assert_nothing_doubled(store)
    text = Path(run.digest_paths[0]).read_text(encoding="utf-8")
    assert "Not judged yet" not in text


def test_an_embedded_run_ends_with_how_to_get_an_llm_judge_and_an_llm_run_does_not(
    tmp_path, sqlite_url, snapshot
) -> None:
    from llm_server import ScriptedLLM, answering

    config = write_config(tmp_path, sqlite_url)
    embedded = monitor(config, "run", "--source", str(snapshot), "--no-email")
    assert embedded.returncode == 0, embedded.stderr
    tail = " ".join(embedded.stdout.split())  # rich wraps lines at 80 columns off a terminal
    assert "The embedded judge labelled these pairs offline" in tail
    assert "`monitor doctor` finds a local Ollama, llama.cpp or vLLM server" in tail
    assert "`monitor judge --dry-run --judge openai` prices the stored pairs" in tail
    assert "Judged the papers of" not in tail  # a snapshot file is judged whole, as before
    # The advice fits the state: everything is judged, so a dry run of the judge in force (the
    # embedded one) has nothing to price and says what does; the LLM judge's dry run prices the pairs.
    nothing = monitor(config, "judge", "--dry-run")
    assert nothing.returncode == 0, nothing.stderr
    said = " ".join(nothing.stdout.split())
    assert "Nothing pending for the embedded judge" in said and "--judge openai" in said
    assert "pending pairs" not in said  # no table of zeros
    priced = monitor(config, "judge", "--dry-run", "--judge", "openai", "--json")
    assert priced.returncode == 0, priced.stderr
    estimate = json.loads(priced.stdout)["judge"]
    assert estimate["pending"] > 0 and estimate["cost_estimate"] > 0, estimate
    with ScriptedLLM() as llm:
        llm.default = answering("SUPPORTS")
        judge = {"provider": "openai", "base_url": llm.url, "api_key": "sk-ops", "model": "scripted-model"}
        judge["key_base_url"] = llm.url  # the key is for this server (it goes to no other)
        llm_config = write_config(tmp_path, sqlite_url, judge=judge)
        with_llm = monitor(llm_config, "run", "--no-fetch", "--no-email")
    assert with_llm.returncode == 0, with_llm.stderr
    assert "judged 0" not in with_llm.stdout  # the LLM judged the pairs anew
    assert "monitor doctor" not in with_llm.stdout and "embedded judge" not in with_llm.stdout


@pytest.fixture
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database of the kind the test's `backend` parameter names."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'monitor.db'}"
    else:
        from conftest import pg_schema_url

        yield from pg_schema_url()


# Every crash point on SQLite; on PostgreSQL the judging one (the stages' SQL is the same for all).
@pytest.mark.slow
@pytest.mark.parametrize(
    ("any_url", "point"),
    [
        ("sqlite", "fetch:after_first_batch"),
        ("sqlite", "judge:after_first_batch"),
        ("sqlite", "report:after"),
        ("postgresql", "judge:after_first_batch"),
    ],
    ids=["sqlite-during-fetch", "sqlite-during-judging", "sqlite-during-report", "postgresql-during-judging"],
    indirect=["any_url"],
)
def test_sigkill_anywhere_then_rerun_finishes_without_loss_or_doubles(
    tmp_path, any_url, snapshot, point
) -> None:
    db_url = any_url
    config = write_config(tmp_path, db_url)
    args = ("run", "--source", str(snapshot), "--no-email")
    victim = start_paused(config, point, tmp_path / "pause.txt", *args)
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    store = open_store(db_url)
    with store.session() as s:
        killed = s.scalars(select(Run)).one()
        assert killed.status == "running"  # nobody closed it
    rerun = monitor(config, *args)
    assert rerun.returncode == 0, rerun.stderr
    assert "digest:" in rerun.stdout
    _assert_nothing_doubled(store)
    with store.session() as s:
        rows = s.scalars(select(Run).order_by(Run.id)).all()
        assert [r.status for r in rows] == ["abandoned", "ok"]
        assert f"marked abandoned: runs [{rows[0].id}]" in rerun.stdout
        assert "abandoned" in " ".join(rows[1].warnings)
    listed = json.loads(monitor(config, "runs", "--json").stdout)
    assert [(r["command"], r["status"]) for r in listed] == [("run", "ok"), ("run", "abandoned")]
    with store.session() as s:  # the rerun reports what it wrote itself, not the killed run's share
        rerun_judged = s.scalar(select(func.count()).where(Assessment.run_id == rows[1].id))
    assert listed[0]["counts"]["judge"]["judged"] == rerun_judged and listed[0]["seconds"] is not None
    if point == "fetch:after_first_batch":
        assert listed[0]["counts"]["fetch"]["new"] == 0  # the killed run's batch was kept
        table = monitor(config, "runs", COLUMNS="200")
        assert "abandoned" in table.stdout and "0 new papers" in table.stdout
    if point == "judge:after_first_batch":
        # The killed run's first batch stands; the rerun judged only the rest.
        with store.session() as s:
            by_run = dict(
                s.execute(select(Assessment.run_id, func.count()).group_by(Assessment.run_id)).all()
            )
        assert by_run.get(rows[0].id, 0) >= 1 and by_run.get(rows[1].id, 0) >= 1


def _complete(store, path: Path) -> bool:
    """The digest file holds the whole text its row was recorded with (hash without the time)."""
    with store.session() as s:
        row = s.scalars(select(Digest)).one()
    text = path.read_text(encoding="utf-8")
    bare = text.replace(fmt_date(row.created_at), "")
    return row.markdown_path == str(path) and hashlib.sha256(bare.encode()).hexdigest() == row.content_sha256


@pytest.mark.slow
def test_sigkill_while_the_digest_file_is_half_written(tmp_path, sqlite_url, snapshot) -> None:
    config = write_config(tmp_path, sqlite_url)
    reports = tmp_path / "reports"
    args = ("run", "--source", str(snapshot), "--no-email")
    victim = start_paused(config, "write:digest-*.md", tmp_path / "pause.txt", *args)
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    # Killed with half the Markdown in a temp file: nothing under the digest's own name.
    (half,) = reports.glob(".digest-*.md.*")
    half_size = half.stat().st_size
    assert half_size > 0
    assert list(reports.glob("digest-*")) == []
    store = open_store(sqlite_url)
    assert _count(store, Digest) == 0
    rerun = monitor(config, *args)
    assert rerun.returncode == 0, rerun.stderr
    (digest,) = reports.glob("digest-*.md")
    assert half.name.startswith(f".{digest.name}.")
    assert digest.stat().st_size > half_size and _complete(store, digest)
    # Only the complete digest and the feed are left: the half file was a dot-file, never under a
    # name a reader or the mailer picks up, and the rerun removed it (its writer is dead).
    assert not half.exists()
    assert sorted(p.name for p in reports.iterdir()) == [digest.name, "feed.xml"]
    _assert_nothing_doubled(store)


def test_sigterm_stops_after_the_current_step(tmp_path, sqlite_url, snapshot) -> None:
    config = write_config(tmp_path, sqlite_url)
    victim = start_paused(
        config, "relevance:before", tmp_path / "pause.txt", "run", "--source", str(snapshot)
    )
    victim.send_signal(signal.SIGTERM)  # noted; the step in progress finishes
    (tmp_path / "pause.txt.resume").touch()
    out, err = victim.communicate(timeout=120)
    assert victim.returncode == 130, err
    assert "stopped after relevance" in err
    store = open_store(sqlite_url)
    with store.session() as s:
        run = s.scalars(select(Run)).one()
        assert run.status == "interrupted" and run.finished_at is not None
        assert "relevance" in run.counts and "judge" not in run.counts
        assert s.scalar(select(func.count()).select_from(Assessment)) == 0
    rerun = monitor(config, "run", "--source", str(snapshot), "--no-email")
    assert rerun.returncode == 0, rerun.stderr
    _assert_nothing_doubled(store)


@pytest.mark.slow
def test_two_runs_at_once_one_works_the_other_exits_or_waits(tmp_path, db_url, snapshot) -> None:
    config = write_config(tmp_path, db_url)
    args = ("run", "--source", str(snapshot), "--no-email")
    marker = tmp_path / "pause.txt"
    first = start_paused(config, "judge:before", marker, *args)
    try:
        refused = monitor(config, *args, timeout=60)
        assert refused.returncode == 75, refused.stderr
        assert "another run is in progress" in refused.stderr

        waiting_config = write_config(
            tmp_path, db_url, schedule={"on_lock_held": "wait", "lock_wait_seconds": 240}
        )
        waiter = subprocess.Popen(
            [MONITOR, "--config", str(waiting_config), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
        )
        try:
            with pytest.raises(subprocess.TimeoutExpired):
                waiter.wait(3)  # blocked behind the first run
            (tmp_path / "pause.txt.resume").touch()
            assert first.wait(240) == 0, first.stderr.read() if first.stderr else ""
            out, err = waiter.communicate(timeout=240)
            assert waiter.returncode == 0, err
        finally:
            waiter.kill()
    finally:
        first.kill()
    store = open_store(db_url)
    _assert_nothing_doubled(store)
    with store.session() as s:
        rows = s.scalars(select(Run).order_by(Run.id)).all()
        assert [r.status for r in rows] == ["ok", "ok"]  # the refused run never opened a row
        assert rows[1].counts["fetch"]["new"] == 0 and rows[1].counts["judge"]["judged"] == 0
        assert rows[0].finished_at <= rows[1].started_at


def _feed(updated: dt.date, rows: list[dict]) -> bytes:
    """An rss.arxiv.org Atom feed dated `updated`, announcing `rows` as new."""
    head = (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<feed xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:dc="http://purl.org/dc/elements/1.1/"'
        ' xmlns="http://www.w3.org/2005/Atom" xml:lang="en-us">\n'
        "  <id>http://rss.arxiv.org/atom/cs.AI</id>\n  <title>cs.AI updates on arXiv.org</title>\n"
        f"  <updated>{updated.isoformat()}T04:00:00+00:00</updated>\n"
    )
    entries = [
        f"""  <entry>
    <id>oai:arXiv.org:{r["arxiv_id"]}v1</id>
    <title>{escape(r["title"])}</title>
    <updated>{updated.isoformat()}T04:00:00+00:00</updated>
    <link href="https://arxiv.org/abs/{r["arxiv_id"]}" rel="alternate" type="text/html"/>
    <summary>arXiv:{r["arxiv_id"]}v1 Announce Type: new
Abstract: {escape(r["abstract"])}</summary>
    <category term="cs.AI"/>
    <published>{updated.isoformat()}T00:00:00-04:00</published>
    <arxiv:announce_type>new</arxiv:announce_type>
    <dc:creator>{escape(", ".join(r.get("authors") or ["A. Author"]))}</dc:creator>
  </entry>
"""
        for r in rows
    ]
    return (head + "".join(entries) + "</feed>\n").encode()


def test_a_holiday_with_no_announcements_runs_clean_and_the_digest_says_so(
    tmp_path, sqlite_url, snapshot
) -> None:
    """The Christmas break: last week arXiv announced nothing; the daily feed comes back empty."""
    today = dt.datetime.now(dt.UTC).date()
    monday = today - dt.timedelta(days=today.weekday())
    before_break = monday - dt.timedelta(days=12)  # the Wednesday of the week before last
    holiday = monday - dt.timedelta(days=4)  # last Thursday
    rows = [json.loads(line) for line in snapshot.read_text().splitlines()]
    with ArxivReplay(fixtures=None) as server:
        server.feeds["/atom/cs.AI"] = _feed(before_break, rows)
        arxiv = {"rss_url": server.url, "categories": ["cs.AI"], "delay_seconds": 0.0}
        config = write_config(tmp_path, sqlite_url, arxiv=arxiv)
        args = ("run", "--source", "rss", "--no-email")
        first = monitor(config, *args)
        assert first.returncode == 0, first.stderr
        store = open_store(sqlite_url)
        judged = _count(store, Assessment)
        assert _count(store, Paper) == 30 and judged > 0
        server.feeds["/atom/cs.AI"] = _feed(holiday, [])
        second = monitor(config, *args)
        assert second.returncode == 0, second.stderr
    _assert_nothing_doubled(store)
    assert _count(store, Assessment) == judged
    with store.session() as s:
        runs = s.scalars(select(Run).order_by(Run.id)).all()
        digest = s.scalars(select(Digest)).one()  # last week's, written by both runs
    assert [r.status for r in runs] == ["ok", "ok"]
    assert runs[1].counts["fetch"]["new"] == 0 and runs[1].counts["judge"]["judged"] == 0
    assert any("empty feed on an announcement weekday" in w for w in runs[1].warnings)
    assert digest.period_start == monday - dt.timedelta(days=7)
    text = Path(digest.markdown_path).read_text(encoding="utf-8")
    assert "No arXiv announcements in this period" in text
    assert not any(r["title"] in text for r in rows)  # the papers before the break are not news
