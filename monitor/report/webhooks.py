"""Posting a digest's summary to webhooks: Slack-compatible incoming webhooks and a generic JSON POST.

What goes out: the period, its verdict changes (claim id, text, from, to, the paper that moved it),
the new evidence and review counts, how many of the period's candidate pairs were judged, whether the
digest is final, and a link to the claim board (`report.board_url`) or to the digest file (under
`report.public_url`, as the feed links it). The JSON body is documented in docs/operations.md
(schema `claim-monitor.digest-summary/1`); the Slack body is built from it.

Once per period and webhook: a post the server took (2xx) is recorded in the digest's stats
(WEBHOOKS_POSTED, kept when the digest is re-rendered), so a rerun does not post it again; `force`
does. A digest that is not final (most of its pairs failed) is not posted, as it is not mailed.
Temporary failures (no connection, a timeout before the request went out, 408/409/429/5xx) are retried
with exponential back-off, never sooner than a Retry-After asks; a permanent 4xx is not. One silence is
neither: the whole request went out and no answer came (a slow gateway that stores the body and answers
after our timeout). That may be a delivery, as with mail (delivery.py): not retried, recorded under
WEBHOOKS_POSTED with `"unconfirmed"` (so later runs skip it and say why) and exit 8; `force` posts again.

A webhook's URL carries its token (a Slack URL's path is the secret), so messages name a webhook by its
`name`, or its kind and host, never by its path or query; headers are never logged.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import ipaddress
import json
import logging
import os
import socket
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from monitor import __version__
from monitor.config import Settings, WebhookSettings
from monitor.errors import ConfigError, MonitorError
from monitor.llm.retry import retry_after_seconds, safe_url, server_failure
from monitor.report.delivery import DeliveryError, is_final, period_of, report_args
from monitor.report.feed import digest_url, summary_line
from monitor.report.gather import gather_digest
from monitor.report.period import Period
from monitor.report.views import DigestView, EvidenceView
from monitor.store.db import Store
from monitor.store.digests import WEBHOOKS_POSTED
from monitor.store.models import utcnow
from monitor.store.records import Digest as DigestRow
from monitor.testhooks import pause_at

log = logging.getLogger(__name__)

# 2: the verdict UNSETTLED (papers count, none strong enough) is told apart from UNTESTED (none counts),
# and `verdict_meanings` says what each name means.
SCHEMA = "claim-monitor.digest-summary/2"
# Slack caps a section's text at 3000 characters: the first changes are listed, the rest counted.
SLACK_CHANGES_SHOWN = 10
# A server that asks to wait longer than this is not waited for: the next run posts the digest.
MAX_RETRY_AFTER_SECONDS = 300.0
USER_AGENT = f"claim-monitor/{__version__}"


@dataclass(frozen=True)
class Hook:
    """A configured webhook with its URL resolved; `shown` names it in messages without its secret."""

    config: WebhookSettings
    url: str
    key: str  # what the digest's record files it under: its name, or its kind and a hash of the URL
    shown: str


class HookFailed(Exception):
    """One failed post: `status` None for no answer at all; `response` carries the reply's headers;
    `permanent` for what no retry fixes though the server never answered (an untrusted certificate);
    `unanswered` when the whole request went out and no answer came (maybe delivered: not retried)."""

    def __init__(
        self,
        what: str,
        status: int | None = None,
        response: Any = None,
        permanent: bool = False,
        unanswered: bool = False,
    ):
        super().__init__(what)
        self.status, self.response, self.permanent = status, response, permanent
        self.unanswered = unanswered


class MaybePosted(DeliveryError):
    """The whole request went out but no answer came: the server may have taken the digest (exit 8)."""


def resolve_hooks(settings: Settings) -> list[Hook]:
    """The configured webhooks with their URLs (from `url` or the environment variable `url_env`)."""
    hooks = []
    for i, config in enumerate(settings.report.webhooks):
        where = f"report.webhooks[{i}]" + (f" ({config.name})" if config.name else "")
        if config.url is not None:
            url = config.url.get_secret_value()
        else:
            url = os.environ.get(config.url_env or "", "")
            if not url:
                raise ConfigError(f"{where}: environment variable {config.url_env} (its URL) is not set")
        _check_url(where, url, config.allow_private_network)  # never shows the URL: its path is the secret
        digest = hashlib.sha256(url.encode()).hexdigest()[:12]
        key = config.name or f"{config.kind}-{digest}"
        shown = f"{config.kind} webhook " + (config.name or f"at {safe_url(url, path=False)}")
        hooks.append(Hook(config, url, key, shown))
    return hooks


def _check_url(where: str, url: str, allow_private: bool) -> None:
    """Refuse a URL urllib cannot post to as written (its own errors would quote the path, or fail as a
    DNS error), or should not post to (a local or private address, unless allowed)."""
    if any(ch <= " " or ch == "\x7f" or not ch.isascii() for ch in url):
        raise ConfigError(
            f"{where}: the URL contains a space, control or non-ASCII character; percent-encode it"
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{where}: the URL is not an http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            f"{where}: the URL carries a user name or password (user:password@), which is not sent as "
            "credentials; give them in the webhook's `headers` (e.g. Authorization) instead"
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ConfigError(f"{where}: the URL's port is not a number from 0 to 65535") from None
    if not allow_private:
        _check_address(where, parts.hostname, port)


def _check_address(where: str, host: str, port: int) -> None:
    """Refuse a host that resolves to a loopback, link-local, private, reserved or multicast address (a
    service on this machine or its network: an admin port, a cloud metadata address). Checked when the
    webhooks are resolved, before each command's posts; a name that does not resolve now is left to the
    post, which fails and says so."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return
    for *_, sockaddr in found:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address.is_global and not address.is_multicast:
            continue
        kind = next((name for name, hit in _ADDRESS_KINDS if getattr(address, hit)), "private or reserved")
        raise ConfigError(
            f"{where}: its host {host} resolves to a {kind} address ({address}); webhooks are not posted to "
            "loopback, link-local or private addresses unless the webhook sets allow_private_network = true"
        )


