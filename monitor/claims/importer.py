"""Import claim files into the store, reconciling with what an earlier import left there.

The whole run is one transaction: every file is parsed first (a bad file raises InputError before
anything is written), then lines, claims, links and anchors are brought in line with the files.
Claims are never deleted: a claim whose text was edited gets a new id (the id is the hash of the
text), and the old one is retired (`retired_at`, and `replaced_by` when the new text took its place
at the same position in the same line), keeping its assessments and verdicts.

Scope: only lines from the files being imported are reconciled. A file left out of the import set
(deleted from seeds/, or not named on the command line) keeps its lines and claims active, unless
`prune=True`, which treats the import set as the whole truth and retires everything else.

Retiring needs consent: a file that lost content by accident (a truncated copy, a bad edit) looks
exactly like one the user shortened on purpose, and a silent retirement would quietly stop the
monitor from watching claims. So an import that would retire any line, anchor, claim or a line's
citation of a claim is refused (RetireRefused, exit 3, listing what would go, nothing written) unless
`allow_retire=True` (`monitor seeds import --allow-retire`) or `prune=True` (itself a request to
retire). A claim reworded in place is not a removal (its successor takes its place and is watched)
unless the new text is the old one cut short. Every retirement is also put in the report's warnings,
so it is printed and kept with the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from monitor.claims.changes import FileOutcome, ImportReport
from monitor.claims.model import ClaimDocument, ParsedAnchor, ParsedClaim, ParsedLine
from monitor.claims.rewordings import apply_accepted
from monitor.claims.seeds import parse_seed_file
from monitor.claims.userfile import USER_SUFFIXES, parse_user_file
from monitor.config import Settings
from monitor.errors import InputError
from monitor.store.db import Store
from monitor.store.models import Anchor, Claim, Line, LineClaim, SeedFile, utcnow
from monitor.store.runs import RunRecord

SEED_SUFFIXES = (".txt",)
CLAIM_SUFFIXES = SEED_SUFFIXES + USER_SUFFIXES  # what a directory import reads


# --- finding and reading files ------------------------------------------------------------------


def file_key(path: Path) -> str:
    """How a file is named in the store: relative to the working directory when under it.

    Relative names keep a database shared between checkouts (or machines) meaningful.
    """
    resolved = path.resolve()
    try:
        return resolved.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def collect_files(paths: Iterable[Path], report: ImportReport) -> list[Path]:
    """Files named directly, plus the claim files in named directories (sorted, hidden ones skipped)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            for child in sorted(path.iterdir()):
                if child.name.startswith(".") or not child.is_file():
                    continue
                if child.suffix.lower() in CLAIM_SUFFIXES:
                    found.append(child)
                else:
                    report.skipped.append(f"{child} (not a .txt seed export or a .yaml/.toml claim file)")
        elif path.is_file():
            found.append(path)
        else:
            raise InputError(str(path), None, "no such file or directory")
    unique: dict[str, Path] = {}
    for p in found:
        unique.setdefault(file_key(p), p)
    return list(unique.values())


def read_document(path: Path) -> ClaimDocument:
    if path.suffix.lower() in USER_SUFFIXES:
        return parse_user_file(path)
    return parse_seed_file(path)


def default_paths(settings: Settings) -> list[Path]:
    paths = [settings.paths.seeds]
    if settings.paths.claims_file is not None:
        paths.append(settings.paths.claims_file)
    return paths


# --- the desired state --------------------------------------------------------------------------


@dataclass
class _Desired:
    """What the files say the store should hold, keyed the way the tables are."""

    lines: dict[str, tuple[str, ParsedLine]] = field(default_factory=dict)  # id -> (file key, line)
    claims: dict[str, ParsedClaim] = field(default_factory=dict)
    links: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)  # -> (role, position)
    anchors: dict[tuple[str, str], tuple[ParsedAnchor, int]] = field(default_factory=dict)


def _desired(docs: list[tuple[str, ClaimDocument]], report: ImportReport) -> _Desired:
    want = _Desired()
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


# --- reconciling --------------------------------------------------------------------------------


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


class _Reconciler:
    def __init__(self, session: Session, want: _Desired, scope: set[str], report: ImportReport) -> None:
        self.s = session
        self.want = want
        self.scope = scope  # file keys whose lines this import may retire
        self.report = report
        self.now = utcnow()

    def run(self) -> None:
        lines = {row.id: row for row in self.s.scalars(select(Line))}
        in_scope = {lid for lid, row in lines.items() if row.source_file in self.scope} | set(self.want.lines)
        self._lines(lines)
        claims = {row.id: row for row in self.s.scalars(select(Claim))}
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
        rows = self.s.scalars(select(LineClaim).where(LineClaim.line_id.in_(in_scope))).all()
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
        active = set(
            self.s.scalars(
                select(LineClaim.claim_id)
                .join(Line, Line.id == LineClaim.line_id)
                .where(
                    LineClaim.claim_id.in_(touched),
                    LineClaim.retired_at.is_(None),
                    Line.retired_at.is_(None),
                )
            )
        )
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
        for link in self.s.scalars(select(LineClaim).where(LineClaim.claim_id == cid)):
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
        rows = self.s.scalars(select(Anchor).where(Anchor.line_id.in_(in_scope))).all()
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


