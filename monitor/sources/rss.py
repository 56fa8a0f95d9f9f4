"""The RSS source: rss.arxiv.org's daily announcement feed, read with feedparser.

`{rss_url}/atom/cs.CL+cs.LG+cs.AI` lists one announcement day: `new` and `cross` entries are new
papers, `replace` and `replace-cross` are new versions of older ones. The bytes are fetched with the
polite client and handed to feedparser. A feed cut off mid-download keeps its complete entries only
(everything up to the last `</entry>`) and says so. An empty feed on a weekend is a no-op; on a
weekday it is a warning in the run record (arXiv holidays look the same, so the warning says so).

The Atom parsing helpers here also read Atom files for the file source.
"""

from __future__ import annotations

import calendar
import datetime as dt
import logging
import re
from collections.abc import Iterator
from typing import Any

import feedparser

from monitor.config import Settings
from monitor.errors import SourceError
from monitor.sources.base import Batch, PaperRecord, Source, clean_text, split_arxiv_id
from monitor.sources.client import PoliteSession, reject_html
from monitor.store.db import Store
from monitor.store.marks import get_mark

log = logging.getLogger(__name__)

ANNOUNCE_TYPES = ("new", "cross", "replace", "replace-cross")
_RSS_SUMMARY = re.compile(r"^\s*arXiv:\S+\s+Announce Type:\s*(?P<type>[\w-]+)\s*Abstract:\s*", re.S)
_ENTRY_END = b"</entry>"
_ITEM_END = b"</item>"


class FeedRead:
    """A parsed feed plus whether it had to be cut back to its complete entries."""

    def __init__(self, parsed: Any, truncated: bool, problem: str | None) -> None:
        self.parsed = parsed
        self.truncated = truncated
        self.problem = problem

    @property
    def entries(self) -> list[Any]:
        return list(self.parsed.entries)


def read_feed(content: bytes) -> FeedRead:
    """Parse feed bytes; if they are not well-formed, keep only the entries that were complete.

    feedparser alone would also return the half-received last entry (bozo=1), with a cut abstract; we
    cut the bytes after the last closing tag, close the document and parse again.
    """
    parsed = feedparser.parse(content)
    if not parsed.bozo:
        return FeedRead(parsed, truncated=False, problem=None)
    problem = str(parsed.get("bozo_exception", "not well-formed"))
    is_atom = b"<feed" in content[:2000]
    end_tag, closing = (_ENTRY_END, b"\n</feed>\n") if is_atom else (_ITEM_END, b"\n</channel>\n</rss>\n")
    cut = content.rfind(end_tag)
    if cut < 0:
        # Not even one whole entry (an HTML error page, a cut-off header): not a feed at all.
        return FeedRead(parsed, truncated=False, problem=problem)
    repaired = feedparser.parse(content[: cut + len(end_tag)] + closing)
    return FeedRead(repaired, truncated=True, problem=problem)


def _stamp(item: Any, *keys: str) -> dt.datetime | None:
    """The first of `keys` the item has, as naive UTC. Plain dict access: feedparser's own `get`
    silently (and deprecatedly) maps updated_parsed to published_parsed."""
    for key in keys:
        value = dict.get(item, key)
        if value:
            return _utc(value)
    return None


def _utc(value: Any) -> dt.datetime | None:
    # feedparser's *_parsed are UTC struct_times.
    return dt.datetime.fromtimestamp(calendar.timegm(value), dt.UTC).replace(tzinfo=None) if value else None


