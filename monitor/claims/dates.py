"""Claim dates as the library writes them, kept with their precision.

`(2025-05)`, `(~2025)`, `(~2024–2025)`, `(2025-06, 2025-10)`, `Sept 2024–May 2026`: each becomes a
`ParsedDate` with the text as written, the first and last day it can mean, its precision (the coarsest
of its parts) and whether it is approximate (`~`, `≈`, `c.`, `circa`, `early`/`mid`/`late`).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass

PRECISION_RANK = {"day": 0, "month": 1, "year": 2}

_MONTHS = {
    name: i for i in range(1, 13) for name in {calendar.month_name[i].lower(), calendar.month_abbr[i].lower()}
}
_MONTHS["sept"] = 9

_APPROX = re.compile(r"^(?:~|≈|c\.|ca\.|circa\b|approx\.?|early\b|mid-?|late\b)\s*", re.IGNORECASE)
_ISO = re.compile(r"^(?P<y>\d{4})(?:-(?P<m>\d{1,2})(?:-(?P<d>\d{1,2}))?)?$")
_NAMED = re.compile(r"^(?:(?P<d>\d{1,2})\s+)?(?P<mon>[A-Za-z]{3,9})\.?,?\s+(?P<y>\d{4})$")
_RANGE_DASH = re.compile(r"\s*[–—]\s*|\s+-\s+|(?<=\d{4})-(?=\d{4}\b)|(?<=[A-Za-z0-9])-(?=[A-Za-z]{3})")

EXAMPLES = "e.g. (2025-05), (~2025), (~2024–2025), (2025-06, 2025-10), (Sept 2024–May 2026)"


class DateError(ValueError):
    """A date text none of the accepted forms can read."""


@dataclass(frozen=True)
class ParsedDate:
    """A date as written and the span of days it can mean."""

    text: str
    start: dt.date
    end: dt.date
    precision: str  # day | month | year
    approximate: bool


@dataclass(frozen=True)
class _Span:
    start: dt.date
    end: dt.date
    precision: str


def _point(text: str) -> _Span | None:
    """One date: 2025, 2025-05, 2025-05-14, May 2025, 14 May 2025."""
    m = _ISO.match(text)
    if m:
        year, month, day = int(m["y"]), m["m"], m["d"]
    else:
        m = _NAMED.match(text)
        if not m or m["mon"].lower() not in _MONTHS:
            return None
        year, month, day = int(m["y"]), str(_MONTHS[m["mon"].lower()]), m["d"]
    try:
        if month is None:
            return _Span(dt.date(year, 1, 1), dt.date(year, 12, 31), "year")
        mon = int(month)
        if day is None:
            last = calendar.monthrange(year, mon)[1]
            return _Span(dt.date(year, mon, 1), dt.date(year, mon, last), "month")
        d = dt.date(year, mon, int(day))
        return _Span(d, d, "day")
    except ValueError:
        return None


def _strip_approx(text: str) -> tuple[str, bool]:
    text = text.strip()
    approximate = False
    while (m := _APPROX.match(text)) and m.end() > 0:
        text = text[m.end() :].strip()
        approximate = True
    return text, approximate


def _item(text: str) -> tuple[_Span, bool] | None:
    """One comma-separated item: a point or a range of two points, optionally approximate."""
    text, approximate = _strip_approx(text)
    span = _point(text)
    if span is not None:
        return span, approximate
    for sep in _RANGE_DASH.finditer(text):
        left, right = text[: sep.start()], text[sep.end() :]
        left, a1 = _strip_approx(left)
        right, a2 = _strip_approx(right)
        first, last = _point(left), _point(right)
        if first and last and first.start <= last.end:
            coarsest = max(first.precision, last.precision, key=PRECISION_RANK.__getitem__)
            return _Span(first.start, last.end, coarsest), approximate or a1 or a2
    return None


def parse_date(text: str) -> ParsedDate:
    """Read a date text; raises DateError naming the accepted forms when it cannot."""
    written = text.strip()
    body = written[1:-1].strip() if written.startswith("(") and written.endswith(")") else written
    if not body:
        raise DateError(f"empty date; expected {EXAMPLES}")
    spans: list[_Span] = []
    approximate = False
    for part in re.split(r"\s*[,;]\s*|\s+and\s+", body):
        read = _item(part)
        if read is None:
            raise DateError(f"unreadable date {written!r}; expected {EXAMPLES}")
        spans.append(read[0])
        approximate = approximate or read[1]
    precision = max((s.precision for s in spans), key=PRECISION_RANK.__getitem__)
    return ParsedDate(
        text=body,
        start=min(s.start for s in spans),
        end=max(s.end for s in spans),
        precision=precision,
        approximate=approximate,
    )
