"""What an import changed: the report `monitor seeds import` prints and run records keep."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from monitor.store.runs import StageNotes


@dataclass
class FileOutcome:
    path: str
    kind: str  # line | note | user
    status: str  # new | changed | unchanged | pruned


@dataclass
class ImportReport:
    """What an import changed. `changed` is False when the store already matched the files.
    Recorded on a run as `claims` (StageCounts)."""

    stage: ClassVar[str] = "claims"

    files: list[FileOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    lines_added: list[str] = field(default_factory=list)
    lines_updated: dict[str, list[str]] = field(default_factory=dict)
    lines_retired: list[str] = field(default_factory=list)
    lines_reactivated: list[str] = field(default_factory=list)
    claims_added: list[str] = field(default_factory=list)
    claims_updated: dict[str, list[str]] = field(default_factory=dict)
    claims_retired: list[str] = field(default_factory=list)
    claims_reactivated: list[str] = field(default_factory=list)
    replaced_by: dict[str, str] = field(default_factory=dict)
    links_added: list[tuple[str, str]] = field(default_factory=list)
    links_removed: list[tuple[str, str]] = field(default_factory=list)
    links_moved: int = 0
    anchors_added: list[tuple[str, str]] = field(default_factory=list)
    anchors_updated: list[tuple[str, str]] = field(default_factory=list)
    anchors_retired: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)  # active rows after the import

    @property
    def changed(self) -> bool:
        lists = (
            self.lines_added, self.lines_updated, self.lines_retired, self.lines_reactivated,
            self.claims_added, self.claims_updated, self.claims_retired, self.claims_reactivated,
            self.links_added, self.links_removed, self.anchors_added, self.anchors_updated,
            self.anchors_retired,
        )  # fmt: skip
        return any(lists) or self.links_moved > 0 or any(f.status == "pruned" for f in self.files)

    def counts(self) -> dict[str, int]:
        """The figures a run record or a log line wants."""
        return {
            "files": len(self.files),
            "lines_added": len(self.lines_added),
            "lines_updated": len(self.lines_updated),
            "lines_retired": len(self.lines_retired),
            "claims_added": len(self.claims_added),
            "claims_updated": len(self.claims_updated),
            "claims_retired": len(self.claims_retired),
            "claims_reactivated": len(self.claims_reactivated),
            "links_added": len(self.links_added),
            "links_removed": len(self.links_removed),
            "anchors_added": len(self.anchors_added),
            "anchors_retired": len(self.anchors_retired),
            **{f"active_{k}": v for k, v in self.totals.items()},
        }

    def stage_counts(self) -> dict[str, int]:
        return self.counts()

    def stage_notes(self) -> StageNotes:
        return StageNotes(warnings=list(self.warnings))

    def as_dict(self) -> dict[str, Any]:
        return {"changed": self.changed, **asdict(self)}
