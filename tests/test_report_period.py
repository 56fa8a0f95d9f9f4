"""Digest periods: ISO weeks (year boundaries included), months, custom ranges, file names."""

from __future__ import annotations

import datetime as dt

import pytest

from monitor.report.period import PeriodError, resolve_period


def test_default_is_the_last_complete_iso_week() -> None:
    p = resolve_period("week", today=dt.date(2026, 3, 18))  # a Wednesday in W12
    assert (p.key, p.start, p.end, p.stem) == (
        "2026-W11",
        dt.date(2026, 3, 9),
        dt.date(2026, 3, 15),
        "digest-2026-W11",
    )
    # On a Monday, the week that just ended.
    assert resolve_period("week", today=dt.date(2026, 3, 16)).key == "2026-W11"


def test_iso_week_across_the_year_boundary() -> None:
    p = resolve_period("week", today=dt.date(2026, 1, 5))  # Monday of 2026-W02
    assert p.key == "2026-W01" and p.start == dt.date(2025, 12, 29)
    p = resolve_period("2020-W53")
    assert (p.start, p.end) == (dt.date(2020, 12, 28), dt.date(2021, 1, 3))


def test_month_and_custom() -> None:
    p = resolve_period("month", today=dt.date(2026, 3, 1))
    assert (p.key, p.start, p.end, p.stem) == (
        "2026-02",
        dt.date(2026, 2, 1),
        dt.date(2026, 2, 28),
        "digest-2026-02",
    )
    c = resolve_period(None, since=dt.date(2026, 3, 1), until=dt.date(2026, 3, 15))
    assert (c.key, c.stem) == ("2026-03-01..2026-03-15", "digest-2026-03-01_2026-03-15")
    assert c.contains(dt.date(2026, 3, 15)) and not c.contains(dt.date(2026, 3, 16))
    open_ended = resolve_period(None, since=dt.date(2026, 3, 1), today=dt.date(2026, 3, 10))
    assert open_ended.end == dt.date(2026, 3, 9)


@pytest.mark.parametrize("spec", ["fortnight", "2026-W54", "2026-13"])
def test_bad_periods_are_user_errors(spec: str) -> None:
    with pytest.raises(PeriodError):
        resolve_period(spec)


def test_until_before_since_is_an_error() -> None:
    with pytest.raises(PeriodError, match="before"):
        resolve_period(None, since=dt.date(2026, 3, 2), until=dt.date(2026, 3, 1))
