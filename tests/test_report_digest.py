"""write_digest: files written atomically, one Digest row per period, re-rendering, and the CLI."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from digest_world import TRUSTED_ENV, World, sample, settled_write, trusted_settings
from ops_helpers import cli, consoles_as_at_start
from sqlalchemy import func, select

from monitor import files as files_module
from monitor.config import Settings
from monitor.errors import FileWriteError
from monitor.store.records import Digest, Run

REPO = Path(__file__).resolve().parent.parent


def settings_for(tmp_path: Path) -> Settings:
    settings = trusted_settings()
    settings.paths.reports = tmp_path / "reports"
    return settings


def test_writes_files_and_one_row_per_period(store, tmp_path) -> None:
    w = World(store)
    sample(w)
    settings = settings_for(tmp_path)
    result = settled_write(store, settings, "2026-W11", formats=["html"])
    md_path, html_path = result.paths["md"], result.paths["html"]
    assert md_path == tmp_path / "reports" / "digest-2026-W11.md" and html_path.suffix == ".html"
    text = md_path.read_text()
    assert re.fullmatch(r"[0-9a-f]{64}", result.content_sha256) and "Dense updates" in text
    assert result.stats["changed"] == 1 and result.stats["tokens"] == 1200
    with store.session() as s:
        row = s.scalars(select(Digest)).one()
        assert (row.period_key, row.period_start, row.period_end) == (
            "2026-W11",
            dt.date(2026, 3, 9),
            dt.date(2026, 3, 15),
        )
        assert row.markdown_path == str(md_path) and row.html_path == str(html_path)
        # c_calib's local label is listed for triage, not counted as evidence (h2, issue 21).
        assert row.stats["new_evidence"] == 1 and row.stats["triaged"] == 1
    # New evidence arrives for the same week: re-rendering overwrites the file and updates the row.
    w.paper("2603.09999", "Late support", dt.date(2026, 3, 14))
    w.assess("2603.09999", "c_div", "SUPPORTS", 0.8)
    again = settled_write(store, settings, "2026-W11")
    assert again.digest_id == result.digest_id
    assert "Late support" in md_path.read_text()
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(Digest)) == 1
        row = s.get(Digest, result.digest_id)
        assert row.content_sha256 == again.content_sha256 != result.content_sha256
        assert row.html_path == str(html_path)  # kept from the earlier render
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [
        "digest-2026-W11.html",
        "digest-2026-W11.md",
        "feed.xml",
    ]


def test_month_and_custom_file_names(store, tmp_path) -> None:
    sample(World(store))
    settings = settings_for(tmp_path)
    assert (
        settled_write(store, settings, "month", today=dt.date(2026, 4, 2)).paths["md"].name
        == "digest-2026-03.md"
    )
    custom = settled_write(store, settings, None, since=dt.date(2026, 3, 1), until=dt.date(2026, 3, 15))
    assert custom.paths["md"].name == "digest-2026-03-01_2026-03-15.md"
    assert "Dense updates" in custom.paths["md"].read_text()


def test_a_failed_write_leaves_the_old_file_and_no_temp_files(store, tmp_path, monkeypatch) -> None:
    sample(World(store))
    settings = settings_for(tmp_path)
    first = settled_write(store, settings, "2026-W11").paths["md"]
    before = first.read_text()

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files_module.os, "replace", broken_replace)
    with pytest.raises(FileWriteError, match=f"cannot write {first}: disk full"):
        settled_write(store, settings, "2026-W11")
    assert first.read_text() == before
    assert sorted(p.name for p in first.parent.iterdir()) == [first.name, "feed.xml"]


def run_cli(args: list[str], db_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The real console entry point, `monitor.cli.main`."""
    env = dict(os.environ, MONITOR_DATABASE__URL=db_url, MONITOR_PATHS__REPORTS=str(tmp_path / "reports"))
    env.update(TRUSTED_ENV)
    env.pop("MONITOR_CONFIG", None)
    return cli(*args, environ=env, cwd=tmp_path)


