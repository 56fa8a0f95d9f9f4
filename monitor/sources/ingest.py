"""Storing fetched papers: once per arXiv id, every version kept, high-water marks moved only over
what is stored. `fetch()` is the stage entry point the CLI and the scheduler call.

Each batch is one transaction: its papers, versions and the mark it earns commit together, so a run
killed half-way keeps every batch it finished and refetches only the rest. Existing rows are read in
chunks of ids and new ones inserted in bulk, so reloading a 22k-paper snapshot is a few dozen queries.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from monitor.config import Settings
from monitor.errors import InputError
from monitor.progress import progress_bar
from monitor.sources.base import Batch, PaperRecord, Source
from monitor.store.db import Store
from monitor.store.models import FetchMark, Paper, PaperVersion, utcnow
from monitor.store.runs import RunRecord
from monitor.testhooks import pause_at

log = logging.getLogger(__name__)

ID_CHUNK = 500  # ids per IN (...) query: well under every driver's parameter limit


@dataclass
class StoreCounts:
    """What storing some records did."""

    new: int = 0  # papers never seen before
    updated: int = 0  # known papers with a newer version (flagged for re-judging)
    unchanged: int = 0  # known papers, nothing newer
    versions: int = 0  # paper_versions rows added

    def add(self, other: StoreCounts) -> None:
        self.new += other.new
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.versions += other.versions


@dataclass
class FetchSummary:
    """The outcome of one fetch, for the CLI summary and the run record."""

    source: str
    requests: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    versions: int = 0
    wait_seconds: float = 0.0
    elapsed_seconds: float = 0.0
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["wait_seconds"] = round(self.wait_seconds, 2)
        data["elapsed_seconds"] = round(self.elapsed_seconds, 2)
        return data


# --- storing ------------------------------------------------------------------------------------


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _paper_row(rec: PaperRecord, source: str, now: dt.datetime) -> dict[str, Any]:
    return {
        "arxiv_id": rec.arxiv_id,
        "version": rec.version,
        "title": rec.title,
        "abstract": rec.abstract,
        "authors": rec.authors,
        "categories": rec.categories,
        "primary_category": rec.primary_category,
        "published": rec.published,
        "updated": rec.updated,
        "comment": rec.comment,
        "journal_ref": rec.journal_ref,
        "doi": rec.doi,
        "source": source,
        "first_seen": now,
        "needs_rejudge": False,
    }


def _version_row(rec: PaperRecord, source: str, now: dt.datetime) -> dict[str, Any]:
    return {
        "arxiv_id": rec.arxiv_id,
        "version": rec.version,
        "title": rec.title,
        "abstract": rec.abstract,
        "updated": rec.updated,
        "source": source,
        "seen_at": now,
    }


def _metadata_refresh(rec: PaperRecord, stored_updated: dt.datetime | None) -> dict[str, Any]:
    """Same version, newer `updated`: arXiv edited the metadata (journal ref, DOI, comment)."""
    if rec.updated is None or (stored_updated is not None and rec.updated <= stored_updated):
        return {}
    fields = {
        "updated": rec.updated,
        "comment": rec.comment,
        "journal_ref": rec.journal_ref,
        "doi": rec.doi,
        "categories": rec.categories,
        "primary_category": rec.primary_category,
    }
    return {k: v for k, v in fields.items() if v is not None and v != []}


def store_records(session: Session, records: Iterable[PaperRecord], source: str) -> StoreCounts:
    """Insert new papers and versions, update papers that got a newer version; in `session`."""
    by_id: dict[str, dict[int, PaperRecord]] = {}
    for rec in records:
        # The same version twice in one batch (a paper in two feeds): keep the later-updated one.
        seen = by_id.setdefault(rec.arxiv_id, {}).get(rec.version)
        if seen is None or (rec.updated or dt.datetime.min) > (seen.updated or dt.datetime.min):
            by_id[rec.arxiv_id][rec.version] = rec
    counts = StoreCounts()
    if not by_id:
        return counts
    now = utcnow()
    ids = list(by_id)
    known: dict[str, tuple[int, dt.date | None, dt.datetime | None]] = {}
    known_versions: set[tuple[str, int]] = set()
    for chunk in _chunks(ids, ID_CHUNK):
        for arxiv_id, version, published, updated in session.execute(
            select(Paper.arxiv_id, Paper.version, Paper.published, Paper.updated).where(
                Paper.arxiv_id.in_(chunk)
            )
        ):
            known[arxiv_id] = (version, published, updated)
        known_versions.update(
            (arxiv_id, version)
            for arxiv_id, version in session.execute(
                select(PaperVersion.arxiv_id, PaperVersion.version).where(PaperVersion.arxiv_id.in_(chunk))
            )
        )
    new_papers: list[dict[str, Any]] = []
    new_versions: list[dict[str, Any]] = []
    paper_updates: list[dict[str, Any]] = []
    for arxiv_id, versions in by_id.items():
        latest = versions[max(versions)]
        published = next((r.published for r in versions.values() if r.published), None)
        stored_version, stored_published, stored_updated = known.get(arxiv_id, (0, None, None))
        for version, rec in versions.items():
            # Versions older than the one we hold would only send the relevance stage back over
            # text that has been superseded; they are history we never had, not news.
            if version > stored_version and (arxiv_id, version) not in known_versions:
                new_versions.append(_version_row(rec, source, now))
        if arxiv_id not in known:
            row = _paper_row(latest, source, now)
            row["published"] = published
            new_papers.append(row)
            counts.new += 1
        elif latest.version > stored_version:
            row = _paper_row(latest, source, now)
            del row["first_seen"]
            row["published"] = stored_published or published
            row["needs_rejudge"] = True
            paper_updates.append(row)
            counts.updated += 1
        else:
            counts.unchanged += 1
            refresh = _metadata_refresh(latest, stored_updated) if latest.version == stored_version else {}
            if stored_published is None and published is not None:
                refresh["published"] = published
            if refresh:
                paper_updates.append({"arxiv_id": arxiv_id, **refresh})
    # Core inserts (not ORM bulk): one executemany per table, no per-row primary-key fetching.
    if new_papers:
        session.execute(insert(Paper.__table__), new_papers)
    if new_versions:
        session.execute(insert(PaperVersion.__table__), new_versions)
    for row in paper_updates:
        # One UPDATE per changed paper: these are few (new versions), and rows differ in columns.
        session.execute(update(Paper).where(Paper.arxiv_id == row["arxiv_id"]).values(**row))
    counts.versions = len(new_versions)
    return counts


def advance_mark(session: Session, source: str, query_key: str, mark: dt.datetime) -> None:
    """Move a high-water mark forward (never back) to `mark`."""
    row = session.get(FetchMark, (source, query_key))
    if row is None:
        session.add(FetchMark(source=source, query_key=query_key, high_water=mark, updated_at=utcnow()))
    elif mark > row.high_water:
        row.high_water = mark
        row.updated_at = utcnow()


def get_mark(store: Store, source: str, query_key: str) -> dt.datetime | None:
    with store.session() as s:
        row = s.get(FetchMark, (source, query_key))
        return row.high_water if row else None


def store_batch(store: Store, batch: Batch, source: str) -> StoreCounts:
    """One transaction: the batch's papers and versions, then its mark."""
    with store.session() as s:
        counts = store_records(s, batch.records, source)
        if batch.query_key is not None and batch.mark is not None:
            advance_mark(s, source, batch.query_key, batch.mark)
    return counts


