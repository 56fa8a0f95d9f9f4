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

The reconciling is in reconcile.py, the consent check in retirements.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from sqlalchemy.orm import Session

from monitor.claims.changes import FileOutcome, ImportReport
from monitor.claims.model import ClaimDocument
from monitor.claims.reconcile import Reconciler, desired
from monitor.claims.retirements import check_retirements
from monitor.claims.rewordings import apply_accepted
from monitor.claims.seeds import parse_seed_file
from monitor.claims.userfile import USER_SUFFIXES, parse_user_file
from monitor.config import Settings
from monitor.errors import InputError
from monitor.store.claims import active_totals
from monitor.store.db import Store
from monitor.store.lines import line_source_files, seed_files
from monitor.store.models import SeedFile, utcnow

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
    """One claim file, parsed and checked (lengths): an InputError naming file and line, else the document."""
    doc = parse_user_file(path) if path.suffix.lower() in USER_SUFFIXES else parse_seed_file(path)
    doc.check_lengths()
    return doc


def default_paths(settings: Settings) -> list[Path]:
    paths = [settings.paths.seeds]
    if settings.paths.claims_file is not None:
        paths.append(settings.paths.claims_file)
    return paths


# --- the desired state --------------------------------------------------------------------------


def _seed_files(
    session: Session, docs: list[tuple[str, ClaimDocument]], prune: bool, report: ImportReport
) -> None:
    known = seed_files(session)
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


def import_claims(
    store: Store,
    settings: Settings,
    paths: list[Path] | None = None,
    *,
    prune: bool = False,
    allow_retire: bool = False,
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
    want = desired(docs, report)
    with store.session() as session:
        apply_accepted(session, want)  # a wording a curator accepted outlives the file's old text
        scope = {key for key, _ in docs}
        if prune:
            scope |= set(seed_files(session)) | line_source_files(session)
        Reconciler(session, want, scope, report).run()
        check_retirements(session, want, report, allow_retire or prune)  # raising rolls everything back
        _seed_files(session, docs, prune, report)
        session.flush()
        report.totals = active_totals(session)
    return report