def entry_to_record(entry: Any) -> PaperRecord | None:
    """One Atom entry (arXiv API or RSS flavour) as a PaperRecord; None for error/foreign entries."""
    raw_id = entry.get("id", "")
    try:
        arxiv_id, version = split_arxiv_id(raw_id)
    except ValueError:
        return None
    summary = entry.get("summary", "") or ""
    announce_type = entry.get("arxiv_announce_type")
    match = _RSS_SUMMARY.match(summary)
    if match:
        announce_type = announce_type or match.group("type")
        summary = summary[match.end() :]
    is_rss = announce_type is not None
    if is_rss:
        # RSS: one comma-separated creator string; <published> is the announcement, not v1.
        authors = [a.strip() for a in (entry.get("author") or "").split(",") if a.strip()]
        published = None
        if announce_type in ("new", "cross") and (version or 1) == 1:
            stamp = _stamp(entry, "published_parsed")
            published = stamp.date() if stamp else None
    else:
        authors = [a.get("name", "").strip() for a in entry.get("authors", []) if a.get("name")]
        stamp = _stamp(entry, "published_parsed")
        published = stamp.date() if stamp else None
    categories = [t["term"] for t in entry.get("tags", []) if t.get("term")]
    primary = entry.get("arxiv_primary_category", {}).get("term") if not is_rss else None
    return PaperRecord(
        arxiv_id=arxiv_id,
        version=version or 1,
        title=clean_text(entry.get("title")),
        abstract=clean_text(summary),
        authors=authors,
        categories=categories,
        primary_category=primary or None,  # RSS does not say which category is primary
        published=published,
        updated=_stamp(entry, "updated_parsed", "published_parsed"),
        comment=entry.get("arxiv_comment"),
        journal_ref=entry.get("arxiv_journal_ref"),
        doi=entry.get("arxiv_doi"),
        announce_type=announce_type,
    )


def feed_url(settings: Settings, categories: list[str], flavour: str = "atom") -> str:
    return f"{settings.arxiv.rss_url.rstrip('/')}/{flavour}/{'+'.join(categories)}"


def is_announcement_day(day: dt.date) -> bool:
    """arXiv announces Sunday to Thursday evenings (US Eastern), so feeds are dated Monday to Friday."""
    return day.weekday() < 5


class RssSource(Source):
    """Today's announcements for a set of categories, from one feed request."""

    name = "rss"

    def __init__(
        self,
        store: Store,
        settings: Settings,
        categories: list[str],
        session: PoliteSession | None = None,
        today: dt.date | None = None,
    ) -> None:
        super().__init__()
        self.store = store
        self.settings = settings
        self.categories = sorted(categories)
        self.session = session or PoliteSession.from_settings(settings.arxiv, validate=reject_html)
        self.today = today
        self.query_key = "+".join(self.categories)

    @property
    def requests(self) -> int:
        return self.session.stats.requests

    @property
    def wait_seconds(self) -> float:
        return self.session.stats.wait_seconds

    def batches(self) -> Iterator[Batch]:
        url = feed_url(self.settings, self.categories, self.settings.arxiv.rss_flavour)
        response = self.session.get(url)
        feed = read_feed(response.content)
        if feed.truncated:
            self.report.truncated = True
            self.report.warnings.append(
                f"{url}: feed was truncated ({feed.problem}); kept its {len(feed.entries)} complete entries"
            )
        if not feed.truncated and feed.parsed.bozo:
            raise SourceError(f"{url}: not a feed: {feed.problem}")
        if not feed.parsed.version:
            # Well-formed, but neither Atom nor RSS (feedparser names no version): no announcements
            # can be read from it, and "empty feed" would be the wrong thing to say.
            raise SourceError(f"{url}: not an arXiv answer: the document is neither an Atom nor an RSS feed")
        feed_time = _stamp(feed.parsed.feed, "updated_parsed", "published_parsed")
        records = []
        for entry in feed.entries:
            record = entry_to_record(entry)
            if record is not None and (record.announce_type or "new") in ANNOUNCE_TYPES:
                records.append(record)
        day = feed_time.date() if feed_time else (self.today or dt.datetime.now(dt.UTC).date())
        if not records:
            if is_announcement_day(self.today or day):
                self.report.warnings.append(
                    f"{url}: empty feed on an announcement weekday ({day}); arXiv holiday or outage?"
                )
            else:
                self.report.notes.append(f"{url}: empty feed on {day} (no announcements at weekends)")
            return
        mark = get_mark(self.store, self.name, self.query_key)
        if mark is not None and feed_time is not None and feed_time <= mark:
            self.report.notes.append(f"{url}: announcement of {day} already fetched")
        counts: dict[str, int] = {}
        for rec in records:
            counts[rec.announce_type or "new"] = counts.get(rec.announce_type or "new", 0) + 1
        self.report.notes.append(
            f"{url}: {len(records)} entries ("
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
            + ")"
        )
        # A truncated feed stores its complete entries but does not move the mark: the rest of the
        # day is unstored, and the next fetch (or `--source api` for that day) picks it up.
        yield Batch(records=records, query_key=self.query_key, mark=None if feed.truncated else feed_time)