# --- the stage entry point ----------------------------------------------------------------------


def make_source(
    store: Store,
    settings: Settings,
    source: str,
    since: dt.date | None,
    until: dt.date | None,
    categories: list[str] | None,
) -> Source:
    """The Source object for a `--source` value: api, rss, sample, or a file path."""
    cats = categories or list(settings.arxiv.categories)
    if source == "api":
        from monitor.sources.api import ApiSource

        return ApiSource(store, settings, cats, since=since, until=until)
    if source == "rss":
        from monitor.sources.rss import RssSource

        return RssSource(store, settings, cats)
    if source == "sample":
        from monitor.sources.files import FileSource
        from monitor.sources.sample import sample_path

        return FileSource(
            sample_path(settings), since=since, until=until, name="sample", categories=categories
        )
    path = Path(source)
    if not path.exists():
        raise InputError(source, None, "no such file (use --source api, rss, sample or a snapshot path)")
    from monitor.sources.files import FileSource

    return FileSource(path, since=since, until=until, name="file", categories=categories)


def fetch(
    store: Store,
    settings: Settings,
    source: str = "api",
    since: dt.date | None = None,
    until: dt.date | None = None,
    categories: list[str] | None = None,
    run: RunRecord | None = None,
    progress: bool = False,
) -> FetchSummary:
    """Fetch from one source and store what is new; see the module docstring for the guarantees."""
    started = time.monotonic()
    src = make_source(store, settings, source, since, until, categories)
    summary = FetchSummary(source=src.name)
    with progress_bar(f"fetch {src.name}", None, "papers", progress) as advance:
        try:
            for batch in src.batches():
                counts = store_batch(store, batch, src.name)
                pause_at("fetch:after_first_batch")  # test-only crash point; a no-op otherwise
                summary.new += counts.new
                summary.updated += counts.updated
                summary.unchanged += counts.unchanged
                summary.versions += counts.versions
                advance(len(batch.records), description=f"fetch {src.name}: {summary.new} new")
        finally:
            summary.requests = src.requests
            summary.wait_seconds = src.wait_seconds
            summary.truncated = src.report.truncated
            summary.warnings = list(src.report.warnings)
            summary.notes = list(src.report.notes)
            summary.elapsed_seconds = time.monotonic() - started
            if run is not None:
                run.add("fetch", summary.as_dict())
                run.warnings.extend(w for w in summary.warnings if w not in run.warnings)
    return summary

