"""Sending a digest by SMTP (STARTTLS, SSL or plain), with retries, at most once per period.

A digest is marked sent (`digests.sent_at`) only after the server accepted the message. If the server
accepts it for some recipients and refuses others, it *is* sent (those accepted have it, and sending
again would give them a duplicate): the accepted addresses are recorded, the refused ones are logged
and kept in the digest's stats, and `--force` resends to everyone. Temporary failures (connection
errors, timeouts, 4xx replies) are retried with exponential back-off; permanent ones (5xx, bad
credentials) are not. One silence is neither: the whole message went out and the server's answer
never came (it may have stored it and answered after our timeout). That may be a delivery, so it is
not retried; the digest's stats record it (`email_unconfirmed`) and later sends skip it until `force`.
The password comes from MONITOR_SMTP_PASSWORD and is never logged.
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
from monitor.store.digests import EMAIL_ATTEMPT, EMAIL_REFUSED, EMAIL_UNCONFIRMED
from monitor.store.models import utcnow
from monitor.store.records import Digest as DigestRow
from monitor.testhooks import pause_at

log = logging.getLogger(__name__)


class DeliveryError(MonitorError):
    """The mail server did not take the digest."""

    exit_code = 8


class MaybeDelivered(DeliveryError):
    """The whole message went out (DATA's final dot) but the server's answer never came.

    The server may well have stored it (a slow server answering after our timeout), so sending
    again could give every recipient a copy per try: it is not retried (see `send_digest`).
    """


class _Watched(smtplib.SMTP):
    """Notes when the message has left in full: what tells "refused" from "maybe delivered"."""

    body_sent = False

    def send(self, s: bytes | str) -> None:
        super().send(s)
        # data() sends the message as bytes ending in CRLF.CRLF; commands go as str.
        if isinstance(s, bytes) and s.endswith(b"\r\n.\r\n"):
            self.body_sent = True


class _WatchedSSL(_Watched, smtplib.SMTP_SSL):
    pass


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
        context = _tls_context(settings)
        conn: _Watched = _WatchedSSL(cfg.host, cfg.port, timeout=cfg.timeout_seconds, context=context)
    else:
        conn = _Watched(cfg.host, cfg.port, timeout=cfg.timeout_seconds)
    with conn:
        conn.ehlo()
        if cfg.security == "starttls":
            conn.starttls(context=_tls_context(settings))
            conn.ehlo()
        if cfg.username:
            if cfg.password is None:
                raise ConfigError("email.username is set but no password: set MONITOR_SMTP_PASSWORD")
            conn.login(cfg.username, cfg.password.get_secret_value())
        try:
            return conn.send_message(msg, from_addr=cfg.sender, to_addrs=recipients)
        except OSError as exc:  # smtplib's errors are OSErrors too
            if conn.body_sent and not isinstance(exc, smtplib.SMTPResponseException):
                # No answer after the whole message went: not a refusal, and maybe a delivery.
                raise MaybeDelivered(
                    f"mail server {cfg.host}:{cfg.port} gave no answer after the digest was sent "
                    f"({_describe(exc)}): it may have been delivered"
                ) from None
            raise


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


def raise_failures(failures: list[DeliveryError]) -> None:
    """Raise what did not go out (mail, webhooks, digests), once everything was tried."""
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise DeliveryError("; ".join(str(f) for f in failures))


def period_of(row: DigestRow) -> Period:
    if ".." in row.period_key:
        return Period("custom", row.period_start, row.period_end)
    return resolve_period(row.period_key)


def mail_due(store: Store, digest_id: int, force: bool = False) -> Period | None:
    """The period of a recorded digest `send_digest` would mail now (None: it would not, or there is no
    such digest), so its caller settles that period's outcomes only for a digest that is read."""
    with store.session() as s:
        row = s.get(DigestRow, digest_id)
        if row is None or _withheld(row, force) is not None:
            return None
        return period_of(row)


def is_final(row: DigestRow) -> bool:
    """Whether the recorded digest rests on most of its period's pairs (views.Summary.final)."""
    return bool((row.stats or {}).get("final", True))


def send_digest(store: Store, settings: Settings, digest_id: int, force: bool = False) -> bool:
    """Email a recorded digest. False when it was already sent for its period, or an earlier send
    may have been delivered (the server never answered after the message went), and `force` is not set.
    Reads its period's outcomes as the caller settled them (report/channels.py `deliver`).
    """
    recipients = list(settings.email.recipients)
    if not recipients:
        raise ConfigError("email.recipients is empty: nobody to send the digest to")
    claimed = _begin_send(store, settings, digest_id, recipients, force)
    if claimed is None:
        return False
    period, msg_id = claimed
    pause_at("deliver:email")  # test-only: between deciding to send and sending (the race window)
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
    try:
        refused = send_message(settings, msg, recipients)
    except MaybeDelivered as exc:
        note = {"at": utcnow().isoformat(), "message_id": msg_id, "reason": str(exc)}
        with store.session() as s:
            row = s.get(DigestRow, digest_id)
            assert row is not None
            row.stats = {**(row.stats or {}), EMAIL_UNCONFIRMED: note}
        raise MaybeDelivered(f"{exc}; {_resend_hint(period.key)}") from None
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
        kept = {k: v for k, v in (row.stats or {}).items() if k != EMAIL_UNCONFIRMED}
        row.stats = {**kept, EMAIL_REFUSED: sorted(refused)}
    return True


def report_args(period_key: str) -> str:
    """The `monitor report` options that name this period again."""
    first, dots, last = period_key.partition("..")
    return f"--since {first} --until {last}" if dots else f"--period {period_key}"


def _resend_hint(period_key: str) -> str:
    return (
        "not sent again by later runs: check a recipient's mailbox, and "
        f"`monitor report {report_args(period_key)} --email --force` sends it again"
    )


def _begin_send(
    store: Store, settings: Settings, digest_id: int, recipients: list[str], force: bool
) -> tuple[Period, str] | None:
    """Decide whether the digest goes out and record the attempt; (period, Message-ID), or None: not."""
    with store.session() as s:
        row = s.get(DigestRow, digest_id)
        if row is None:
            raise MonitorError(f"no digest with id {digest_id}")
        withheld = _withheld(row, force)
        if withheld is not None:
            level, message = withheld
            log.log(level, "%s", message)
            return None
        state = row.stats or {}
        unconfirmed = state.get(EMAIL_UNCONFIRMED)
        msg_id = message_id(settings, row.period_key, recipients)
        earlier = state.get(EMAIL_ATTEMPT)
        if earlier and row.sent_at is None and not unconfirmed:
            # Killed after the server took it but before we saved that? Then this is a duplicate,
            # with the same Message-ID so it can be recognised as one.
            log.warning(
                "digest %s: an earlier send at %s may have been delivered; sending again as %s",
                row.period_key,
                earlier.get("at"),
                msg_id,
            )
        # Record the attempt before the message leaves, so a crash after the server's 250 is known.
        row.stats = {**state, EMAIL_ATTEMPT: {"at": utcnow().isoformat(), "message_id": msg_id}}
        return period_of(row), msg_id


def _withheld(row: DigestRow, force: bool) -> tuple[int, str] | None:
    """Why the digest is not mailed now, as (log level, message); None: it goes."""
    if force:
        return None
    if row.sent_at is not None:
        return logging.INFO, f"digest {row.period_key} already sent at {row.sent_at}; not sending again"
    if not is_final(row):
        # Most of its pairs failed or were parked: mailing it would read as news; a later run
        # that judges them rewrites the digest, and that one is mailed.
        return logging.WARNING, (
            f"digest {row.period_key} is not final (the judge failed on most pairs); not mailed"
        )
    unconfirmed = (row.stats or {}).get(EMAIL_UNCONFIRMED)
    if unconfirmed:
        # The message went out in full and the server never said no: a blind resend could
        # be every recipient's second copy. A person decides (--force).
        return logging.WARNING, (
            f"digest {row.period_key}: the send at {unconfirmed.get('at')} got no answer after the "
            f"message went out ({unconfirmed.get('message_id')}), so it may have been delivered; "
            f"{_resend_hint(row.period_key)}"
        )
    return None


def _describe_refusal(value: tuple[int, bytes]) -> str:
    code, text = value
    return f"{code} {text.decode(errors='replace') if isinstance(text, bytes) else text}"
