"""An Atom feed of the digests (`reports/feed.xml`), rewritten after each digest, newest first.

Feed readers are how many researchers follow such tools. Each entry is one period's digest: its
title, when it was rendered, a one-line summary (verdicts changed, new evidence, for review) and links
to its Markdown and HTML files, relative to the feed so the reports folder can be served as is.
"""

from __future__ import annotations

import datetime as dt
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


def _summary(stats: dict[str, object]) -> str:
    verdicts = stats.get("verdicts") or {}
    counts = ", ".join(f"{n} {status.lower()}" for status, n in verdicts.items() if n)  # type: ignore[union-attr]
    changed = int(stats.get("changed", 0) or 0)  # type: ignore[call-overload]
    verdicts_changed = f"{changed} verdict{'' if changed == 1 else 's'} changed"
    evidence = stats.get("evidence") or {}
    # The digest's own totals sentence (EvidenceSummary.totals_sentence), never a second count.
    totals = f" {evidence['sentence']}." if isinstance(evidence, dict) and "sentence" in evidence else ""
    return (
        f"{verdicts_changed}; {stats.get('new_evidence', 0)} new evidence; "
        f"{stats.get('for_review', 0)} for review. Claims: {counts or 'none'}.{totals}"
    )


def feed_xml(store: Store, settings: Settings, reports: Path) -> bytes:
    """The feed's XML for every digest row, newest period first."""
    ET.register_namespace("", ATOM)
    feed = ET.Element(f"{{{ATOM}}}feed")
    ET.SubElement(feed, f"{{{ATOM}}}title").text = settings.report.title
    ET.SubElement(feed, f"{{{ATOM}}}id").text = f"urn:claim-monitor:{settings.report.title}"
    ET.SubElement(feed, f"{{{ATOM}}}link", rel="self", href=FEED_NAME)
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
        ET.SubElement(entry, f"{{{ATOM}}}id").text = f"urn:claim-monitor:digest:{key}"
        ET.SubElement(entry, f"{{{ATOM}}}updated").text = _stamp(created)
        ET.SubElement(entry, f"{{{ATOM}}}summary").text = _summary(stats)
        for path, kind in ((html, "text/html"), (markdown, "text/markdown")):
            if path:
                href = Path(path).name if Path(path).resolve().parent == reports.resolve() else path
                ET.SubElement(entry, f"{{{ATOM}}}link", rel="alternate", type=kind, href=href)
    return ET.tostring(feed, encoding="utf-8", xml_declaration=True)


def write_feed(store: Store, settings: Settings) -> Path:
    reports = Path(settings.paths.reports)
    path = reports / FEED_NAME
    write_atomic(path, feed_xml(store, settings, reports).decode("utf-8"))
    return path
