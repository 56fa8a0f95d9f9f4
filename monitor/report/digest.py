"""The digest: render a period's view-model (gather.py), write it, record it, and send it when asked.

Imports go one way: this module -> delivery.py (sending) -> gather.py (the view-model).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.config import Settings
from monitor.files import write_together
from monitor.report.budget import fold_large_library
from monitor.report.delivery import DeliveryError, raise_failures, send_digest
from monitor.report.feed import write_feed
from monitor.report.gather import gather_digest
from monitor.report.period import Period, resolve_period
from monitor.report.render import fmt_date, render
from monitor.report.views import Digest
from monitor.report.webhooks import notify_digest
from monitor.store.db import Store
from monitor.store.digests import save_digest
from monitor.store.papers import newest_published
from monitor.store.runs import RunRecord

log = logging.getLogger(__name__)


@dataclass
class DigestResult:
    """What `write_digest` did."""

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


def content_hash(markdown: str, digest: Digest) -> str:
    """sha256 of the Markdown without its generation time, so it changes only when the content does."""
    return hashlib.sha256(markdown.replace(fmt_date(digest.generated_at), "").encode()).hexdigest()


# A store whose newest paper is older than this before the default period is a snapshot or a
# replayed history (e.g. `monitor fetch --source sample`), not a live feed that had a quiet week.
STALE_STORE_DAYS = 14


def _data_today(store: Store, spec: str, today: dt.date) -> dt.date:
    """The day the default period is counted back from: today, or just after the store's newest paper.

    A live deployment reports the last complete week even when it was empty (the digest says so).
    A store filled from a snapshot ends months ago; its default digest is its own last period.
    """
    default = resolve_period(spec, None, None, today)
    with store.session() as s:
        newest = newest_published(s)
    if newest is None or newest >= default.start - dt.timedelta(days=STALE_STORE_DAYS):
        return today
    shifted = newest + dt.timedelta(days=7) if spec == "week" else _first_of_next_month(newest)
    # Information, not a warning: a snapshot store is reported as intended (the period printed says which).
    log.info("newest stored paper is from %s; reporting the period that holds it, not the last one", newest)
    return shifted


def reported_period(
    store: Store, spec: str = "week", today: dt.date | None = None
) -> Period:
    """The period a default digest (`spec` week or month) reports: the last complete one, or for a store
    filled from a snapshot the one holding its newest paper (`_data_today`)."""
    today = _data_today(store, spec, today or dt.datetime.now(dt.UTC).date())
    return resolve_period(spec, None, None, today)


def _first_of_next_month(day: dt.date) -> dt.date:
    return (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)


def write_digest(
    store: Store,
    settings: Settings,
    period: str | Period | None = "week",
    since: dt.date | None = None,
    until: dt.date | None = None,
    formats: list[str] | None = None,
    run: RunRecord | None = None,
    force: bool = False,
    email: bool | None = None,
    today: dt.date | None = None,
    notify: bool = False,
) -> DigestResult:
    """Render the period's digest to settings.paths.reports and record it; optionally email it.

    Markdown is always written (it is the source of truth); `formats` may add "html". Re-rendering a
    period overwrites its files and updates its one `digests` row. With `email` (default
    settings.report.email) the digest is sent unless it was already sent for this period (`force` resends);
    with `notify` its summary is posted to report.webhooks, once per period and webhook too. A failed
    send raises DeliveryError (8) after both were tried; the digest stays written.
    """
    default_period = not isinstance(period, Period) and period in (None, "week", "month")
    if default_period and since is None and until is None:
        chosen = reported_period(store, period or "week", today)
    else:
        chosen = period if isinstance(period, Period) else resolve_period(period, since, until, today)
    wanted = ["md", *[f for f in (formats or settings.report.formats) if f != "md"]]
    digest = gather_digest(store, settings, chosen, run)
    stats = digest.summary.as_stats() | {"lines": len(digest.lines)}  # counted before folding
    fold_large_library(digest)
    texts = {fmt: render(digest, fmt, settings) for fmt in wanted}
    paths = {fmt: Path(settings.paths.reports) / f"{chosen.stem}.{fmt}" for fmt in wanted}
    sha = content_hash(texts["md"], digest)
    fields = {
        "markdown_path": str(paths["md"]),
        "content_sha256": sha,
        "stats": stats,
        "created_at": digest.generated_at,
        "run_id": run.id if run else None,
    }
    if "html" in paths:  # an earlier rendering's HTML stays recorded when this one writes none
        fields["html_path"] = str(paths["html"])

    def record() -> int:
        with store.session() as s:
            return save_digest(s, chosen.key, chosen.start, chosen.end, fields).id

    # Files and row together: a full disk or a failed database write leaves neither (files.py).
    digest_id = write_together({paths[fmt]: texts[fmt] for fmt in wanted}, record)
    result = DigestResult(chosen, digest_id, paths, stats, sha)
    write_feed(store, settings)
    if run is not None:
        run.add("report", {"period": chosen.key, **{k: v for k, v in stats.items() if k != "verdicts"}})
    failures: list[DeliveryError] = []
    try:
        if settings.report.email if email is None else email:
            result.sent = send_digest(store, settings, digest_id, force=force)
    except DeliveryError as exc:  # the webhooks are still tried
        failures.append(exc)
    try:
        if notify:
            result.posted = notify_digest(store, settings, digest_id, force=force)
    except DeliveryError as exc:
        failures.append(exc)
    raise_failures(failures)
    return result
