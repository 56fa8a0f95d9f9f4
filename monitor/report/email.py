"""Building the digest email: multipart/alternative with a plain-text part and an HTML part."""

from __future__ import annotations

import hashlib
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from monitor.config import Settings


def subject_for(digest: object, settings: Settings) -> str:
    """E.g. "[claim-monitor] week 2026-W12 (…): 2 verdicts changed, 1 overturned"."""
    s = digest.summary  # type: ignore[attr-defined]
    changed = len(s.changed)
    parts = [f"{changed} verdict{'s' if changed != 1 else ''} changed" if changed else "no verdict changed"]
    if s.counts.get("OVERTURNED"):
        parts.append(f"{s.counts['OVERTURNED']} overturned")
    if s.counts.get("CONTESTED"):
        parts.append(f"{s.counts['CONTESTED']} contested")
    if s.new_evidence:
        parts.append(f"{s.new_evidence} new evidence")
    label = digest.period.label  # type: ignore[attr-defined]
    return f"{settings.email.subject_prefix} {label}: {', '.join(parts)}".strip()


def message_id(settings: Settings, period_key: str, recipients: list[str]) -> str:
    """The same for every send of one period's digest to one set of recipients.

    A rerun after a crash between the server's acceptance and our record of it sends the digest
    again; with the same Message-ID, mail servers and clients can recognise it as the same message.
    """
    domain = settings.email.sender.rpartition("@")[2] or "localhost"
    key = "\n".join([period_key, *sorted(r.strip().lower() for r in recipients)])
    return f"<digest-{period_key}-{hashlib.sha256(key.encode()).hexdigest()[:20]}@{domain}>"


def build_message(
    settings: Settings,
    subject: str,
    text: str,
    html: str,
    recipients: list[str] | None = None,
    msg_id: str | None = None,
) -> EmailMessage:
    """The message as sent: text/plain first (the fallback), then text/html."""
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = settings.email.sender
    msg["To"] = ", ".join(recipients if recipients is not None else settings.email.recipients)
    msg["Date"] = formatdate(localtime=False, usegmt=True)
    domain = settings.email.sender.rpartition("@")[2] or "localhost"
    msg["Message-ID"] = msg_id or make_msgid(domain=domain)
    msg.set_content(text, subtype="plain", charset="utf-8")
    msg.add_alternative(html, subtype="html", charset="utf-8")
    return msg
