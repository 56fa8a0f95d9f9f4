"""Stored papers and their versions: which are known already, adding and updating them, their
abstracts, the versions a relevance scan reads, and how many were published or first seen in a period.

Known rows are read in chunks of ids and new ones inserted in bulk, so reloading a 22k-paper snapshot
is a few dozen queries.

Two fetches may run at once (`monitor fetch` beside `monitor run`, or two of them): both read "not
stored yet" for the same paper and both insert it. So inserts are upserts (`INSERT ... ON CONFLICT`,
the same statement on SQLite and PostgreSQL): whoever comes second keeps the newer version of the two
and adds no duplicate, instead of dying on the unique key.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import Table, func, select, update
from sqlalchemy.orm import Session

from monitor.store.chunks import in_chunks
from monitor.store.models import Paper, PaperVersion

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql, sqlite


class StoredPaper(NamedTuple):
    """What a writer needs to know of a paper already stored."""

    version: int
    published: dt.date | None
    updated: dt.datetime | None


def stored_papers(session: Session, ids: list[str]) -> tuple[dict[str, StoredPaper], set[tuple[str, int]]]:
    """Of `ids`, the papers stored already and every (arxiv_id, version) stored for them."""
    known: dict[str, StoredPaper] = {}
    versions: set[tuple[str, int]] = set()
    for chunk in in_chunks(ids):
        for arxiv_id, version, published, updated in session.execute(
            select(Paper.arxiv_id, Paper.version, Paper.published, Paper.updated).where(
                Paper.arxiv_id.in_(chunk)
            )
        ):
            known[arxiv_id] = StoredPaper(version, published, updated)
        versions.update(
            (arxiv_id, version)
            for arxiv_id, version in session.execute(
                select(PaperVersion.arxiv_id, PaperVersion.version).where(PaperVersion.arxiv_id.in_(chunk))
            )
        )
    return known, versions


def add_papers(
    session: Session,
    papers: list[dict[str, Any]],
    versions: list[dict[str, Any]],
    updates: list[dict[str, Any]],
) -> None:
    """Insert new paper and version rows (column dicts) and apply `updates` (each keyed by arxiv_id).

    A paper or version another process stored meanwhile is not an error (see the module docstring).
    """
    # Core inserts (not ORM bulk): one executemany per table, no per-row primary-key fetching.
    if papers:
        session.execute(_paper_upsert(session), papers)
    if versions:
        stmt = _insert(session, PaperVersion.__table__)
        session.execute(stmt.on_conflict_do_nothing(index_elements=["arxiv_id", "version"]), versions)
    for row in updates:
        # One UPDATE per changed paper: these are few (new versions), and rows differ in columns.
        session.execute(update(Paper).where(Paper.arxiv_id == row["arxiv_id"]).values(**row))


def _insert(session: Session, table: Table) -> postgresql.Insert | sqlite.Insert:
    """An INSERT that can say ON CONFLICT, in the session's dialect (the two have the same API)."""
    # Imported here: the PostgreSQL dialect costs every read-only command ~30 ms at start.
    from sqlalchemy.dialects import postgresql, sqlite

    dialect = session.get_bind().dialect.name
    return postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table)


def _paper_upsert(session: Session) -> postgresql.Insert | sqlite.Insert:
    """Insert papers; where another process stored one meanwhile, take ours only if it is newer.

    The newer row replaces the paper as a new version does in the writer (v1 date and first_seen
    kept, flagged for re-judging); an equal or older one leaves the stored row as it is.
    """
    stmt = _insert(session, Paper.__table__)
    table = Paper.__table__
    kept = {"arxiv_id", "first_seen", "published", "needs_rejudge"}
    newer = {c.name: stmt.excluded[c.name] for c in table.columns if c.name not in kept}
    newer["published"] = func.coalesce(table.c.published, stmt.excluded.published)
    newer["needs_rejudge"] = True
    return stmt.on_conflict_do_update(
        index_elements=["arxiv_id"], set_=newer, where=table.c.version < stmt.excluded.version
    )