def _seed_files(
    session: Session, docs: list[tuple[str, ClaimDocument]], prune: bool, report: ImportReport
) -> None:
    known = {row.path: row for row in session.scalars(select(SeedFile))}
    for key, doc in docs:
        row = known.get(key)
        if row is None:
            session.add(SeedFile(path=key, sha256=doc.sha256, kind=doc.kind, imported_at=utcnow()))
            report.files.append(FileOutcome(key, doc.kind, "new"))
        elif row.sha256 != doc.sha256 or row.kind != doc.kind:
            row.sha256, row.kind, row.imported_at = doc.sha256, doc.kind, utcnow()
            report.files.append(FileOutcome(key, doc.kind, "changed"))
        else:
            report.files.append(FileOutcome(key, doc.kind, "unchanged"))
    if prune:
        current = {key for key, _ in docs}
        for key, row in known.items():
            if key not in current:
                report.files.append(FileOutcome(key, row.kind, "pruned"))
                session.delete(row)


class RetireRefused(InputError):
    """The import would retire lines, claims or anchors and was not asked to (exit 3, like bad input)."""


_LISTED = 12  # items named per kind in a refusal; the counts are always complete


def _reworded(old: str, new: str) -> bool:
    # A text cut short (a truncated file) is a removal in disguise, not a rewording.
    return not old.strip().startswith(new.strip().rstrip(". "))


def _check_retirements(session: Session, want: _Desired, report: ImportReport, allowed: bool) -> None:
    """Refuse an unrequested retirement; report every retirement loudly (see the module docstring).

    A claim reworded in place (its successor stands where it stood) is a replacement the monitor keeps
    watching, so it needs no flag; lines, anchors and claims or citations that simply vanish do.
    """
    if not (report.lines_retired or report.claims_retired or report.links_removed or report.anchors_retired):
        return
    lines = {row.id: row for row in session.scalars(select(Line))}
    cited = set(report.claims_retired) | set(report.replaced_by.values())
    cited |= {cid for _, cid in report.links_removed} | {cid for _, cid in report.links_added}
    texts = dict(session.execute(select(Claim.id, Claim.text).where(Claim.id.in_(cited))).all())
    files: set[str] = set()

    def where(line_id: str) -> str:
        row = lines.get(line_id)
        source = row.source_file if row is not None and row.source_file else "?"
        files.add(source)
        return f"{source}: {line_id}"

    replaced = {
        old for old, new in report.replaced_by.items() if _reworded(texts.get(old, ""), texts.get(new, ""))
    }
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
    # A claim whose every lost citation has another claim standing in its place (a reverted edit
    # brings the old text back) was replaced, not removed.
    cited_by: dict[str, set[str]] = {c: set() for c in report.claims_retired}
    relinked_in: dict[str, set[str]] = {c: set() for c in report.claims_retired}
    for lid, cid in report.links_removed:
        if cid in cited_by:
            cited_by[cid].add(lid)
            if (lid, cid) in relinked:
                relinked_in[cid].add(lid)
    vanished = {
        "line": [f"{where(lid)} {lines[lid].question!r}" for lid in report.lines_retired],
        "claim": [
            f"{c} {texts.get(c, '')[:80]!r} (was cited by {', '.join(where(lid) for lid in cited_by[c])})"
            for c in report.claims_retired
            if c not in replaced and not (cited_by[c] and cited_by[c] <= relinked_in[c])
        ],
        "citation": [
            f"{where(lid)} no longer cites {cid}"
            for lid, cid in report.links_removed
            if (lid, cid) not in relinked
        ],
        "anchor": [f"{where(lid)} arXiv:{aid}" for lid, aid in report.anchors_retired],
    }
    items: list[str] = []
    for kind, found in vanished.items():
        items.extend(f"{kind} {item}" for item in found[:_LISTED])
        if len(found) > _LISTED:
            items.append(f"... and {len(found) - _LISTED} more {kind}s")
    summary = ", ".join(f"{len(v)} {k}{'s' if len(v) > 1 else ''}" for k, v in vanished.items() if v)
    if items and not allowed:
        raise RetireRefused(
            ", ".join(sorted(files)),
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


def _totals(session: Session) -> dict[str, int]:
    def count(model: Any) -> int:
        return session.scalar(select(func.count()).select_from(model).where(model.retired_at.is_(None))) or 0

    return {"lines": count(Line), "claims": count(Claim), "anchors": count(Anchor)}


def import_claims(
    store: Store,
    settings: Settings,
    paths: list[Path] | None = None,
    *,
    prune: bool = False,
    allow_retire: bool = False,
    run: RunRecord | None = None,
) -> ImportReport:
    """Import seed exports and user claim files; one transaction, all or nothing.

    `paths` may name files or directories; by default the seeds directory and `paths.claims_file`.
    With `prune`, lines from files outside this import set are retired as well. Any retirement needs
    `allow_retire` or `prune`; otherwise RetireRefused is raised and nothing is written.
    """
    report = ImportReport()
    if not paths and not settings.paths.seeds.exists():
        raise InputError(
            str(settings.paths.seeds),
            None,
            "seeds directory (paths.seeds) not found; put seed exports there or name files to import",
        )
    files = collect_files(paths if paths else default_paths(settings), report)
    if not files:
        where = ", ".join(str(p) for p in (paths or default_paths(settings)))
        raise InputError(
            where, None, "no claim files found (expected .txt seed exports or .yaml/.toml claim files)"
        )
    docs = [(file_key(p), read_document(p)) for p in files]  # every parse error surfaces here
    want = _desired(docs, report)
    with store.session() as session:
        apply_accepted(session, want)  # a wording a curator accepted outlives the file's old text
        scope = {key for key, _ in docs}
        if prune:
            scope |= {row.path for row in session.scalars(select(SeedFile))}
            scope |= {f for f in session.scalars(select(Line.source_file)) if f}
        _Reconciler(session, want, scope, report).run()
        _check_retirements(session, want, report, allow_retire or prune)  # raising rolls everything back
        _seed_files(session, docs, prune, report)
        session.flush()
        report.totals = _totals(session)
    if run is not None:
        run.add("claims", report.counts())
        run.warnings.extend(report.warnings)
    return report
