"""Bringing the store in line with what the claim files say (see importer.py for the rules).

`desired` turns parsed documents into the rows the store should hold; `Reconciler` adds, updates,
revives and retires lines, claims, their links and anchors within the import's scope.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from monitor.claims.changes import ImportReport
from monitor.claims.model import ClaimDocument, ParsedAnchor, ParsedClaim, ParsedLine
from monitor.errors import InputError
from monitor.store.claims import claims_by_id, links_of_claim, links_of_lines, still_cited
from monitor.store.lines import anchors_of_lines, lines_by_id
from monitor.store.models import Anchor, Claim, Line, LineClaim, utcnow


@dataclass
class Desired:
    """What the files say the store should hold, keyed the way the tables are."""

    lines: dict[str, tuple[str, ParsedLine]] = field(default_factory=dict)  # id -> (file key, line)
    claims: dict[str, ParsedClaim] = field(default_factory=dict)
    links: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)  # -> (role, position)
    anchors: dict[tuple[str, str], tuple[ParsedAnchor, int]] = field(default_factory=dict)


def desired(docs: list[tuple[str, ClaimDocument]], report: ImportReport) -> Desired:
    want = Desired()
    for key, doc in docs:
        for line in doc.lines:
            if line.id in want.lines:
                other = want.lines[line.id][0]
                raise InputError(
                    key, line.source_line, f"the question {line.question!r} is already a line in {other}"
                )
            want.lines[line.id] = (key, line)
            positions: dict[str, int] = {}
            for claim in line.claims:
                seen = want.claims.get(claim.id)
                if seen is None:
                    want.claims[claim.id] = claim
                elif seen.date and claim.date and seen.date.text != claim.date.text:
                    report.warnings.append(
                        f"{key}:{claim.source_line}: claim {claim.id} is dated {claim.date.text!r} here but "
                        f"{seen.date.text!r} where it was first read; the first date is kept"
                    )
                link = (line.id, claim.id)
                if link not in want.links:
                    pos = positions.get(claim.kind, 0)
                    positions[claim.kind] = pos + 1
                    want.links[link] = (claim.kind, pos)
            for pos, anchor in enumerate(line.anchors):
                want.anchors.setdefault((line.id, anchor.arxiv_id), (anchor, pos))
    return want


def _line_fields(line: ParsedLine, key: str) -> dict[str, Any]:
    return {
        "question": line.question,
        "framing": line.framing,
        "body": line.body,
        "topics": list(line.topics),
        "span_text": line.span.text if line.span else None,
        "span_start": line.span.start_year if line.span else None,
        "span_end": line.span.end_year if line.span else None,
        "has_next_marker": line.has_next_marker,
        "source_file": key,
        "source_kind": line.kind,
    }


def _claim_fields(claim: ParsedClaim) -> dict[str, Any]:
    d = claim.date
    return {
        "text": claim.text,
        "kind": claim.kind,
        "title": claim.title,
        "original_title": claim.original_title,
        "date_text": d.text if d else None,
        "date_start": d.start if d else None,
        "date_end": d.end if d else None,
        "date_precision": d.precision if d else None,
        "date_approximate": d.approximate if d else False,
        "topics": list(claim.topics),
    }


def _apply(row: Any, values: dict[str, Any]) -> list[str]:
    """Set the fields that differ; return their names."""
    changed = []
    for name, value in values.items():
        if getattr(row, name) != value:
            setattr(row, name, value)
            changed.append(name)
    return changed


class Reconciler:
    def __init__(self, session: Session, want: Desired, scope: set[str], report: ImportReport) -> None:
        self.s = session
        self.want = want
        self.scope = scope  # file keys whose lines this import may retire
        self.report = report
        self.now = utcnow()

    def run(self) -> None:
        lines = lines_by_id(self.s)
        in_scope = {lid for lid, row in lines.items() if row.source_file in self.scope} | set(self.want.lines)
        self._lines(lines)
        claims = claims_by_id(self.s)
        self._claims(claims)
        self.s.flush()
        touched = self._links(in_scope)
        self.s.flush()
        self._claim_status(claims, touched)
        self._anchors(in_scope)
        self.s.flush()

    def _lines(self, existing: dict[str, Line]) -> None:
        for lid, (key, parsed) in self.want.lines.items():
            row = existing.get(lid)
            values = _line_fields(parsed, key)
            if row is None:
                self.s.add(Line(id=lid, created_at=self.now, updated_at=self.now, **values))
                self.report.lines_added.append(lid)
                continue
            changed = _apply(row, values)
            if row.retired_at is not None:
                row.retired_at = None
                self.report.lines_reactivated.append(lid)
            if changed:
                row.updated_at = self.now
                self.report.lines_updated[lid] = changed
        for lid, row in existing.items():
            if lid not in self.want.lines and row.source_file in self.scope and row.retired_at is None:
                row.retired_at = self.now
                self.report.lines_retired.append(lid)

    def _claims(self, existing: dict[str, Claim]) -> None:
        for cid, parsed in self.want.claims.items():
            row = existing.get(cid)
            if row is None:
                row = Claim(id=cid, created_at=self.now, **_claim_fields(parsed))
                self.s.add(row)
                existing[cid] = row
                self.report.claims_added.append(cid)
            elif changed := _apply(row, _claim_fields(parsed)):
                self.report.claims_updated[cid] = changed

    def _links(self, in_scope: set[str]) -> set[str]:
        """Bring line_claims in line for every line in scope; return the claim ids whose links moved."""
        touched: set[str] = set()
        rows = links_of_lines(self.s, in_scope)
        have = {(r.line_id, r.claim_id): r for r in rows}
        for key, row in have.items():
            if key in self.want.links:
                role, pos = self.want.links[key]
                if row.retired_at is not None:
                    row.retired_at = None
                    self.report.links_added.append(key)
                    touched.add(row.claim_id)
                if row.role != role or row.position != pos:
                    row.role, row.position = role, pos
                    self.report.links_moved += 1
            elif row.retired_at is None:
                row.retired_at = self.now
                self.report.links_removed.append(key)
                touched.add(row.claim_id)
        for key, (role, pos) in self.want.links.items():
            if key not in have:
                self.s.add(LineClaim(line_id=key[0], claim_id=key[1], role=role, position=pos))
                self.report.links_added.append(key)
                touched.add(key[1])
        return touched

    def _claim_status(self, claims: dict[str, Claim], touched: set[str]) -> None:
        """A claim is active while some active line cites it; retire or revive those whose links moved."""
        if not touched:
            return
        active = still_cited(self.s, touched)
        new_at = self._new_claim_positions()
        for cid in sorted(touched):
            row = claims[cid]
            if cid in active and row.retired_at is not None:
                row.retired_at, row.replaced_by = None, None
                self.report.claims_reactivated.append(cid)
            elif cid not in active and row.retired_at is None:
                row.retired_at = self.now
                self.report.claims_retired.append(cid)
                successor = self._successor(cid, new_at)
                if successor:
                    row.replaced_by = successor
                    self.report.replaced_by[cid] = successor

    def _new_claim_positions(self) -> dict[tuple[str, str, int], str]:
        """(line id or file key, role, position) -> id, for claims first added by this import."""
        added = set(self.report.claims_added)
        out: dict[tuple[str, str, int], str] = {}
        for (lid, cid), (role, pos) in self.want.links.items():
            if cid in added:
                out[(lid, role, pos)] = cid
                out[(self.want.lines[lid][0], role, pos)] = cid
        return out

    def _successor(self, cid: str, new_at: dict[tuple[str, str, int], str]) -> str | None:
        """The new claim standing where this one stood (same line, or same file, role and position)."""
        for link in links_of_claim(self.s, cid):
            if (link.line_id, link.claim_id) not in self.report.links_removed:
                continue
            hit = new_at.get((link.line_id, link.role, link.position))
            if hit is None:
                line = self.s.get(Line, link.line_id)
                hit = new_at.get((line.source_file or "", link.role, link.position)) if line else None
            if hit:
                return hit
        return None

    def _anchors(self, in_scope: set[str]) -> None:
        rows = anchors_of_lines(self.s, in_scope)
        have = {(r.line_id, r.arxiv_id): r for r in rows}
        for key, row in have.items():
            if key in self.want.anchors:
                parsed, pos = self.want.anchors[key]
                revived = row.retired_at is not None
                row.retired_at = None
                changed = _apply(row, {"cited_date_text": parsed.date_text, "cited_title": parsed.title})
                if row.position != pos:
                    row.position = pos
                if revived:
                    self.report.anchors_added.append(key)
                elif changed:
                    self.report.anchors_updated.append(key)
            elif row.retired_at is None:
                row.retired_at = self.now
                self.report.anchors_retired.append(key)
        for key, (parsed, pos) in self.want.anchors.items():
            if key not in have:
                self.s.add(
                    Anchor(
                        line_id=key[0],
                        arxiv_id=key[1],
                        cited_date_text=parsed.date_text,
                        cited_title=parsed.title,
                        position=pos,
                    )
                )
                self.report.anchors_added.append(key)
