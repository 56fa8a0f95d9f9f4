"""Sending a digest by SMTP (STARTTLS, SSL or plain), with retries, at most once per period.

A digest is marked sent (`digests.sent_at`) only after the server accepted the message. If the server
accepts it for some recipients and refuses others, it *is* sent (those accepted have it, and sending
again would give them a duplicate): the accepted addresses are recorded, the refused ones are logged
and kept in the digest's stats, and `--force` resends to everyone. Temporary failures (connection
errors, timeouts, 4xx replies) are retried with exponential back-off; permanent ones (5xx, bad
credentials) are not. The password comes from MONITOR_SMTP_PASSWORD and is never logged.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
from email.message import EmailMessage

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from monitor.config import Settings
from monitor.errors import ConfigError, MonitorError
from monitor.report.email import build_message, message_id, subject_for
from monitor.report.gather import gather_digest
from monitor.report.period import Period, resolve_period
from monitor.report.render import render
from monitor.store.db import Store
from monitor.store.models import utcnow
from monitor.store.records import Digest as DigestRow

log = logging.getLogger(__name__)


class DeliveryError(MonitorError):
    """The mail server did not take the digest."""

    exit_code = 8


def _code(exc: BaseException) -> int | None:
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        codes = [code for code, _ in exc.recipients.values()]
        return max(codes) if codes else None
    return getattr(exc, "smtp_code", None)


def is_transient(exc: BaseException) -> bool:
    """Worth another try: dropped connections, timeouts, and 4xx ("try again later") replies."""
    if isinstance(exc, smtplib.SMTPAuthenticationError):
        return False
    if isinstance(exc, smtplib.SMTPServerDisconnected | smtplib.SMTPConnectError):
        return True
    code = _code(exc)
    if code is not None:
        return 400 <= code < 500
    return isinstance(exc, OSError) and not isinstance(exc, ssl.SSLCertVerificationError)


def _describe(exc: BaseException) -> str:
    code = _code(exc)
    if isinstance(exc, smtplib.SMTPResponseException):
        detail = (
            exc.smtp_error.decode(errors="replace") if isinstance(exc.smtp_error, bytes) else exc.smtp_error
        )
        return f"{code} {detail}".strip()
    return f"{exc.__class__.__name__}: {exc}" if code is None else f"{code} {exc}"


def _tls_context(settings: Settings) -> ssl.SSLContext:
    ca = settings.email.ca_file
    return ssl.create_default_context(cafile=str(ca) if ca else None)


def deliver(settings: Settings, msg: EmailMessage, recipients: list[str]) -> dict[str, tuple[int, bytes]]:
    """One attempt: connect, secure, log in, send. Returns the refused recipients (empty: all took it)."""
    cfg = settings.email
    if cfg.security == "ssl":
        conn: smtplib.SMTP = smtplib.SMTP_SSL(
            cfg.host, cfg.port, timeout=cfg.timeout_seconds, context=_tls_context(settings)
        )
    else:
        conn = smtplib.SMTP(cfg.host, cfg.port, timeout=cfg.timeout_seconds)
    with conn:
        conn.ehlo()
        if cfg.security == "starttls":
            conn.starttls(context=_tls_context(settings))
            conn.ehlo()
        if cfg.username:
            if cfg.password is None:
                raise ConfigError("email.username is set but no password: set MONITOR_SMTP_PASSWORD")
            conn.login(cfg.username, cfg.password.get_secret_value())
        return conn.send_message(msg, from_addr=cfg.sender, to_addrs=recipients)


def send_message(
    settings: Settings, msg: EmailMessage, recipients: list[str]
) -> dict[str, tuple[int, bytes]]:
    """`deliver` with retries on temporary failures; DeliveryError when the server never took it."""
    cfg = settings.email
    attempts = Retrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(cfg.max_retries + 1),
        wait=wait_exponential(multiplier=cfg.retry_wait_seconds, max=max(cfg.retry_wait_seconds * 16, 1)),
        before_sleep=lambda state: log.warning(
            "SMTP %s:%s attempt %d failed (%s); retrying",
            cfg.host,
            cfg.port,
            state.attempt_number,
            _describe(state.outcome.exception()),
        ),
        reraise=True,
    )
    try:
        return attempts(deliver, settings, msg, recipients)
    except MonitorError:
        raise
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(
            f"mail server {cfg.host}:{cfg.port} did not accept the digest: {_describe(exc)}"
        ) from None


def period_of(row: DigestRow) -> Period:
    if ".." in row.period_key:
        return Period("custom", row.period_start, row.period_end)
    return resolve_period(row.period_key)


def is_final(row: DigestRow) -> bool:
    """Whether the recorded digest rests on most of its period's pairs (views.Summary.final)."""
    return bool((row.stats or {}).get("final", True))


def send_digest(store: Store, settings: Settings, digest_id: int, force: bool = False) -> bool:
    """Email a recorded digest. False when it was already sent for its period and `force` is not set."""
    recipients = list(settings.email.recipients)
    if not recipients:
        raise ConfigError("email.recipients is empty: nobody to send the digest to")
    with store.session() as s:
        row = s.get(DigestRow, digest_id)
        if row is None:
            raise MonitorError(f"no digest with id {digest_id}")
        if row.sent_at is not None and not force:
            log.info("digest %s already sent at %s; not sending again", row.period_key, row.sent_at)
            return False
        if not is_final(row) and not force:
            # Most of its pairs failed or were parked: mailing it would read as news; a later run
            # that judges them rewrites the digest, and that one is mailed.
            log.warning("digest %s is not final (the judge failed on most pairs); not mailed", row.period_key)
            return False
        period = period_of(row)
        msg_id = message_id(settings, row.period_key, recipients)
        earlier = (row.stats or {}).get("email_attempt")
        if earlier and row.sent_at is None:
            # Killed after the server took it but before we saved that? Then this is a duplicate,
            # with the same Message-ID so it can be recognised as one.
            log.warning(
                "digest %s: an earlier send at %s may have been delivered; sending again as %s",
                row.period_key,
                earlier.get("at"),
                msg_id,
            )
        # Record the attempt before the message leaves, so a crash after the server's 250 is known.
        row.stats = {**(row.stats or {}), "email_attempt": {"at": utcnow().isoformat(), "message_id": msg_id}}
    digest = gather_digest(store, settings, period)
    msg = build_message(
        settings,
        subject_for(digest, settings),
        render(digest, "txt", settings),
        render(digest, "html", settings),
        recipients,
        msg_id=msg_id,
    )
    log.info(
        "sending digest %s to %d recipient(s) via %s:%s",
        period.key,
        len(recipients),
        settings.email.host,
        settings.email.port,
    )
    refused = send_message(settings, msg, recipients)
    accepted = [r for r in recipients if r not in refused]
    if refused:
        log.warning(
            "digest %s: server refused %s; sent to the other %d",
            period.key,
            ", ".join(f"{r} ({_describe_refusal(v)})" for r, v in refused.items()),
            len(accepted),
        )
    with store.session() as s:
        row = s.get(DigestRow, digest_id)
        assert row is not None
        row.sent_at = utcnow()
        row.recipients = accepted
        row.stats = {**(row.stats or {}), "email_refused": sorted(refused)}
    return True


def _describe_refusal(value: tuple[int, bytes]) -> str:
    code, text = value
    return f"{code} {text.decode(errors='replace') if isinstance(text, bytes) else text}"
