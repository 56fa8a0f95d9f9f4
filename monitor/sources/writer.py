"""Storing fetched papers: once per arXiv id, every version kept, high-water marks moved only over
what is stored.

Each batch is one transaction: its papers, versions and the mark it earns commit together, so a run
killed half-way keeps every batch it finished and refetches only the rest.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from monitor.sources.base import Batch, PaperRecord
from monitor.store.db import Store
from monitor.store.marks import advance_mark
from monitor.store.models import utcnow
from monitor.store.papers import StoredPaper, add_papers, stored_papers
from monitor.testhooks import pause_at


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
class _Changes:
    """The rows one call of `store_records` writes."""

    papers: list[dict[str, Any]] = field(default_factory=list)
    versions: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)


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


def _by_id(records: Iterable[PaperRecord]) -> dict[str, dict[int, PaperRecord]]:
    """arxiv_id -> version -> record."""
    by_id: dict[str, dict[int, PaperRecord]] = {}
    for rec in records:
        # The same version twice in one batch (a paper in two feeds): keep the later-updated one.
        seen = by_id.setdefault(rec.arxiv_id, {}).get(rec.version)
        if seen is None or (rec.updated or dt.datetime.min) > (seen.updated or dt.datetime.min):
            by_id[rec.arxiv_id][rec.version] = rec
    return by_id


def _plan_paper(
    versions: dict[int, PaperRecord],
    stored: StoredPaper | None,
    changes: _Changes,
    source: str,
    now: dt.datetime,
) -> str:
    """Add one paper's rows to `changes`; returns which StoreCounts field it counts under."""
    latest = versions[max(versions)]
    published = next((r.published for r in versions.values() if r.published), None)
    if stored is None:
        row = _paper_row(latest, source, now)
        row["published"] = published
        changes.papers.append(row)
        return "new"
    if latest.version > stored.version:
        row = _paper_row(latest, source, now)
        del row["first_seen"]
        row["published"] = stored.published or published
        row["needs_rejudge"] = True
        changes.updates.append(row)
        return "updated"
    refresh = _metadata_refresh(latest, stored.updated) if latest.version == stored.version else {}
    if stored.published is None and published is not None:
        refresh["published"] = published
    if refresh:
        changes.updates.append({"arxiv_id": latest.arxiv_id, **refresh})
    return "unchanged"


def store_records(session: Session, records: Iterable[PaperRecord], source: str) -> StoreCounts:
    """Insert new papers and versions, update papers that got a newer version; in `session`."""
    by_id = _by_id(records)
    counts = StoreCounts()
    if not by_id:
        return counts
    now = utcnow()
    known, known_versions = stored_papers(session, list(by_id))
    changes = _Changes()
    for arxiv_id, versions in by_id.items():
        stored = known.get(arxiv_id)
        stored_version = stored.version if stored else 0
        # Versions older than the one we hold would only send the relevance stage back over
        # text that has been superseded; they are history we never had, not news.
        changes.versions.extend(
            _version_row(rec, source, now)
            for version, rec in versions.items()
            if version > stored_version and (arxiv_id, version) not in known_versions
        )
        kind = _plan_paper(versions, stored, changes, source, now)
        counts.add(StoreCounts(**{kind: 1}))
    # test-only: a concurrency test stops here, between reading what is stored and writing, while
    # another fetch stores the same papers (a no-op otherwise)
    pause_at("fetch:before_insert")
    add_papers(session, changes.papers, changes.versions, changes.updates)
    counts.versions = len(changes.versions)
    return counts


def store_batch(store: Store, batch: Batch, source: str) -> StoreCounts:
    """One transaction: the batch's papers and versions, then its mark."""
    with store.session() as s:
        counts = store_records(s, batch.records, source)
        if batch.query_key is not None and batch.mark is not None:
            advance_mark(s, source, batch.query_key, batch.mark)
    return counts