_ADDRESS_KINDS = (
    ("loopback", "is_loopback"),
    ("link-local", "is_link_local"),
    ("unspecified", "is_unspecified"),
    ("multicast", "is_multicast"),
)


# --- what is posted ----------------------------------------------------------------------------------


def summary_payload(
    digest: DigestView, stats: dict[str, Any], links: dict[str, str | None]
) -> dict[str, Any]:
    """The generic JSON body (SCHEMA; docs/operations.md)."""
    s = digest.summary
    changes = [
        {
            "claim_id": c.id,
            "text": c.text,
            "from": c.previous_status,
            "to": c.status,
            "paper": None if c.moved_by is None else _paper(c.moved_by),
        }
        for c in s.changed
    ]
    return {
        "schema": SCHEMA,
        "title": digest.title,
        "summary": summary_line(stats),
        "period": {
            "key": digest.period.key,
            "label": digest.period.label,
            "start": digest.period.start.isoformat(),
            "end": digest.period.end.isoformat(),
        },
        "final": s.final,
        "judging": s.judging._asdict(),
        "counts": {
            "verdicts": dict(s.counts),
            "verdict_changes": len(s.changed),
            "new_evidence": s.new_evidence,
            "for_review": s.for_review,
            "papers_published": s.papers_published,
            "pairs_judged": s.pairs_judged,
        },
        "verdict_changes": changes,
        "verdict_meanings": digest.meanings,
        "links": links,
    }


def _paper(view: EvidenceView) -> dict[str, str]:
    return {"arxiv_id": view.item.arxiv_id, "title": view.item.title, "url": view.url}


