"""What every source produces: `PaperRecord`s, one per paper version seen, in batches.

A source yields `Batch`es; the ingester stores each batch in its own transaction and only then moves
the source's high-water mark to the batch's `mark`, so a run that dies half-way keeps what it stored
and fetches the rest next time.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

from monitor.text import printable

# What a paper record may say, checked where a file gives it (a snapshot row) and for every id: arXiv's
# most revised papers have a few dozen versions (the column is a 32-bit integer: 2**40 was a DataError on
# PostgreSQL, 10**30 an OverflowError on SQLite), and its papers date from August 1991. A date outside
# these years is a broken record, and near 0001 or 9999 date arithmetic (a period's weeks) overflows.
MAX_VERSION = 1000
EARLIEST_DATE = dt.date(1991, 1, 1)
LATEST_DATE = dt.date(2100, 12, 31)

# New-style ids (2504.07912, optionally v3) and old-style ones (hep-th/9901001, math.GT/0309136v2).
_ID_RE = re.compile(r"^(?P<id>\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7})(?:v(?P<version>\d+))?$")


def arxiv_url(ref: str) -> str:
    """The abstract page; the id is quoted so an odd one cannot break a Markdown link or an attribute."""
    return "https://arxiv.org/abs/" + quote(str(ref), safe="/.")


def split_arxiv_id(raw: str) -> tuple[str, int | None]:
    """'https://arxiv.org/abs/2504.07912v2' -> ('2504.07912', 2); raises ValueError if not an id."""
    text = raw.strip()
    for prefix in ("oai:arXiv.org:", "arXiv:", "arxiv:"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if "/abs/" in text:
        text = text.split("/abs/", 1)[1]
    match = _ID_RE.match(text)
    if not match:
        raise ValueError(f"not an arXiv id: {raw!r}")
    version = match.group("version")
    if version and int(version) > MAX_VERSION:
        raise ValueError(f"version {version} of {match.group('id')} is out of range (1 to {MAX_VERSION})")
    return match.group("id"), int(version) if version else None


def check_paper_date(day: dt.date) -> dt.date:
    """`day`, or a ValueError when no arXiv paper can carry it (EARLIEST_DATE to LATEST_DATE)."""
    if not EARLIEST_DATE <= day <= LATEST_DATE:
        raise ValueError(f"{day.isoformat()} is out of range ({EARLIEST_DATE} to {LATEST_DATE})")
    return day


def is_arxiv_id(raw: str) -> bool:
    try:
        split_arxiv_id(raw)
    except ValueError:
        return False
    return True


@dataclass
class PaperRecord:
    """One version of one paper, as a source reported it."""

    arxiv_id: str  # without version suffix
    version: int  # 1 when the source does not say
    title: str
    abstract: str
    authors: list[str] = field(default_factory=list)
    categories: list[str] = field(default_factory=list)
    primary_category: str | None = None
    published: dt.date | None = None  # v1 date; None when the source cannot know it (RSS replace)
    updated: dt.datetime | None = None  # naive UTC
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None
    announce_type: str | None = None  # RSS: new | cross | replace | replace-cross

    def __post_init__(self) -> None:
        # Every source builds its records here, so this is the one place paper text is made safe to
        # store and print (monitor/text.py): no terminal escapes, no NUL, no lone surrogates.
        self.title = printable(self.title)
        self.abstract = printable(self.abstract)
        self.authors = [printable(a) for a in self.authors]
        self.categories = [printable(c) for c in self.categories]
        for name in ("primary_category", "comment", "journal_ref", "doi"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, printable(value))


@dataclass
class Batch:
    """Records to store together, and the high-water mark that storing them earns."""

    records: list[PaperRecord]
    query_key: str | None = None  # None: no mark to move (file sources, id look-ups)
    mark: dt.datetime | None = None


@dataclass
class SourceReport:
    """What a source noticed besides papers: warnings for the run record, notes for the summary."""

    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    truncated: bool = False


class Source:
    """A paper source: `batches()` yields what it found; `report` collects what it noticed."""

    name: str = "source"

    def __init__(self) -> None:
        self.report = SourceReport()

    def batches(self) -> Iterator[Batch]:
        raise NotImplementedError

    @property
    def requests(self) -> int:
        return 0

    @property
    def wait_seconds(self) -> float:
        return 0.0


def clean_text(text: str | None) -> str:
    """Collapse the line breaks and runs of spaces arXiv puts in titles and abstracts; control
    characters go first, so removing one leaves no double space."""
    return " ".join(printable(text or "").split())


def to_naive_utc(value: dt.datetime | None) -> dt.datetime | None:
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value
