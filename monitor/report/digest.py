"""The digest: render a period's view-model (gather.py), write it and record it. Sending is
delivery.py's, called from one place (report/channels.py `deliver`, the flow's deliver stage).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from monitor.config import Settings
from monitor.files import write_together
from monitor.report.budget import fold_large_library
from monitor.report.feed import write_feed
from monitor.report.gather import gather_digest
from monitor.report.period import Coverage, Period, coverage, default_period, partial_notice, resolve_period
from monitor.report.render import fmt_date, render
from monitor.report.research import DigestAsks
from monitor.report.views import DigestView
from monitor.store.db import Store
from monitor.store.digests import save_digest
from monitor.store.marks import newest_mark
from monitor.store.papers import newest_published

log = logging.getLogger(__name__)


@dataclass
class DigestResult:
    """What `write_digest` did (recorded on the run as `report` by the caller: StageCounts)."""

    stage: ClassVar[str] = "report"

    period: Period
    digest_id: int
    paths: dict[str, Path]
    stats: dict[str, Any]
    content_sha256: str
    sent: bool | None = None  # None: not asked to send
    posted: list[str] | None = None  # the webhooks posted to; None: not asked to post

    def as_dict(self) -> dict[str, Any]:
        return {
            "period": self.period.key,
            "digest_id": self.digest_id,
            "paths": {fmt: str(path) for fmt, path in self.paths.items()},
            "content_sha256": self.content_sha256,
            "sent": self.sent,
            "posted": self.posted,
            **self.stats,
        }

    def stage_counts(self) -> dict[str, Any]:
        return {"period": self.period.key, **{k: v for k, v in self.stats.items() if k != "verdicts"}}


def content_hash(markdown: str, digest: DigestView) -> str:
    """sha256 of the Markdown without its generation time, so it changes only when the content does."""
    return hashlib.sha256(markdown.replace(fmt_date(digest.generated_at), "").encode()).hexdigest()


def store_coverage(store: Store) -> Coverage:
    """How far the store covers arXiv (report/period.py `coverage`): its fetch marks, or its newest paper."""
    with store.session() as s:
        return coverage(newest_mark(s), newest_published(s))


def reported_period(
    store: Store,
    spec: str = "week",
    today: dt.date | None = None,
    follow_store: bool = True,
) -> Period:
    """The period a default digest (`spec` week or month) reports: the last complete one, or, with
    `follow_store`, for a store that stopped well before today (filled from a snapshot) the last
    complete one it fully covers (`period.default_period`). A period the store covers only in part
    is logged as a warning."""
    today = today or dt.datetime.now(dt.UTC).date()
    if not follow_store:
        return resolve_period(spec, None, None, today)
    covered = store_coverage(store)
    chosen = default_period(spec, today, covered)
    if chosen != resolve_period(spec, None, None, today):
        # Information, not a warning: the caller chose to follow the store, and the period says which.
        log.info("the store covers papers through %s; reporting %s", covered.through, chosen.key)
    _warn_if_partial(chosen, covered)
    return chosen


def _warn_if_partial(period: Period, covered: Coverage) -> None:
    if notice := partial_notice(period, covered):
        log.warning("%s", notice)


def choose_period(
    store: Store,
    spec: str | None = "week",
    since: dt.date | None = None,
    until: dt.date | None = None,
    today: dt.date | None = None,
    follow_store: bool = True,
) -> Period:
    """The period `spec` names: a key (2026-W12, 2026-03), or with `since`/`until` a custom range, or the
    default week or month (`reported_period`, which with `follow_store` moves to a stale store's last
    period). A `period` is always a `Period` in this package; what names one is a `spec` (a string) or,
    stored, a `period_key`."""
    if spec in (None, "week", "month") and since is None and until is None:
        return reported_period(store, spec or "week", today, follow_store)
    chosen = resolve_period(spec, since, until, today)
    _warn_if_partial(chosen, store_coverage(store))  # asked for by name: reported, but said to be partial
    return chosen


def write_digest(
    store: Store,
    settings: Settings,
    period: Period,
    formats: list[str] | None = None,
    run_id: int | None = None,
    asked: DigestAsks | None = None,
) -> DigestResult:
    """Render the digest of `period` (`choose_period` makes one of what a user asked for) to
    settings.paths.reports and record it; it is never mailed here (report/channels.py `deliver` is
    where mail leaves).

    Markdown is always written (it is the source of truth); `formats` may add "html". Re-rendering a
    period overwrites its files and updates its one `digests` row. `asked`: what the ask step before
    it (report/asks.py) got from the LLM; the digest itself calls none.

    A reader of the period's outcomes: the caller settled them first (`settle_period`, the pipeline's
    outcomes step), and a missing or stale one raises OutcomesNotStored, never a verdict computed here.
    """
    wanted = ["md", *[f for f in (formats or settings.report.formats) if f != "md"]]
    digest = gather_digest(store, settings, period, asked)
    stats = digest.summary.as_stats() | {"lines": len(digest.lines)}  # counted before folding
    fold_large_library(digest)
    texts = {fmt: render(digest, fmt, settings) for fmt in wanted}
    paths = {fmt: Path(settings.paths.reports) / f"{period.stem}.{fmt}" for fmt in wanted}
    sha = content_hash(texts["md"], digest)
    fields = {
        "markdown_path": str(paths["md"]),
        "content_sha256": sha,
        "stats": stats,
        "created_at": digest.generated_at,
        "run_id": run_id,
    }
    if "html" in paths:  # an earlier rendering's HTML stays recorded when this one writes none
        fields["html_path"] = str(paths["html"])

    def record() -> int:
        with store.session() as s:
            return save_digest(s, period.key, period.start, period.end, fields).id

    # Files and row together: a full disk or a failed database write leaves neither (files.py).
    digest_id = write_together({paths[fmt]: texts[fmt] for fmt in wanted}, record)
    result = DigestResult(period, digest_id, paths, stats, sha)
    write_feed(store, settings)
    return result