def _escape(text: str) -> str:
    """Slack mrkdwn's three control characters (paper titles and claims are untrusted text)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _link(url: str | None, label: str) -> str:
    if not url:
        return ""
    if url.startswith(("http://", "https://")):
        return f"<{_escape(url)}|{label}>"
    return f"{label}: `{_escape(url)}`"  # a file:// address: not a link in Slack, but where to look


def _change_line(change: dict[str, Any]) -> str:
    words = change["text"].split()
    text = " ".join(words[:25]) + (" …" if len(words) > 25 else "")
    line = f"• `{_escape(change['claim_id'])}` {change['from']} → *{change['to']}*: {_escape(text)}"
    paper = change["paper"]
    if paper:
        line += f" ({_link(paper['url'], 'arXiv:' + _escape(paper['arxiv_id']))})"
    return line


def slack_payload(summary: dict[str, Any]) -> dict[str, Any]:
    """A Slack incoming-webhook body: `text` (the notification) and mrkdwn `blocks`."""
    period, judging = summary["period"], summary["judging"]
    head = f"{summary['title']}: {period['label']}"
    blocks: list[dict[str, Any]] = [_section(f"*{_escape(head)}*\n{_escape(summary['summary'])}")]
    changes = summary["verdict_changes"]
    if changes:
        lines = [_change_line(c) for c in changes[:SLACK_CHANGES_SHOWN]]
        if len(changes) > SLACK_CHANGES_SHOWN:
            lines.append(f"…and {len(changes) - SLACK_CHANGES_SHOWN} more in the digest")
        blocks.append(_section("*Verdict changes*\n" + "\n".join(lines)))
    judged = f"Judged {judging['judged']} of the period's {judging['pairs']} candidate pairs"
    if not summary["final"]:
        judged += f" (NOT FINAL: {judging['failed']} failed, {judging['parked']} parked)"
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": judged}]})
    links = summary["links"]
    shown = [_link(links.get("board"), "Open the claim board"), _link(links.get("digest"), "Read the digest")]
    if any(shown):
        blocks.append(_section(" · ".join(s for s in shown if s)))
    return {"text": f"{head}: {summary['summary']}", "blocks": blocks}


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


# --- posting ------------------------------------------------------------------------------------------


def _scrub(text: str, url: str) -> str:
    """`text` without the URL or its path and query, should an error message quote them."""
    parts = urlsplit(url)
    for secret in (url, parts.path + ("?" + parts.query if parts.query else ""), parts.query):
        # as written, and as a repr() in an error message would show it
        for form in (secret, secret.encode("unicode_escape").decode("ascii")):
            if len(form) > 1:
                text = text.replace(form, "…")
    return text


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A webhook that redirects is misconfigured: urllib would turn the POST into a GET without the body
    (and could carry the request elsewhere), so a 3xx is an HTTPError like any refusal."""

    def redirect_request(self, *_args: Any, **_kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def post_once(hook: Hook, body: bytes) -> int:
    """One POST; the status of a 2xx answer, else HookFailed."""
    headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": USER_AGENT}
    headers |= {name: value.get_secret_value() for name, value in hook.config.headers.items()}
    request = urllib.request.Request(hook.url, data=body, headers=headers, method="POST")
    try:
        with _OPENER.open(request, timeout=hook.config.timeout_seconds) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        what = f"HTTP {exc.code}"
        with contextlib.suppress(OSError, http.client.HTTPException):  # the reason, when the body says one
            detail = " ".join(exc.read(200).decode("utf-8", "replace").split())
            what += f" {_scrub(detail, hook.url)}" if detail else ""
        exc.close()
        raise HookFailed(what, exc.code, exc) from None
    except urllib.error.URLError as exc:  # while connecting or sending: the request did not (all) go out
        reason = exc.reason
        what = _scrub(f"{type(reason).__name__}: {reason}", hook.url)
        raise HookFailed(what, permanent=isinstance(reason, ssl.SSLCertVerificationError)) from None
    except (OSError, http.client.HTTPException) as exc:
        # urllib wraps what fails while connecting and sending in URLError (above); what fails after,
        # while waiting for the status line (a timeout, a dropped connection, a garbled answer), comes as
        # it is: the whole request went out, and the server may have taken it.
        what = _scrub(f"{type(exc).__name__}: {exc}", hook.url)
        unanswered = isinstance(exc, OSError | http.client.BadStatusLine)
        raise HookFailed(what, unanswered=unanswered) from None


def is_transient(exc: BaseException) -> bool:
    """Worth another try: no answer (connection, timeout) or a server failure, unless it asks for a wait
    longer than MAX_RETRY_AFTER_SECONDS."""
    if not isinstance(exc, HookFailed) or exc.permanent or exc.unanswered:
        return False
    if exc.status is not None and not server_failure(exc.status):
        return False
    return (retry_after_seconds(exc) or 0.0) <= MAX_RETRY_AFTER_SECONDS


def post(hook: Hook, body: bytes) -> int:
    """`post_once` with retries on temporary failures; DeliveryError when the server never took it."""
    cfg = hook.config
    backoff = wait_exponential(multiplier=cfg.retry_wait_seconds, max=max(cfg.retry_wait_seconds * 16, 1))

    def wait(state: RetryCallState) -> float:  # never sooner than the server asked
        failure = state.outcome.exception() if state.outcome else None
        return max(backoff(state), retry_after_seconds(failure) or 0.0) if failure else backoff(state)

    attempts = Retrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(cfg.max_retries + 1),
        wait=wait,
        before_sleep=lambda state: log.warning(
            "%s: attempt %d failed (%s); retrying",
            hook.shown,
            state.attempt_number,
            state.outcome.exception() if state.outcome else "",
        ),
        reraise=True,
    )
    try:
        return attempts(post_once, hook, body)
    except HookFailed as exc:
        if exc.unanswered:
            raise MaybePosted(
                f"{hook.shown} gave no answer after the digest was sent ({exc}): it may have been delivered"
            ) from None
        asked = retry_after_seconds(exc)
        why = f", and asks to wait {asked:.0f} s" if asked and asked > MAX_RETRY_AFTER_SECONDS else ""
        raise DeliveryError(f"{hook.shown} did not take the digest: {exc}{why}") from None


