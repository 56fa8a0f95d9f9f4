"""What a digest says about the store's papers: which period a default digest reports (the last one the
store fully covers), a notice for a period it covers only in part, and the papers first seen for a
period (report/period.py, report/digest.py, store/papers.py `count_first_seen`).
"""

from __future__ import annotations

import datetime as dt

import pytest
from digest_world import World
from ops_helpers import cli, env

from monitor.report.period import Coverage, coverage, default_period, partial_notice, resolve_period
from monitor.store import open_store
from monitor.store.models import FetchMark
from monitor.store.papers import count_first_seen

FRIDAY = dt.date(2026, 8, 21)  # the shipped sample's newest paper, in ISO week 2026-W34 (17-23 August)


def test_a_store_covers_the_days_before_its_newest_fetch_mark_or_its_newest_papers_week() -> None:
    marked = coverage(dt.datetime(2026, 8, 22, 10, 30), FRIDAY)
    assert (marked.through, marked.basis) == (dt.date(2026, 8, 21), "fetch marks")  # the 22nd may still grow
    files = coverage(None, FRIDAY)  # snapshots and the sample set no mark
    assert (files.through, files.basis) == (dt.date(2026, 8, 23), "newest paper")
    assert coverage(None, dt.date(2026, 8, 23)).through == dt.date(
        2026, 8, 23
    )  # a Sunday is its own week's end
    assert coverage(None, None).through is None


def test_the_default_period_is_the_last_complete_one_the_store_fully_covers() -> None:
    sample = coverage(None, FRIDAY)
    today = dt.date(2026, 11, 28)  # months after the snapshot
    assert default_period("week", today, sample).key == "2026-W34"  # its last week, whole
    assert default_period("month", today, sample).key == "2026-07"  # August holds only the 1st-23rd
    # A live store a day behind keeps the last complete week, which the notice then calls partial.
    behind = coverage(dt.datetime(2026, 8, 23, 6), None)  # covers through Saturday 22 August
    week = default_period("week", dt.date(2026, 8, 24), behind)
    assert week.key == "2026-W34"
    assert partial_notice(week, behind) == (
        "2026-W34 is partial: the store covers 2026-08-17 to 2026-08-22 of it (its fetch marks), "
        "not to 2026-08-23"
    )
    assert partial_notice(resolve_period("2026-W34"), sample) is None
    assert "none of it" in str(partial_notice(resolve_period("2026-09"), sample))
    assert "holds no papers" in str(partial_notice(resolve_period("2026-09"), Coverage(None, "newest paper")))


@pytest.fixture
def august(sqlite_url: str) -> str:
    """A store filled from files: papers through Friday 21 August 2026, and one claim."""
    store = open_store(sqlite_url)
    try:
        w = World(store)
        w.line("l1", "Does RLVR expand the reasoning boundary?")
        w.claim("c1", "RLVR narrows pass@k at large k", ("l1",), date_text="2025-04")
        for day in (dt.date(2026, 7, 14), dt.date(2026, 8, 3), dt.date(2026, 8, 18), FRIDAY):
            w.paper(f"2608.{day.month:02d}{day.day:03d}", f"A paper of {day}", day)
    finally:
        store.close()
    return sqlite_url


def _report(url: str, *args: str) -> tuple[str, str]:
    done = cli("--db", url, "report", *args, "--json", environ=env(COLUMNS="80"))
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_report_month_picks_the_last_month_the_store_covers_and_says_when_one_is_partial(august: str) -> None:
    """Before, `--period month` reported August, which the store holds only to the 21st, while its
    help said "last complete one"."""
    out, err = _report(august, "--period", "month")
    assert '"period": "2026-07"' in out and "partial" not in err
    out, err = _report(august, "--period", "2026-08")  # asked by name: reported, with one line saying so
    assert '"period": "2026-08"' in out
    notices = [line for line in err.splitlines() if "partial" in line]
    assert notices == [
        "warning: 2026-08 is partial: the store covers 2026-08-01 to 2026-08-23 of it (its newest "
        "paper's week), not to 2026-08-31"
    ]
    out, err = _report(august, "--period", "week")
    assert '"period": "2026-W34"' in out and "partial" not in err


def test_a_fetch_mark_tells_how_far_the_store_covers(august: str) -> None:
    store = open_store(august)
    try:
        with store.session() as s:
            s.add(FetchMark(source="api", query_key="cs.AI", high_water=dt.datetime(2026, 8, 20, 12)))
    finally:
        store.close()
    _, err = _report(august, "--period", "2026-W34")
    assert "2026-W34 is partial: the store covers 2026-08-17 to 2026-08-19 of it (its fetch marks)" in err


def test_papers_first_seen_for_a_period_count_those_stored_later_that_were_published_in_it(
    db_url: str,
) -> None:
    """The quickstart stores August's papers in November: before, its digest said "0 first seen"."""
    store = open_store(db_url)
    now = dt.datetime(2026, 11, 28, 14)
    try:
        w = World(store)
        w.paper("2608.00001", "In the week, stored months later", dt.date(2026, 8, 18), first_seen=now)
        w.paper("2608.00002", "In the week, stored months later", FRIDAY, first_seen=now)
        w.paper("2608.00003", "Stored during the week (live)", dt.date(2026, 8, 14),
                first_seen=dt.datetime(2026, 8, 18, 6))  # fmt: skip
        w.paper("2607.00004", "Earlier, stored months later", dt.date(2026, 7, 1), first_seen=now)
        w.paper("2608.00005", "In the week, stored before it began", dt.date(2026, 8, 17),
                first_seen=dt.datetime(2026, 8, 16, 23))  # fmt: skip
        start, stop = dt.datetime(2026, 8, 17), dt.datetime(2026, 8, 24)
        with store.session() as s:
            assert count_first_seen(s, start, stop) == 3  # 2608.00001, .00002 and .00003
    finally:
        store.close()
