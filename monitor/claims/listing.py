"""Reading claims back: the views `monitor lines`, `monitor claims` and `monitor anchors` print.

Other stages use `active_claims` (claims with `retired_at IS NULL`) and `require_claims`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.errors import MonitorError
from monitor.store.db import Store
from monitor.store.models import Anchor, Claim, Line, LineClaim

NO_CLAIMS = "no claims imported yet; run `monitor seeds import`"


def active_claims(session: Session) -> list[Claim]:
    """Claims still under test, in id order."""
    return list(session.scalars(select(Claim).where(Claim.retired_at.is_(None)).order_by(Claim.id)))


def require_claims(store: Store) -> None:
    """Raise the user-facing hint when nothing has been imported yet."""
    with store.session() as s:
        if not s.scalar(select(func.count()).select_from(Claim)):
            raise MonitorError(NO_CLAIMS)


@dataclass
class LineView:
    id: str
    question: str
    kind: str  # line | note | user
    notes: int
    dated: int
    user: int
    anchors: int
    span: str | None
    source_file: str | None
    status: str  # active | retired

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ClaimView:
    id: str
    text: str
    kind: str
    title: str | None
    date_text: str | None
    date_start: dt.date | None
    date_end: dt.date | None
    date_precision: str | None
    date_approximate: bool
    lines: list[str]
    status: str  # active | retired
    retired_at: dt.datetime | None = None
    replaced_by: str | None = None
    topics: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("date_start", "date_end", "retired_at"):
            d[k] = d[k].isoformat() if d[k] else None
        return d


@dataclass
class AnchorView:
    line_id: str
    question: str
    arxiv_id: str
    cited_date: str | None
    cited_title: str | None
    status: str
    found_title: str | None
    found_published: dt.date | None
    retired: bool

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["found_published"] = d["found_published"].isoformat() if d["found_published"] else None
        return d


def resolve_line(session: Session, ref: str) -> Line:
    """A line by id or unambiguous id prefix (with or without `l-`)."""
    prefix = ref if ref.startswith("l-") else f"l-{ref}"
    hits = list(session.scalars(select(Line).where(Line.id.startswith(prefix, autoescape=True))))
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise MonitorError(f"no line with id {ref!r}; `monitor lines` lists them")
    raise MonitorError(f"line id {ref!r} is ambiguous: {', '.join(h.id for h in hits)}")


def list_lines(
    store: Store, include_retired: bool = False, kinds: tuple[str, ...] = ("line", "user")
) -> list[LineView]:
    with store.session() as s:
        q = select(Line).where(Line.source_kind.in_(kinds)).order_by(Line.source_file, Line.id)
        if not include_retired:
            q = q.where(Line.retired_at.is_(None))
        roles_of: dict[str, list[str]] = defaultdict(list)
        live = select(LineClaim.line_id, LineClaim.role).where(LineClaim.retired_at.is_(None))
        for lid, role in s.execute(live):
            roles_of[lid].append(role)
        anchors_of = Counter(s.scalars(select(Anchor.line_id).where(Anchor.retired_at.is_(None))))
        out = []
        for line in s.scalars(q):
            roles = roles_of[line.id]
            out.append(
                LineView(
                    id=line.id,
                    question=line.question,
                    kind=line.source_kind,
                    notes=roles.count("note"),
                    dated=roles.count("dated"),
                    user=roles.count("user"),
                    anchors=anchors_of[line.id],
                    span=line.span_text,
                    source_file=line.source_file,
                    status="retired" if line.retired_at else "active",
                )
            )
        return out


def count_lines(store: Store) -> dict[str, int]:
    """Active lines per kind (line, note, user)."""
    with store.session() as s:
        rows = s.execute(
            select(Line.source_kind, func.count()).where(Line.retired_at.is_(None)).group_by(Line.source_kind)
        ).all()
        return {kind: n for kind, n in rows}


def list_claims(store: Store, line: str | None = None, include_retired: bool = False) -> list[ClaimView]:
    """Claims (active only unless asked), each with the lines that cite it, in kind-then-position order."""
    with store.session() as s:
        q = select(Claim)
        links_q = select(LineClaim)
        if line is not None:
            target = resolve_line(s, line)
            links_q = links_q.where(LineClaim.line_id == target.id)
            q = q.where(Claim.id.in_(select(LineClaim.claim_id).where(LineClaim.line_id == target.id)))
        if not include_retired:
            q = q.where(Claim.retired_at.is_(None))
        links_of: dict[str, list[LineClaim]] = defaultdict(list)
        for ln in s.scalars(select(LineClaim)):
            links_of[ln.claim_id].append(ln)
        order = {(ln.claim_id): (ln.role, ln.line_id, ln.position) for ln in s.scalars(links_q)}
        out = []
        for c in s.scalars(q):
            mine = links_of[c.id]
            live = [ln.line_id for ln in mine if ln.retired_at is None]
            out.append(
                ClaimView(
                    id=c.id,
                    text=c.text,
                    kind=c.kind,
                    title=c.title,
                    date_text=c.date_text,
                    date_start=c.date_start,
                    date_end=c.date_end,
                    date_precision=c.date_precision,
                    date_approximate=bool(c.date_approximate),
                    # a retired claim shows the lines it was cited by, so its history stays readable
                    lines=sorted(live if c.retired_at is None else {ln.line_id for ln in mine}),
                    status="retired" if c.retired_at else "active",
                    retired_at=c.retired_at,
                    replaced_by=c.replaced_by,
                    topics=list(c.topics or []),
                )
            )
        kind_rank = {"dated": 0, "note": 1, "user": 2}
        out.sort(key=lambda v: (kind_rank.get(v.kind, 9), order.get(v.id, ("", "", 0))[1:], v.id))
        return out


def list_anchors(store: Store, include_retired: bool = False) -> list[AnchorView]:
    with store.session() as s:
        q = (
            select(Anchor, Line.question)
            .join(Line, Line.id == Anchor.line_id)
            .order_by(Line.source_file, Anchor.position)
        )
        if not include_retired:
            q = q.where(Anchor.retired_at.is_(None))
        return [
            AnchorView(
                line_id=a.line_id,
                question=question,
                arxiv_id=a.arxiv_id,
                cited_date=a.cited_date_text,
                cited_title=a.cited_title,
                status=a.status,
                found_title=a.found_title,
                found_published=a.found_published,
                retired=a.retired_at is not None,
            )
            for a, question in s.execute(q)
        ]
