"""Claims and the lines that cite them: the active claims, a claim by id or prefix, each claim's lines,
their findings spans and anchor papers.

"Active" means not retired: a claim with `retired_at IS NULL`, cited through a link that is not retired
either. Every stage asks for active claims here rather than writing that filter itself.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from monitor.store.models import Anchor, Claim, Line, LineClaim, id_starts_with


def is_active() -> ColumnElement[bool]:
    """SQL: the claim is still under test."""
    return Claim.retired_at.is_(None)


def active_claims(session: Session, claim_ids: Iterable[str] | None = None) -> list[Claim]:
    """Claims still under test (optionally only those among `claim_ids`), in id order."""
    query = select(Claim).where(is_active()).order_by(Claim.id)
    if claim_ids is not None:
        query = query.where(Claim.id.in_(list(claim_ids)))
    return list(session.scalars(query))


def get_claim(session: Session, claim_id: str) -> Claim | None:
    """One claim by its full id, retired or not."""
    return session.get(Claim, claim_id)


def add_claim(session: Session, claim: Claim) -> None:
    """Store a new claim row."""
    session.add(claim)


def claim_count(session: Session) -> int:
    """How many claims were ever imported, retired ones included."""
    return session.scalar(select(func.count()).select_from(Claim)) or 0


def claim_ids_with_prefix(session: Session, prefix: str) -> list[str]:
    """Ids of every claim, active or retired, that start with `prefix`, in id order."""
    query = select(Claim.id).where(id_starts_with(Claim.id, prefix)).order_by(Claim.id)
    return list(session.scalars(query))


def lines_by_claim(session: Session) -> dict[str, list[str]]:
    """Claim id -> the active lines citing it through an active link, in line then position order."""
    rows = session.execute(
        select(LineClaim.claim_id, LineClaim.line_id)
        .join(Line, Line.id == LineClaim.line_id)
        .where(LineClaim.retired_at.is_(None), Line.retired_at.is_(None))
        .order_by(LineClaim.line_id, LineClaim.position)
    )
    out: dict[str, list[str]] = defaultdict(list)
    for claim_id, line_id in rows:
        out[claim_id].append(line_id)
    return out


def lines_of_claim(session: Session, claim_id: str) -> list[Line]:
    """The lines (retired ones too) citing one claim through an active link, in id order."""
    query = (
        select(Line)
        .join(LineClaim, LineClaim.line_id == Line.id)
        .where(LineClaim.claim_id == claim_id, LineClaim.retired_at.is_(None))
        .order_by(Line.id)
    )
    return list(session.scalars(query))


def active_claims_of_line(session: Session, line_id: str) -> list[Claim]:
    """The active claims one line cites through an active link."""
    query = (
        select(Claim)
        .join(LineClaim, LineClaim.claim_id == Claim.id)
        .where(LineClaim.line_id == line_id, LineClaim.retired_at.is_(None), is_active())
    )
    return list(session.scalars(query))


def line_spans(session: Session) -> dict[str, tuple[int, int]]:
    """Each claim's lines' "Findings span" in years: the earliest start and latest end of its lines."""
    rows = session.execute(
        select(LineClaim.claim_id, Line.span_start, Line.span_end)
        .join(Line, Line.id == LineClaim.line_id)
        .where(LineClaim.retired_at.is_(None), Line.span_start.is_not(None), Line.span_end.is_not(None))
    )
    out: dict[str, tuple[int, int]] = {}
    for claim_id, start, end in rows:
        first, last = out.get(claim_id, (start, end))
        out[claim_id] = (min(first, start), max(last, end))
    return out


def anchor_refs_by_claim(session: Session) -> dict[str, set[str]]:
    """Each claim's lines' active anchors, as cited (`arXiv:` prefix and version suffix kept)."""
    rows = session.execute(
        select(LineClaim.claim_id, Anchor.arxiv_id)
        .join(Anchor, Anchor.line_id == LineClaim.line_id)
        .where(LineClaim.retired_at.is_(None), Anchor.retired_at.is_(None))
    )
    out: dict[str, set[str]] = defaultdict(set)
    for claim_id, arxiv_id in rows:
        out[claim_id].add(arxiv_id)
    return out


def claims_cited_by(session: Session, line_id: str | None, include_retired: bool) -> list[Claim]:
    """Claims (only those one line cites, with `line_id`; active only unless `include_retired`)."""
    query = select(Claim)
    if line_id is not None:
        query = query.where(Claim.id.in_(select(LineClaim.claim_id).where(LineClaim.line_id == line_id)))
    if not include_retired:
        query = query.where(is_active())
    return list(session.scalars(query))


def claims_by_id(session: Session) -> dict[str, Claim]:
    """Every claim, retired ones too, by id."""
    return {row.id: row for row in session.scalars(select(Claim))}


def claim_texts(session: Session, claim_ids: Iterable[str]) -> dict[str, str]:
    """The text of each of `claim_ids` that is stored."""
    query = select(Claim.id, Claim.text).where(Claim.id.in_(list(claim_ids)))
    return {cid: text for cid, text in session.execute(query)}


def successors(session: Session) -> dict[str, str]:
    """Retired claim id -> the claim that replaced it directly (one step of a chain of edits)."""
    query = select(Claim.id, Claim.replaced_by).where(Claim.replaced_by.is_not(None))
    return {old: new for old, new in session.execute(query)}


def line_contexts(
    session: Session, claim_ids: Iterable[str]
) -> list[tuple[str, str | None, list[str] | None]]:
    """(claim id, line question, line topics) of each active link citing one of `claim_ids`, by claim then
    line; the line may be retired (its question still describes the claim)."""
    query = (
        select(LineClaim.claim_id, Line.question, Line.topics)
        .join(Line, Line.id == LineClaim.line_id)
        .where(LineClaim.retired_at.is_(None), LineClaim.claim_id.in_(list(claim_ids)))
        .order_by(LineClaim.claim_id, LineClaim.line_id)
    )
    return [(cid, question, topics) for cid, question, topics in session.execute(query)]


def active_links_of_claim(session: Session, claim_id: str) -> list[LineClaim]:
    """The active links citing one claim (from lines that exist, retired or not)."""
    query = (
        select(LineClaim)
        .join(Line, Line.id == LineClaim.line_id)
        .where(LineClaim.claim_id == claim_id, LineClaim.retired_at.is_(None))
    )
    return list(session.scalars(query))


def cite_instead(session: Session, link: LineClaim, claim_id: str, now: dt.datetime) -> None:
    """Retire an active link and cite `claim_id` in its line at the same role and position (reviving an
    earlier link to it, if there is one)."""
    link.retired_at = now
    have = session.get(LineClaim, (link.line_id, claim_id))
    if have is None:
        session.add(
            LineClaim(line_id=link.line_id, claim_id=claim_id, role=link.role, position=link.position)
        )
    else:
        have.retired_at = None


def links_of_lines(session: Session, line_ids: Iterable[str]) -> list[LineClaim]:
    """Every claim link, retired ones too, of the given lines."""
    return list(session.scalars(select(LineClaim).where(LineClaim.line_id.in_(list(line_ids)))))


def links_of_claim(session: Session, claim_id: str) -> list[LineClaim]:
    """Every link, retired ones too, citing one claim."""
    return list(session.scalars(select(LineClaim).where(LineClaim.claim_id == claim_id)))


def still_cited(session: Session, claim_ids: Iterable[str]) -> set[str]:
    """Those of `claim_ids` that some active line cites through an active link."""
    query = (
        select(LineClaim.claim_id)
        .join(Line, Line.id == LineClaim.line_id)
        .where(
            LineClaim.claim_id.in_(list(claim_ids)),
            LineClaim.retired_at.is_(None),
            Line.retired_at.is_(None),
        )
    )
    return set(session.scalars(query))


def active_totals(session: Session) -> dict[str, int]:
    """How many lines, claims and anchors are active."""

    def count(model: type[Line] | type[Claim] | type[Anchor]) -> int:
        return session.scalar(select(func.count()).select_from(model).where(model.retired_at.is_(None))) or 0

    return {"lines": count(Line), "claims": count(Claim), "anchors": count(Anchor)}
