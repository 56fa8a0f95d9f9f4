"""Reading claims back: the views `monitor lines`, `monitor claims` and `monitor anchors` print.

Other stages use `require_claims`; the queries are in monitor/store/claims.py and lines.py.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from monitor.errors import MonitorError, NotFound, UsageError
from monitor.store.claims import active_claims, claim_count, claims_cited_by
from monitor.store.db import Store
from monitor.store.lines import (
    active_line_counts,
    all_links,
    anchor_counts,
    anchors_with_questions,
    lines_of_kinds,
    lines_with_prefix,
    roles_by_line,
)
from monitor.store.models import Line, LineClaim
from monitor.text import quoted

NO_CLAIMS = "no claims imported yet; run `monitor seeds import`"


def require_claims(store: Store) -> None:
    """Raise the user-facing hint when nothing has been imported yet."""
    with store.session() as s:
        if not claim_count(s):
            raise MonitorError(NO_CLAIMS)


def check_claim_ids(store: Store, claim_ids: list[str] | None) -> None:
    """Every id a `--claim` option gave names an active claim: an unknown one is an error, not a run
    that quietly does nothing."""
    if not claim_ids:
        return
    with store.session() as s:
        known = {c.id for c in active_claims(s, claim_ids)}
    missing = [cid for cid in claim_ids if cid not in known]
    if missing:
        raise NotFound(f"no active claim {', '.join(map(repr, missing))} (see `monitor claims`)")


@dataclass
class ListedLine:
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
class ListedClaim:
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
class ListedAnchor:
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
    hits = lines_with_prefix(session, prefix)
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise NotFound(f"no line with id {quoted(ref)}; `monitor lines` lists them")
    raise UsageError(f"line id {quoted(ref)} is ambiguous: {', '.join(h.id for h in hits)}")


def list_lines(
    store: Store, include_retired: bool = False, kinds: tuple[str, ...] = ("line", "user")
) -> list[ListedLine]:
    with store.session() as s:
        roles_of = roles_by_line(s)
        anchors_of = anchor_counts(s)
        out = []
        for line in lines_of_kinds(s, kinds, include_retired):
            roles = roles_of[line.id]
            out.append(
                ListedLine(
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
        return active_line_counts(s)


def list_claims(store: Store, line: str | None = None, include_retired: bool = False) -> list[ListedClaim]:
    """Claims (active only unless asked), each with the lines that cite it, in kind-then-position order."""
    with store.session() as s:
        line_id = resolve_line(s, line).id if line is not None else None
        links_of: dict[str, list[LineClaim]] = defaultdict(list)
        for ln in all_links(s):
            links_of[ln.claim_id].append(ln)
        order = {(ln.claim_id): (ln.role, ln.line_id, ln.position) for ln in all_links(s, line_id)}
        out = []
        for c in claims_cited_by(s, line_id, include_retired):
            mine = links_of[c.id]
            live = [ln.line_id for ln in mine if ln.retired_at is None]
            out.append(
                ListedClaim(
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


def list_anchors(store: Store, include_retired: bool = False) -> list[ListedAnchor]:
    with store.session() as s:
        return [
            ListedAnchor(
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
            for a, question in anchors_with_questions(s, include_retired)
        ]