def abstracts_of(session: Session, keys: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """Each (paper, version)'s abstract: the version's own, else the paper's."""
    ids = sorted({arxiv_id for arxiv_id, _ in keys})
    if not ids:
        return {}
    versions = select(PaperVersion.arxiv_id, PaperVersion.version, PaperVersion.abstract)
    by_version = {(a, v): t for a, v, t in session.execute(versions.where(PaperVersion.arxiv_id.in_(ids)))}
    papers = select(Paper.arxiv_id, Paper.abstract).where(Paper.arxiv_id.in_(ids))
    by_paper = {a: t for a, t in session.execute(papers)}
    return {key: by_version.get(key) or by_paper.get(key[0], "") for key in keys}


def version_texts(
    session: Session, keys: list[tuple[str, int]], chunk: int = 500
) -> dict[tuple[str, int], tuple[str, str, dt.date | None]]:
    """Each (paper, version)'s (title, abstract, publication day): the version's own text, else the
    paper's; read `chunk` papers a query (a week's screen asks for thousands)."""
    out: dict[tuple[str, int], tuple[str, str, dt.date | None]] = {}
    ids = sorted({arxiv_id for arxiv_id, _ in keys})
    wanted = set(keys)
    for start in range(0, len(ids), chunk):
        part = ids[start : start + chunk]
        papers = select(Paper.arxiv_id, Paper.title, Paper.abstract, Paper.published)
        by_paper = {a: (t, b, d) for a, t, b, d in session.execute(papers.where(Paper.arxiv_id.in_(part)))}
        versions = select(
            PaperVersion.arxiv_id, PaperVersion.version, PaperVersion.title, PaperVersion.abstract
        ).where(PaperVersion.arxiv_id.in_(part))
        for a, v, t, b in session.execute(versions):
            if (a, v) in wanted:
                title, abstract, day = by_paper.get(a, ("", "", None))
                out[(a, v)] = (t or title or "", b or abstract or "", day)
        for key in wanted:
            if key[0] in by_paper and key not in out:
                out[key] = by_paper[key[0]]
    return out


def paper_count(session: Session) -> int:
    """How many papers are stored."""
    return session.scalar(select(func.count()).select_from(Paper)) or 0


def get_paper(session: Session, arxiv_id: str) -> Paper | None:
    return session.get(Paper, arxiv_id)


def newest_published(session: Session) -> dt.date | None:
    """The publication date of the newest stored paper."""
    return session.scalar(select(func.max(Paper.published)))


def latest_versions(session: Session, days: int | None = None) -> list[PaperVersion]:
    """Each paper's latest version, in row order; with `days`, only papers published in the last `days`
    days before the newest one."""
    query = (
        select(PaperVersion)
        .join(Paper, (Paper.arxiv_id == PaperVersion.arxiv_id) & (Paper.version == PaperVersion.version))
        .order_by(PaperVersion.id)
    )
    newest = newest_published(session)
    if days is not None and newest is not None:
        query = query.where(Paper.published > newest - dt.timedelta(days=days))
    return list(session.scalars(query))


def last_version_row(session: Session) -> int:
    """The highest `paper_versions.id` stored (0: none): how far a scan of every version must go."""
    return session.scalar(select(func.max(PaperVersion.id))) or 0


def count_versions_between(session: Session, after: int, upto: int) -> int:
    """How many paper versions have a row id in (after, upto]."""
    query = select(func.count()).select_from(PaperVersion)
    return session.scalar(query.where(PaperVersion.id > after, PaperVersion.id <= upto)) or 0


def versions_between(session: Session, after: int, upto: int, limit: int) -> list[PaperVersion]:
    """The first `limit` paper versions with a row id in (after, upto], in row order."""
    query = (
        select(PaperVersion)
        .where(PaperVersion.id > after, PaperVersion.id <= upto)
        .order_by(PaperVersion.id)
        .limit(limit)
    )
    return list(session.scalars(query))


def count_published(session: Session, first: dt.date, last: dt.date) -> int:
    """Papers published on the days `first` to `last`, both included."""
    query = select(func.count()).select_from(Paper).where(Paper.published.between(first, last))
    return int(session.scalar(query) or 0)


def count_first_seen(session: Session, start: dt.datetime, stop: dt.datetime) -> int:
    """Papers the monitor first saw for the period [start, stop): first stored in it, or first stored
    later and published in it (a snapshot, a backfill or a replay stores past periods' papers today),
    as the judgements a period accounts for are counted (store/digests.py `_judged_for_period`)."""
    stored_in = (Paper.first_seen >= start) & (Paper.first_seen < stop)
    published_later = (Paper.published >= start.date()) & (Paper.published < stop.date())
    published_later &= Paper.first_seen >= start
    query = select(func.count()).select_from(Paper).where(stored_in | published_later)
    return int(session.scalar(query) or 0)
