"""Inquiring lines, their anchors and the files they came from: the active ones, a line by id prefix,
what each line holds."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.store.models import Anchor, Line, LineClaim, SeedFile, id_starts_with


def active_lines(session: Session) -> list[Line]:
    """Lines not retired, in id order."""
    return list(session.scalars(select(Line).where(Line.retired_at.is_(None)).order_by(Line.id)))


def lines_with_prefix(session: Session, prefix: str) -> list[Line]:
    """Every line, retired ones too, whose id starts with `prefix`."""
    return list(session.scalars(select(Line).where(id_starts_with(Line.id, prefix))))


def lines_of_kinds(session: Session, kinds: tuple[str, ...], include_retired: bool) -> list[Line]:
    """Lines of the given source kinds, by source file then id."""
    query = select(Line).where(Line.source_kind.in_(kinds)).order_by(Line.source_file, Line.id)
    if not include_retired:
        query = query.where(Line.retired_at.is_(None))
    return list(session.scalars(query))


def active_line_counts(session: Session) -> dict[str, int]:
    """Active lines per source kind (line, note, user)."""
    rows = session.execute(
        select(Line.source_kind, func.count()).where(Line.retired_at.is_(None)).group_by(Line.source_kind)
    ).all()
    return {kind: n for kind, n in rows}


def roles_by_line(session: Session) -> dict[str, list[str]]:
    """Line id -> the roles (dated, note, user) of its active claim links."""
    out: dict[str, list[str]] = defaultdict(list)
    for line_id, role in session.execute(
        select(LineClaim.line_id, LineClaim.role).where(LineClaim.retired_at.is_(None))
    ):
        out[line_id].append(role)
    return out


def all_links(session: Session, line_id: str | None = None) -> list[LineClaim]:
    """Every claim link, retired ones too (only one line's with `line_id`)."""
    query = select(LineClaim)
    if line_id is not None:
        query = query.where(LineClaim.line_id == line_id)
    return list(session.scalars(query))


def anchor_counts(session: Session) -> Counter[str]:
    """Line id -> how many active anchors it cites."""
    return Counter(session.scalars(select(Anchor.line_id).where(Anchor.retired_at.is_(None))))


def active_anchors(session: Session) -> list[Anchor]:
    """Anchors not retired, by line then position."""
    query = select(Anchor).where(Anchor.retired_at.is_(None)).order_by(Anchor.line_id, Anchor.position)
    return list(session.scalars(query))


def ungrounded_anchors(session: Session) -> list[Anchor]:
    """Active anchors whose check did not find the cited paper as cited, by position."""
    query = (
        select(Anchor)
        .where(Anchor.retired_at.is_(None), Anchor.status != "grounded")
        .order_by(Anchor.position)
    )
    return list(session.scalars(query))


def anchors_with_questions(session: Session, include_retired: bool) -> list[tuple[Anchor, str]]:
    """(anchor, its line's question), by source file then position."""
    query = (
        select(Anchor, Line.question)
        .join(Line, Line.id == Anchor.line_id)
        .order_by(Line.source_file, Anchor.position)
    )
    if not include_retired:
        query = query.where(Anchor.retired_at.is_(None))
    return [(anchor, question) for anchor, question in session.execute(query)]


def active_anchor_titles(session: Session, line_id: str) -> list[str | None]:
    """The cited titles of one line's active anchors."""
    query = select(Anchor.cited_title).where(Anchor.line_id == line_id, Anchor.retired_at.is_(None))
    return list(session.scalars(query))


def lines_by_id(session: Session) -> dict[str, Line]:
    """Every line, retired ones too, by id."""
    return {row.id: row for row in session.scalars(select(Line))}


def anchors_of_lines(session: Session, line_ids: Iterable[str]) -> list[Anchor]:
    """Every anchor, retired ones too, of the given lines."""
    return list(session.scalars(select(Anchor).where(Anchor.line_id.in_(list(line_ids)))))


def line_source_files(session: Session) -> set[str]:
    """The files any line, retired or not, was imported from."""
    return {f for f in session.scalars(select(Line.source_file)) if f}


def seed_files(session: Session) -> dict[str, SeedFile]:
    """The imported files' records (hash, kind, when), by path."""
    return {row.path: row for row in session.scalars(select(SeedFile))}