def notify_digest(store: Store, settings: Settings, digest_id: int, force: bool = False) -> list[str]:
    """Post a recorded digest's summary to every configured webhook that has not had it (all with
    `force`). Returns the webhooks posted to; DeliveryError (8) names those that failed, after the
    others were tried. Reads its period's outcomes as the caller settled them (report/channels.py)."""
    hooks = resolve_hooks(settings)
    if not hooks:
        raise ConfigError("report.webhooks is empty: nowhere to post the digest")
    with store.session() as s:
        row = s.get(DigestRow, digest_id)
        if row is None:
            raise MonitorError(f"no digest with id {digest_id}")
        key, stats, final = row.period_key, dict(row.stats or {}), is_final(row)
        period, files = period_of(row), (row.html_path, row.markdown_path)
    if not final and not force:
        log.warning("digest %s is not final (the judge failed on most pairs); not posted to webhooks", key)
        return []
    posted_before = stats.get(WEBHOOKS_POSTED) or {}
    due = _due(hooks, stats, force)
    for hook in (h for h in hooks if h not in due):
        note = posted_before[hook.key]
        if note.get("unconfirmed"):
            log.warning("%s", _unconfirmed(key, hook, note))
        else:
            log.info("digest %s already posted to %s at %s", key, hook.shown, note.get("at"))
    if not due:
        return []
    pause_at("deliver:webhook")  # test-only: between deciding to post and posting (the race window)
    summary = summary_payload(gather_digest(store, settings, period), stats, _links(settings, files))
    bodies = {"json": summary, "slack": slack_payload(summary)}
    return _post_all(store, digest_id, key, due, bodies)


