"""Retiring needs consent (see importer.py): an import that would retire a line, anchor, claim or a
line's citation of a claim is refused unless asked for, and every retirement is reported.

A claim reworded in place (its successor stands where it stood) is a replacement the monitor keeps
watching, so it needs no flag; lines, anchors and claims or citations that simply vanish do.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from monitor.claims.changes import ImportReport
from monitor.claims.reconcile import Desired
from monitor.errors import InputError
from monitor.store.claims import claim_texts
from monitor.store.lines import lines_by_id
from monitor.store.models import Line, LineClaim


class RetireRefused(InputError):
    """The import would retire lines, claims or anchors and was not asked to (exit 3, like bad input)."""


_LISTED = 12  # items named per kind in a refusal; the counts are always complete


def _reworded(old: str, new: str) -> bool:
    # A text cut short (a truncated file) is a removal in disguise, not a rewording.
    return not old.strip().startswith(new.strip().rstrip(". "))


def _relinked(
    session: Session, want: Desired, report: ImportReport, texts: dict[str, str]
) -> set[tuple[str, str]]:
    """Removed citations (line, claim) whose place in the line a reworded claim took."""
    added_at: dict[tuple[str, str, int], str] = {}
    for lid, cid in report.links_added:
        role, pos = want.links[(lid, cid)]
        added_at[(lid, role, pos)] = cid
    relinked: set[tuple[str, str]] = set()
    for lid, cid in report.links_removed:
        row = session.get(LineClaim, (lid, cid))
        successor = added_at.get((lid, row.role, row.position)) if row is not None else None
        if successor and _reworded(texts.get(cid, ""), texts.get(successor, "")):
            relinked.add((lid, cid))
    return relinked


def _cited_by(report: ImportReport, relinked: set[tuple[str, str]]) -> tuple[dict[str, set[str]], set[str]]:
    """Each retired claim's lost citations (line ids), and the retired claims whose every lost citation
    has another claim standing in its place (a reverted edit brings the old text back): replaced, not
    removed."""
    cited_by: dict[str, set[str]] = {c: set() for c in report.claims_retired}
    relinked_in: dict[str, set[str]] = {c: set() for c in report.claims_retired}
    for lid, cid in report.links_removed:
        if cid in cited_by:
            cited_by[cid].add(lid)
            if (lid, cid) in relinked:
                relinked_in[cid].add(lid)
    stand_ins = {c for c, lids in cited_by.items() if lids and lids <= relinked_in[c]}
    return cited_by, stand_ins


class _Where:
    """Names a line as `file: id`, remembering the files named."""

    def __init__(self, lines: dict[str, Line]) -> None:
        self.lines = lines
        self.files: set[str] = set()

    def __call__(self, line_id: str) -> str:
        row = self.lines.get(line_id)
        source = row.source_file if row is not None and row.source_file else "?"
        self.files.add(source)
        return f"{source}: {line_id}"


def _vanished(
    session: Session, want: Desired, report: ImportReport, where: _Where, texts: dict[str, str]
) -> tuple[dict[str, list[str]], set[str]]:
    """What would go, by kind, described for the user; and the claims replaced by a rewording."""
    replaced = {
        old for old, new in report.replaced_by.items() if _reworded(texts.get(old, ""), texts.get(new, ""))
    }
    relinked = _relinked(session, want, report, texts)
    cited_by, stand_ins = _cited_by(report, relinked)
    vanished = {
        "line": [f"{where(lid)} {where.lines[lid].question!r}" for lid in report.lines_retired],
        "claim": [
            f"{c} {texts.get(c, '')[:80]!r} (was cited by {', '.join(where(lid) for lid in cited_by[c])})"
            for c in report.claims_retired
            if c not in replaced and c not in stand_ins
        ],
        "citation": [
            f"{where(lid)} no longer cites {cid}"
            for lid, cid in report.links_removed
            if (lid, cid) not in relinked
        ],
        "anchor": [f"{where(lid)} arXiv:{aid}" for lid, aid in report.anchors_retired],
    }
    return vanished, replaced


def check_retirements(session: Session, want: Desired, report: ImportReport, allowed: bool) -> None:
    """Refuse an unrequested retirement (RetireRefused); report every retirement in the warnings."""
    if not (report.lines_retired or report.claims_retired or report.links_removed or report.anchors_retired):
        return
    cited = set(report.claims_retired) | set(report.replaced_by.values())
    cited |= {cid for _, cid in report.links_removed} | {cid for _, cid in report.links_added}
    where = _Where(lines_by_id(session))
    vanished, replaced = _vanished(session, want, report, where, claim_texts(session, cited))
    items: list[str] = []
    for kind, found in vanished.items():
        items.extend(f"{kind} {item}" for item in found[:_LISTED])
        if len(found) > _LISTED:
            items.append(f"... and {len(found) - _LISTED} more {kind}s")
    summary = ", ".join(f"{len(v)} {k}{'s' if len(v) > 1 else ''}" for k, v in vanished.items() if v)
    if items and not allowed:
        raise RetireRefused(
            ", ".join(sorted(where.files)),
            None,
            f"this import would retire {summary} and was not asked to, so nothing was changed:\n  "
            + "\n  ".join(items)
            + "\nIf a file was cut short, restore it. If the removal is intended, run `monitor seeds "
            "import --allow-retire` once (or --prune); later runs then find nothing to retire.",
        )
    if items:
        report.warnings.append(f"retired as asked: {summary}")
        report.warnings.extend(f"retired {item}" for item in items)
    report.warnings.extend(
        f"claim {old} was reworded: retired, now watched as {report.replaced_by[old]}"
        for old in sorted(replaced)
    )
