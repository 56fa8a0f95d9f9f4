"""An Atom feed of the digests (`reports/feed.xml`), rewritten after each digest, newest first.

Feed readers are how many researchers follow such tools. Each entry is one period's digest: its
title, when it was rendered, a one-line summary (verdicts changed, new evidence, for review) and links
to its Markdown and HTML files. Atom wants absolute links and URI ids: links start with
`report.public_url` (where the reports folder is served), else the folder's file:// URI; the feed's and
each entry's id is a `urn:uuid:` derived from the feed's own address (and the period), so it stays the
same from one rewrite to the next.
"""

from __future__ import annotations

import datetime as dt
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

from monitor.config import Settings
from monitor.files import write_atomic
from monitor.store.db import Store
from monitor.store.digests import recent_digests

ATOM = "http://www.w3.org/2005/Atom"
FEED_NAME = "feed.xml"
MAX_ENTRIES = 100


def _stamp(moment: dt.datetime) -> str:
    return moment.replace(microsecond=0).isoformat() + "Z"  # stored times are naive UTC


def summary_line(stats: dict[str, object]) -> str:
    """A digest's news in one line, from its recorded stats: the feed entry's summary, a webhook's text."""
    verdicts = stats.get("verdicts") or {}
    counts = ", ".join(f"{n} {status.lower()}" for status, n in verdicts.items() if n)  # type: ignore[union-attr]
    changed = int(stats.get("changed", 0) or 0)  # type: ignore[call-overload]
    verdicts_changed = f"{changed} verdict{'' if changed == 1 else 's'} changed"
    evidence = stats.get("evidence") or {}
    # The digest's own totals sentence (views.Summary.evidence_sentence), never a second count.
    totals = f" {evidence['sentence']}." if isinstance(evidence, dict) and "sentence" in evidence else ""
    return (
        f"{verdicts_changed}; {stats.get('new_evidence', 0)} new evidence; "
        f"{stats.get('for_review', 0)} for review. Claims: {counts or 'none'}.{totals}"
    )


def _folder_url(settings: Settings, reports: Path) -> str:
    """The reports folder's address, ending in '/'."""
    base = settings.report.public_url or reports.resolve().as_uri()
    return base if base.endswith("/") else base + "/"


def _href(path: str, reports: Path, folder: str) -> str:
    """An absolute link to a digest file: under the folder's address when it lies in the folder."""
    resolved = Path(path).resolve()
    return folder + resolved.name if resolved.parent == reports.resolve() else resolved.as_uri()


def digest_url(settings: Settings, path: str) -> str:
    """An absolute link to a digest file, as the feed gives it."""
    reports = Path(settings.paths.reports)
    return _href(path, reports, _folder_url(settings, reports))


def _uri_id(address: str) -> str:
    return f"urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, address)}"


def feed_xml(store: Store, settings: Settings, reports: Path) -> bytes:
    """The feed's XML for every digest row, newest period first."""
    ET.register_namespace("", ATOM)
    folder = _folder_url(settings, reports)
    self_url = folder + FEED_NAME
    feed = ET.Element(f"{{{ATOM}}}feed")
    ET.SubElement(feed, f"{{{ATOM}}}title").text = settings.report.title
    ET.SubElement(feed, f"{{{ATOM}}}id").text = _uri_id(self_url)
    ET.SubElement(feed, f"{{{ATOM}}}link", rel="self", href=self_url)
    ET.SubElement(ET.SubElement(feed, f"{{{ATOM}}}author"), f"{{{ATOM}}}name").text = "claim-monitor"
    with store.session() as s:
        entries = [
            (r.period_key, r.created_at, r.markdown_path, r.html_path, dict(r.stats or {}))
            for r in recent_digests(s, MAX_ENTRIES)
        ]
    updated = max((created for _, created, *_ in entries), default=dt.datetime(1970, 1, 1))
    ET.SubElement(feed, f"{{{ATOM}}}updated").text = _stamp(updated)
    for key, created, markdown, html, stats in entries:
        entry = ET.SubElement(feed, f"{{{ATOM}}}entry")
        ET.SubElement(entry, f"{{{ATOM}}}title").text = f"{settings.report.title}: {key}"
        ET.SubElement(entry, f"{{{ATOM}}}id").text = _uri_id(f"{self_url}#{key}")
        ET.SubElement(entry, f"{{{ATOM}}}updated").text = _stamp(created)
        ET.SubElement(entry, f"{{{ATOM}}}summary").text = summary_line(stats)
        for path, kind in ((html, "text/html"), (markdown, "text/markdown")):
            if path:
                href = _href(path, reports, folder)
                ET.SubElement(entry, f"{{{ATOM}}}link", rel="alternate", type=kind, href=href)
    return ET.tostring(feed, encoding="utf-8", xml_declaration=True)


def write_feed(store: Store, settings: Settings) -> Path:
    reports = Path(settings.paths.reports)
    path = reports / FEED_NAME
    write_atomic(path, feed_xml(store, settings, reports).decode("utf-8"))
    return path