def _post_all(
    store: Store, digest_id: int, key: str, due: list[Hook], bodies: dict[str, dict[str, Any]]
) -> list[str]:
    """Post to each webhook due, recording each answer (or silence) at once; DeliveryError after all."""
    posted: list[str] = []
    failed: list[str] = []
    maybe: list[str] = []
    for hook in due:
        log.info("posting digest %s to %s", key, hook.shown)
        try:
            status = post(hook, json.dumps(bodies[hook.config.kind]).encode("utf-8"))
        except MaybePosted as exc:  # recorded, so no later run posts a second copy on its own
            _record(store, digest_id, hook.key, None, unconfirmed=str(exc))
            maybe.append(str(exc))
            continue
        except DeliveryError as exc:
            failed.append(str(exc))
            continue
        _record(store, digest_id, hook.key, status)
        posted.append(hook.shown)
    if failed or maybe:
        again = (
            f"`monitor report {report_args(key)} --notify` posts it again, as does the next "
            "`monitor run` that reports this period"
        )
        hints = ([again] if failed else []) + ([_resend_hint(key)] if maybe else [])
        raised = DeliveryError if failed else MaybePosted
        raise raised(f"digest {key}: {'; '.join(failed + maybe)}; {'; '.join(hints)}")
    return posted


def _resend_hint(period_key: str) -> str:
    return (
        "not posted again by later runs: check what the webhook received, and "
        f"`monitor report {report_args(period_key)} --notify --force` posts it again"
    )


def _unconfirmed(period_key: str, hook: Hook, note: dict[str, Any]) -> str:
    return (
        f"digest {period_key}: the post to {hook.shown} at {note.get('at')} got no answer after it went "
        f"out, so it may have been delivered; {_resend_hint(period_key)}"
    )


def unconfirmed_posts(store: Store, settings: Settings, digest_id: int) -> list[str]:
    """A warning for each configured webhook whose post of this digest may have been delivered (no answer
    came after it went out), which `notify_digest` therefore skips until `force`."""
    with store.session() as s:
        row = s.get(DigestRow, digest_id)
        if row is None:
            return []
        key, notes = row.period_key, dict((row.stats or {}).get(WEBHOOKS_POSTED) or {})
    hooks = resolve_hooks(settings)
    return [_unconfirmed(key, h, notes[h.key]) for h in hooks if (notes.get(h.key) or {}).get("unconfirmed")]


def posts_due(store: Store, settings: Settings, digest_id: int, force: bool = False) -> Period | None:
    """The period of a recorded digest `notify_digest` would post now to some webhook (None: to none,
    or there is no such digest), so its caller settles that period's outcomes only for a digest read."""
    with store.session() as s:
        row = s.get(DigestRow, digest_id)
        if row is None or not (force or is_final(row)) or not _due(resolve_hooks(settings), row.stats, force):
            return None
        return period_of(row)


def _due(hooks: list[Hook], stats: dict[str, Any] | None, force: bool) -> list[Hook]:
    """The webhooks that have not had the digest (all with `force`)."""
    posted_before = (stats or {}).get(WEBHOOKS_POSTED) or {}
    return [h for h in hooks if force or h.key not in posted_before]


def _links(settings: Settings, files: tuple[str | None, ...]) -> dict[str, str | None]:
    path = next((p for p in files if p), None)
    return {"board": settings.report.board_url, "digest": digest_url(settings, path) if path else None}


def _record(store: Store, digest_id: int, key: str, status: int | None, unconfirmed: str = "") -> None:
    """Note the post at once, so a failure of the next webhook does not make a rerun post this one again;
    `unconfirmed`: why it may have been delivered though no answer came (status None)."""
    with store.session() as s:
        row = s.get(DigestRow, digest_id)
        assert row is not None
        stats = dict(row.stats or {})
        posted = dict(stats.get(WEBHOOKS_POSTED) or {})
        posted[key] = {"at": utcnow().isoformat(), "status": status}
        if unconfirmed:
            posted[key]["unconfirmed"] = unconfirmed
        row.stats = {**stats, WEBHOOKS_POSTED: posted}
