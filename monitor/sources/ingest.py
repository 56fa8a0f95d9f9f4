"""`fetch()`: the stage entry point the CLI and the scheduler call. It picks the source
(monitor/sources/factory.py), stores each batch it yields (monitor/sources/writer.py, one transaction
per batch with the mark it earns) and sums up what happened for the CLI and the run record.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from monitor.config import Settings
from monitor.progress import progress_bar
from monitor.sources.factory import make_source
from monitor.sources.writer import store_batch
from monitor.store.db import Store
from monitor.store.runs import StageNotes, partial_on_failure
from monitor.testhooks import pause_at


@dataclass
class FetchSummary:
    """The outcome of one fetch, for the CLI summary and the run record (as `fetch`: StageCounts)."""

    stage: ClassVar[str] = "fetch"

    source: str
    requests: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    versions: int = 0
    wait_seconds: float = 0.0
    elapsed_seconds: float = 0.0
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["wait_seconds"] = round(self.wait_seconds, 2)
        data["elapsed_seconds"] = round(self.elapsed_seconds, 2)
        return data

    def stage_counts(self) -> dict[str, Any]:
        return self.as_dict()

    def stage_notes(self) -> StageNotes:
        return StageNotes(warnings=list(self.warnings))


def fetch(
    store: Store,
    settings: Settings,
    source: str = "api",
    since: dt.date | None = None,
    until: dt.date | None = None,
    categories: list[str] | None = None,
    progress: bool = False,
) -> FetchSummary:
    """Fetch from one source and store what is new; each batch commits with its mark (writer.py).
    A failure carries what was stored until then (`partial_on_failure`), for the run to record."""
    started = time.monotonic()
    src = make_source(store, settings, source, since, until, categories)
    summary = FetchSummary(source=src.name)
    with progress_bar(f"fetch {src.name}", None, "papers", progress) as advance, partial_on_failure(summary):
        try:
            for batch in src.batches():
                counts = store_batch(store, batch, src.name)
                pause_at("fetch:after_first_batch")  # test-only crash point; a no-op otherwise
                summary.new += counts.new
                summary.updated += counts.updated
                summary.unchanged += counts.unchanged
                summary.versions += counts.versions
                advance(len(batch.records), description=f"fetch {src.name}: {summary.new} new")
        finally:
            summary.requests = src.requests
            summary.wait_seconds = src.wait_seconds
            summary.truncated = src.report.truncated
            summary.warnings = list(src.report.warnings)
            summary.notes = list(src.report.notes)
            summary.elapsed_seconds = time.monotonic() - started
    return summary
