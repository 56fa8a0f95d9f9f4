"""Digest periods: an ISO week, a calendar month, or a custom inclusive date range.

Each period has a key (the `digests.period_key`) and a file stem:
week `2026-W12` -> `digest-2026-W12`, month `2026-03` -> `digest-2026-03`,
custom `2026-03-01..2026-03-15` -> `digest-2026-03-01_2026-03-15`.

A period is *fully covered* by the store when the store holds every paper of its last day
(`Coverage`): with fetch marks (the arXiv API and RSS sources set them), every day before the
newest mark's day (the mark is the submission time a query has been read to; its own day may still
grow); with file sources only (snapshots, the shipped sample: they set no mark), every day through
the Sunday that ends the ISO week of the newest paper (a snapshot is read as whole weeks: it cannot
say whether its last day was cut short). The default period (`default_period`) is the last complete
one a store covers; an explicit one the store covers only in part is reported with a notice
(`partial_notice`).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from typing import Literal

from monitor.errors import MonitorError

PeriodKind = Literal["week", "month", "custom"]
_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class PeriodError(MonitorError):
    """A period the user asked for does not parse or is empty."""

    exit_code = 3


@dataclass(frozen=True)
class Period:
    """An inclusive range of days a digest covers."""

    kind: PeriodKind
    start: dt.date
    end: dt.date

    @property
    def key(self) -> str:
        if self.kind == "week":
            year, week, _ = self.start.isocalendar()
            return f"{year}-W{week:02d}"
        if self.kind == "month":
            return f"{self.start:%Y-%m}"
        return f"{self.start.isoformat()}..{self.end.isoformat()}"

    @property
    def stem(self) -> str:
        return "digest-" + self.key.replace("..", "_")

    @property
    def label(self) -> str:
        """How the digest names its period to a reader."""
        if self.kind == "week":
            return f"week {self.key} ({self.start:%d %b} – {self.end:%d %b %Y})"
        if self.kind == "month":
            return f"{self.start:%B %Y}"
        return f"{self.start.isoformat()} – {self.end.isoformat()}"

    def contains(self, day: dt.date | None) -> bool:
        return day is not None and self.start <= day <= self.end

    @property
    def verdict_days(self) -> tuple[dt.date, dt.date]:
        """The dates a digest shows verdicts at: its last day, and the day before it began (what changed)."""
        return self.end, self.start - dt.timedelta(days=1)


def day_range(period: Period) -> tuple[dt.datetime, dt.datetime]:
    """The period as [start, stop) datetimes: midnight of its first day to midnight after its last."""
    start = dt.datetime.combine(period.start, dt.time())
    return start, start + dt.timedelta(days=(period.end - period.start).days + 1)


def iso_week(year: int, week: int) -> Period:
    try:
        start = dt.date.fromisocalendar(year, week, 1)
    except ValueError:
        raise PeriodError(f"no ISO week {year}-W{week:02d}") from None
    return Period("week", start, start + dt.timedelta(days=6))


def month(year: int, number: int) -> Period:
    if not 1 <= number <= 12:
        raise PeriodError(f"no month {year}-{number:02d}")
    last = calendar.monthrange(year, number)[1]
    return Period("month", dt.date(year, number, 1), dt.date(year, number, last))


def last_complete_week(today: dt.date) -> Period:
    """The ISO week (Monday–Sunday) before the one `today` is in."""
    year, week, _ = (today - dt.timedelta(days=7)).isocalendar()
    return iso_week(year, week)


def last_complete_month(today: dt.date) -> Period:
    first = today.replace(day=1) - dt.timedelta(days=1)
    return month(first.year, first.month)


def custom(since: dt.date, until: dt.date) -> Period:
    if until < since:
        raise PeriodError(f"--until {until} is before --since {since}")
    return Period("custom", since, until)


@dataclass(frozen=True)
class Coverage:
    """The last day the store holds whole (None: no papers), and what says so."""

    through: dt.date | None
    basis: str  # "fetch marks" | "newest paper"

    def covers(self, period: Period) -> bool:
        return self.through is not None and period.end <= self.through


def coverage(newest_mark: dt.datetime | None, newest_paper: dt.date | None) -> Coverage:
    """How far a store with this newest fetch mark and newest paper covers arXiv (module docstring)."""
    if newest_mark is not None:
        return Coverage(newest_mark.date() - dt.timedelta(days=1), "fetch marks")
    if newest_paper is not None:
        return Coverage(newest_paper + dt.timedelta(days=6 - newest_paper.weekday()), "newest paper")
    return Coverage(None, "newest paper")


# A store covering less than this before the default period's start is a snapshot or a replayed
# history (e.g. `monitor fetch --source sample`), not a live feed a day or two behind.
STALE_STORE_DAYS = 14


def default_period(spec: str, today: dt.date, covered: Coverage | None = None) -> Period:
    """The period a default digest (`spec` week or month) reports: the last complete one before
    `today`; for a store that stopped well before it (`STALE_STORE_DAYS`), the last complete one the
    store fully covers. A live store a few days behind keeps the last complete period, which
    `partial_notice` then calls partial."""
    last = resolve_period(spec, None, None, today)
    if covered is None or covered.through is None or covered.covers(last):
        return last
    if covered.through >= last.start - dt.timedelta(days=STALE_STORE_DAYS):
        return last
    return resolve_period(spec, None, None, covered.through + dt.timedelta(days=1))


def partial_notice(period: Period, covered: Coverage) -> str | None:
    """One line saying that the store holds only part of `period`'s papers; None when it holds all."""
    if covered.covers(period):
        return None
    if covered.through is None:
        return f"{period.key}: the store holds no papers yet, so this digest reports none"
    how = "its fetch marks" if covered.basis == "fetch marks" else "its newest paper's week"
    if covered.through < period.start:
        held = f"none of it: the store holds papers through {covered.through} ({how})"
    else:
        held = f"{period.start} to {covered.through} of it ({how}), not to {period.end}"
    return f"{period.key} is partial: the store covers {held}"


def resolve_period(
    spec: str | None = "week",
    since: dt.date | None = None,
    until: dt.date | None = None,
    today: dt.date | None = None,
) -> Period:
    """The period a command means.

    `--since/--until` give a custom range (a missing `--until` is yesterday); otherwise `spec` is
    `week` (last complete ISO week), `month` (last complete month), or an explicit `2026-W12` / `2026-03`.
    """
    today = today or dt.datetime.now(dt.UTC).date()
    if since is not None or until is not None:
        if since is None:
            raise PeriodError("--until needs --since")
        return custom(since, until or today - dt.timedelta(days=1))
    spec = (spec or "week").strip()
    if spec == "week":
        return last_complete_week(today)
    if spec == "month":
        return last_complete_month(today)
    if m := _WEEK.match(spec):
        return iso_week(int(m.group(1)), int(m.group(2)))
    if m := _MONTH.match(spec):
        return month(int(m.group(1)), int(m.group(2)))
    raise PeriodError(f"period {spec!r}: expected week, month, YYYY-Www or YYYY-MM")