def main_in_process(
    args: list[str], db_url: str, tmp_path: Path, monkeypatch, capsys
) -> tuple[int, str, str]:
    """`monitor ARGS` through the same entry point, in this process (faster than a child process)."""
    from monitor.cli import main

    monkeypatch.setenv("MONITOR_DATABASE__URL", db_url)
    monkeypatch.setenv("MONITOR_PATHS__REPORTS", str(tmp_path / "reports"))
    for key, value in TRUSTED_ENV.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("MONITOR_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["monitor", *args])
    consoles_as_at_start()  # as a new process would: COLUMNS as the test set it
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_monitor_report_settles_the_periods_outcomes_as_a_recorded_step(
    store, db_url, tmp_path, monkeypatch, capsys
) -> None:
    """The digest reads outcomes the verdicts stage stored: `monitor report` runs that step first and
    records it; run again on the same evidence, it computes none."""
    sample(World(store))
    for _ in range(2):
        args = ["report", "--period", "2026-W11"]
        code, _, err = main_in_process(args, db_url, tmp_path, monkeypatch, capsys)
        assert code == 0, err
    with store.session() as s:
        first, again = (r.counts["outcomes"] for r in s.scalars(select(Run).order_by(Run.id)))
    assert first == {"as_of": ["2026-03-08", "2026-03-15"], "claims": 4, "computed": 8}
    assert again["computed"] == 0


def test_cli_report_verdicts_show(store, db_url, tmp_path, monkeypatch, capsys) -> None:
    sample(World(store))
    out = run_cli(["report", "--period", "2026-W11", "--format", "html"], db_url, tmp_path)
    assert out.returncode == 0, out.stderr
    assert "digest-2026-W11.md" in out.stdout and "digest-2026-W11.html" in out.stdout
    assert "1 contested" in out.stdout and "1 changed" in out.stdout
    with store.session() as s:
        run = s.scalars(select(Run).where(Run.command == "report")).one()
        assert run.status == "ok" and run.counts["report"]["period"] == "2026-W11"

    code, stdout, err = main_in_process(
        ["verdicts", "--json", "--line", "div"], db_url, tmp_path, monkeypatch, capsys
    )
    assert code == 0, err
    table = {row["claim_id"]: row for row in json.loads(stdout)}
    assert set(table) == {"c_sparse", "c_div"} and table["c_sparse"]["status"] == "CONTESTED"

    code, stdout, err = main_in_process(["show", "c_calib"], db_url, tmp_path, monkeypatch, capsys)
    assert code == 0, err
    assert "Binary rewards degrade calibration" in stdout and "for review" in stdout
    assert "Verdict history" in stdout

    code, _, err = main_in_process(["show", "nope"], db_url, tmp_path, monkeypatch, capsys)
    assert code == 64 and "no claim with id 'nope'" in err  # not found: a usage error
    code, _, err = main_in_process(["report", "--period", "fortnight"], db_url, tmp_path, monkeypatch, capsys)
    assert code == 3 and "fortnight" in err
    code, _, err = main_in_process(["report", "--format", "pdf"], db_url, tmp_path, monkeypatch, capsys)
    assert code == 2 and "pdf" in err


def test_content_hash_ignores_generation_time(store, tmp_path) -> None:
    sample(World(store))
    settings = settings_for(tmp_path)
    first = settled_write(store, settings, "2026-W11")
    second = settled_write(store, settings, "2026-W11")
    assert first.content_sha256 == second.content_sha256


def test_replayed_week_counts_pairs_judged_later_about_its_papers(store, tmp_path) -> None:
    w = World(store)
    sample(w)
    # A replay judges an old week's paper today: its pair and tokens belong to that week's digest.
    w.paper("2603.06666", "Judged during a replay", dt.date(2026, 3, 13))
    w.assess("2603.06666", "c_div", "SUPPORTS", 0.8, created_at=dt.datetime(2026, 11, 1, 9))
    result = settled_write(store, settings_for(tmp_path), "2026-W11")
    assert result.stats["pairs_judged"] == 4 and result.stats["new_evidence"] == 2
    later = settled_write(
        store, settings_for(tmp_path), None, since=dt.date(2026, 11, 1), until=dt.date(2026, 11, 7)
    )
    assert later.stats["pairs_judged"] == 1 and later.stats["new_evidence"] == 0


def test_default_week_follows_a_snapshot_store_but_not_a_quiet_live_one(store, tmp_path) -> None:
    w = World(store)
    # 2026-08-21 is a Friday in ISO week 2026-W34.
    w.paper("2608.00001", "Old snapshot paper", published=dt.date(2026, 8, 21))
    settings = settings_for(tmp_path)
    # Three months later the store ends long before the last complete week: report the store's last week.
    stale = settled_write(store, settings, today=dt.date(2026, 11, 22))
    assert stale.period.key == "2026-W34"
    # A live store whose newest paper is from this week reports last week, even though it was empty.
    w.paper("2611.00002", "This week's paper", published=dt.date(2026, 11, 24))
    live = settled_write(store, settings, today=dt.date(2026, 11, 26))
    assert live.period.key == "2026-W47"


def test_reporting_a_snapshot_stores_last_week_is_information_not_a_warning(
    store, tmp_path, caplog
) -> None:
    import logging

    from monitor.store.runs import recorded_run

    World(store).paper("2608.00001", "Old snapshot paper", published=dt.date(2026, 8, 21))
    caplog.set_level(logging.INFO, logger="monitor")
    with recorded_run(store, "report") as run:
        result = settled_write(store, settings_for(tmp_path), run_id=run.id, today=dt.date(2026, 11, 22))
    assert result.period.key == "2026-W34"
    notes = [r for r in caplog.records if "the store covers papers through 2026-08-23" in r.getMessage()]
    assert [r.levelno for r in notes] == [logging.INFO]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert run.warnings == []


def _feed_links(path: Path) -> dict[str, list[str]]:
    """The feed's self link and each entry's links (by the period at the end of its title)."""
    import xml.etree.ElementTree as ET

    atom = "{http://www.w3.org/2005/Atom}"
    root = ET.parse(path).getroot()
    out = {"self": [link.get("href", "") for link in root.findall(f"{atom}link")]}
    for entry in root.findall(f"{atom}entry"):
        key = entry.findtext(f"{atom}title", "").rsplit(" ", 1)[-1]
        out[key] = [link.get("href", "") for link in entry.findall(f"{atom}link")]
    return out


def test_an_atom_feed_lists_every_digest_and_feedparser_reads_it(store, tmp_path) -> None:
    import feedparser

    sample(World(store))
    settings = settings_for(tmp_path)
    settled_write(store, settings, "2026-W10")
    settled_write(store, settings, "2026-W11", formats=["html"])
    feed = feedparser.parse(str(tmp_path / "reports" / "feed.xml"))
    assert not feed.bozo, feed.get("bozo_exception")
    assert feed.version == "atom10" and feed.feed.title == "Claim monitor digest"
    # Ids are URIs (urn:uuid), one per period, the same when the feed is rewritten.
    ids = [feed.feed.id] + [e.id for e in feed.entries]
    assert all(i.startswith("urn:uuid:") and uuid.UUID(i.removeprefix("urn:uuid:")) for i in ids)
    assert len(set(ids)) == 3
    newest = feed.entries[0]
    assert newest.summary.startswith("1 verdict changed; 1 new evidence; 1 for review.")
    # Links are absolute: the reports folder's file:// URI, each pointing at the file written (read from
    # the XML: feedparser shortens file:/// to file://).
    folder = (tmp_path / "reports").resolve()
    assert _feed_links(tmp_path / "reports" / "feed.xml") == {
        "self": [(folder / "feed.xml").as_uri()],
        "2026-W11": [(folder / "digest-2026-W11.html").as_uri(), (folder / "digest-2026-W11.md").as_uri()],
        "2026-W10": [(folder / "digest-2026-W10.md").as_uri()],
    }
    settled_write(store, settings, "2026-W11")
    again = feedparser.parse(str(tmp_path / "reports" / "feed.xml"))
    assert [again.feed.id] + [e.id for e in again.entries] == ids
    # Served from a web server, the links start with report.public_url.
    settings.report.public_url = "https://example.org/claims/reports"
    settled_write(store, settings, "2026-W11")
    served = feedparser.parse(str(tmp_path / "reports" / "feed.xml"))
    assert not served.bozo
    links = _feed_links(tmp_path / "reports" / "feed.xml")
    assert links["self"] == ["https://example.org/claims/reports/feed.xml"]
    assert "https://example.org/claims/reports/digest-2026-W11.md" in links["2026-W11"]
    assert served.feed.id != feed.feed.id and served.feed.id.startswith("urn:uuid:")


def test_digests_follow_the_umask_and_a_killed_writes_temp_files_are_cleaned(store, tmp_path) -> None:
    import os
    import time

    sample(World(store))
    settings = settings_for(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    stale = reports / ".digest-2026-W11.md.abc123"  # left by a write killed before its rename
    stale.write_text("half a digest")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    fresh = reports / ".digest-2026-W11.md.def456"  # maybe a write in progress: left alone
    fresh.write_text("being written")
    previous = os.umask(0o022)
    try:
        path = settled_write(store, settings, "2026-W11").paths["md"]
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
    assert not stale.exists() and fresh.exists()


def test_report_reports_option_writes_the_digest_and_feed_to_that_folder(
    store, db_url, tmp_path, monkeypatch, capsys
) -> None:
    """reports/README.md documents `monitor report --reports DIR` for one call."""
    sample(World(store))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out, err = main_in_process(
        ["report", "--period", "2026-W11", "--reports", str(elsewhere)], db_url, tmp_path, monkeypatch, capsys
    )
    assert code == 0, err
    assert (elsewhere / "digest-2026-W11.md").is_file() and (elsewhere / "feed.xml").is_file()
    assert not (tmp_path / "reports" / "digest-2026-W11.md").exists()
    assert "--reports DIR" in (REPO / "reports" / "README.md").read_text()


def test_the_caller_decides_whether_a_stale_store_moves_the_period(store, tmp_path, caplog) -> None:
    """Following a snapshot store's last week is the caller's choice, said at info level, not a warning."""
    World(store).paper("2608.00001", "Old snapshot paper", published=dt.date(2026, 8, 21))
    settings = settings_for(tmp_path)
    kept = settled_write(store, settings, today=dt.date(2026, 11, 22), follow_store=False)
    assert kept.period.key == "2026-W46"  # the last complete week before that Sunday
    with caplog.at_level("INFO", logger="monitor.report.digest"):
        moved = settled_write(store, settings, today=dt.date(2026, 11, 22))
    assert moved.period.key == "2026-W34"
    [notice] = [r for r in caplog.records if "the store covers papers through" in r.getMessage()]
    assert notice.levelname == "INFO"


def test_the_digest_cost_prices_batch_answers_at_half(store, tmp_path) -> None:
    """The digest's cost line applies the Batch API price the judge applies (llm/cost.token_cost)."""
    from digest_world import settled_digest

    from monitor.report.period import resolve_period
    from monitor.store.records import LLMExchange

    sample(World(store))
    settings = settings_for(tmp_path)
    settings.llm.price_input_per_million, settings.llm.price_output_per_million = 2.0, 8.0
    week = resolve_period("2026-W11")
    before = settled_digest(store, settings, week).summary
    with store.session() as s:
        for form in ("json_schema", "batch"):
            s.add(
                LLMExchange(
                    provider="openai",
                    model="m",
                    prompt_version="v",
                    request={},
                    response_format=form,
                    prompt_tokens=1_000_000,
                    completion_tokens=1_000_000,
                    created_at=dt.datetime(2026, 3, 11),
                )
            )
    after = settled_digest(store, settings, week).summary
    assert after.tokens - before.tokens == 4_000_000
    assert after.cost_usd - before.cost_usd == pytest.approx(10.0 + 5.0)  # live 2 + 8, batch half of that
