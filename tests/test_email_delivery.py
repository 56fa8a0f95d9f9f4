"""Digest email through a real SMTP server (aiosmtpd on 127.0.0.1): plain, STARTTLS and SSL."""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import json
import logging
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from digest_world import World, count_calls, deliver_by, sample, settled_write, trusted_settings
from llm_server import Reply, ScriptedLLM
from sqlalchemy import select
from test_report_digest import main_in_process

from monitor.config import Settings, WebhookSettings
from monitor.report import gather
from monitor.report.delivery import DeliveryError, send_digest
from monitor.store.records import Digest, Run
from monitor.store.runs import recorded_run
from monitor.verdicts import rollup

PASSWORD = "s3cret-Pa55-never-logged"


@pytest.fixture
def lite(sqlite_url: str):
    """A SQLite store: SMTP behaviour does not depend on the database (the first test runs on both)."""
    from monitor.store import open_store

    s = open_store(sqlite_url)
    yield s
    s.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Mailbox:
    """An aiosmtpd handler that keeps what it accepted and can refuse on cue."""

    def __init__(self, refuse_data: list[str] | None = None, refuse_rcpt: set[str] | None = None) -> None:
        self.messages: list[tuple[list[str], email.message.EmailMessage]] = []
        self.refuse_data = list(refuse_data or [])  # replies for the next DATA commands, in order
        self.refuse_rcpt = refuse_rcpt or set()
        self.data_attempts = 0

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: ANN001, N802
        if address in self.refuse_rcpt:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: ANN001, N802
        self.data_attempts += 1
        if self.refuse_data:
            return self.refuse_data.pop(0)
        msg = email.message_from_bytes(envelope.content, policy=email.policy.default)
        self.messages.append((list(envelope.rcpt_tos), msg))
        return "250 Message accepted"


class Logins:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def __call__(self, server, session, envelope, mechanism, auth_data) -> AuthResult:  # noqa: ANN001
        user, password = auth_data.login.decode(), auth_data.password.decode()
        self.seen.append((user, password))
        return AuthResult(success=password == PASSWORD)


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, made here (no files from elsewhere)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def server_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*certificate)
    return ctx


@pytest.fixture
def smtp() -> Iterator[callable]:
    started: list[Controller] = []

    def start(handler: Mailbox, **kwargs) -> int:  # noqa: ANN003
        port = free_port()
        controller = Controller(handler, hostname="127.0.0.1", port=port, **kwargs)
        controller.start()
        started.append(controller)
        return port

    yield start
    for controller in started:
        controller.stop()


def mail_settings(tmp_path: Path, port: int, security: str = "none", **email_kw) -> Settings:  # noqa: ANN003
    settings = trusted_settings()
    settings.paths.reports = tmp_path / "reports"
    settings.email.host = "127.0.0.1"
    settings.email.port = port
    settings.email.security = security  # type: ignore[assignment]
    settings.email.recipients = ["ana@example.org", "bo@example.org"]
    settings.email.sender = "monitor@example.org"
    settings.email.retry_wait_seconds = 0.01
    settings.email.timeout_seconds = 10
    for key, value in email_kw.items():
        setattr(settings.email, key, value)
    return settings


def sent_at(store, digest_id: int):
    with store.session() as s:
        row = s.get(Digest, digest_id)
        return row.sent_at, list(row.recipients), dict(row.stats)


def test_multipart_digest_is_sent_once_per_period_and_force_resends(store, smtp, tmp_path) -> None:
    sample(World(store))
    box = Mailbox()
    settings = mail_settings(tmp_path, smtp(box))
    result = settled_write(store, settings, "2026-W11")
    assert deliver_by(store, settings, "email", [result.digest_id]).digest_ids == [result.digest_id]
    [(rcpts, msg)] = box.messages
    assert rcpts == ["ana@example.org", "bo@example.org"]
    assert msg["To"] == "ana@example.org, bo@example.org" and msg["From"] == "monitor@example.org"
    assert msg["Subject"].startswith("[claim-monitor] week 2026-W11")
    assert "1 verdict changed, 1 contested" in msg["Subject"]
    assert msg.get_content_type() == "multipart/alternative"
    parts = [p.get_content_type() for p in msg.iter_parts()]
    assert parts == ["text/plain", "text/html"]
    assert "DURABLE -> CONTESTED" in msg.get_body(("plain",)).get_content()
    html = msg.get_body(("html",)).get_content()
    assert "https://arxiv.org/abs/2603.01234v1" in html and "&lt;script&gt;" in html
    when, recipients, _ = sent_at(store, result.digest_id)
    assert when is not None and recipients == ["ana@example.org", "bo@example.org"]
    # Same period again: not sent twice, even after a re-render.
    again = settled_write(store, settings, "2026-W11")
    assert deliver_by(store, settings, "email", [again.digest_id]).digest_ids == []
    assert send_digest(store, settings, result.digest_id) is False
    assert len(box.messages) == 1
    assert send_digest(store, settings, result.digest_id, force=True) is True
    assert len(box.messages) == 2


def test_a_temporary_refusal_is_retried(lite, smtp, tmp_path, caplog) -> None:
    sample(World(lite))
    box = Mailbox(refuse_data=["451 4.3.0 try again later"])
    settings = mail_settings(tmp_path, smtp(box))
    result = settled_write(lite, settings, "2026-W11")
    with caplog.at_level(logging.WARNING, logger="monitor.report.delivery"):
        assert send_digest(lite, settings, result.digest_id) is True
    assert box.data_attempts == 2 and len(box.messages) == 1
    assert "attempt 1 failed (451" in caplog.text


def test_permanent_refusal_fails_without_retry_and_is_not_marked_sent(lite, smtp, tmp_path) -> None:
    sample(World(lite))
    box = Mailbox(refuse_data=["554 5.7.1 rejected"] * 5)
    settings = mail_settings(tmp_path, smtp(box))
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(DeliveryError, match="554"):
        send_digest(lite, settings, result.digest_id)
    assert box.data_attempts == 1
    assert sent_at(lite, result.digest_id)[0] is None


def test_retries_run_out_and_nothing_is_marked_sent(lite, smtp, tmp_path) -> None:
    sample(World(lite))
    box = Mailbox(refuse_data=["421 4.7.0 busy"] * 10)
    settings = mail_settings(tmp_path, smtp(box), max_retries=2)
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(DeliveryError, match="421"):
        send_digest(lite, settings, result.digest_id)
    assert box.data_attempts == 3
    assert sent_at(lite, result.digest_id)[0] is None


def test_unreachable_server_is_a_delivery_error(lite, tmp_path) -> None:
    sample(World(lite))
    settings = mail_settings(tmp_path, free_port(), max_retries=1)
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(DeliveryError, match="did not accept"):
        send_digest(lite, settings, result.digest_id)


def test_partial_recipient_refusal_counts_as_sent_to_the_others(lite, smtp, tmp_path, caplog) -> None:
    sample(World(lite))
    box = Mailbox(refuse_rcpt={"bo@example.org"})
    settings = mail_settings(tmp_path, smtp(box))
    result = settled_write(lite, settings, "2026-W11")
    with caplog.at_level(logging.WARNING):
        assert send_digest(lite, settings, result.digest_id) is True
    assert [r for r, _ in box.messages] == [["ana@example.org"]]
    when, recipients, stats = sent_at(lite, result.digest_id)
    assert (
        when is not None
        and recipients == ["ana@example.org"]
        and stats["email_refused"] == ["bo@example.org"]
    )
    assert "bo@example.org (550" in caplog.text


def test_auth_over_starttls_with_a_private_ca_never_logs_the_password(
    lite, smtp, tmp_path, certificate, caplog, monkeypatch
) -> None:
    sample(World(lite))
    logins = Logins()
    box = Mailbox()
    port = smtp(
        box,
        tls_context=server_context(certificate),
        require_starttls=True,
        authenticator=logins,
        auth_require_tls=True,
    )
    monkeypatch.setenv("MONITOR_SMTP_PASSWORD", PASSWORD)
    from monitor.config import load_settings

    loaded = load_settings(None)  # the password arrives from the environment as a SecretStr
    assert PASSWORD not in repr(loaded.email)
    settings = mail_settings(
        tmp_path, port, "starttls", username="monitor", password=loaded.email.password, ca_file=certificate[0]
    )
    result = settled_write(lite, settings, "2026-W11")
    with caplog.at_level(logging.DEBUG):
        assert send_digest(lite, settings, result.digest_id) is True
    assert logins.seen == [("monitor", PASSWORD)]
    assert len(box.messages) == 1
    assert PASSWORD not in caplog.text
    assert "sending digest 2026-W11" in caplog.text


def test_starttls_refuses_an_untrusted_certificate(lite, smtp, tmp_path, certificate) -> None:
    sample(World(lite))
    box = Mailbox()
    port = smtp(box, tls_context=server_context(certificate), require_starttls=True)
    settings = mail_settings(tmp_path, port, "starttls")  # no ca_file: the self-signed cert is not trusted
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(DeliveryError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        send_digest(lite, settings, result.digest_id)
    assert box.messages == []


def test_implicit_ssl(lite, smtp, tmp_path, certificate) -> None:
    sample(World(lite))
    box = Mailbox()
    port = smtp(box, ssl_context=server_context(certificate))
    settings = mail_settings(tmp_path, port, "ssl", ca_file=certificate[0])
    result = settled_write(lite, settings, "2026-W11")
    assert send_digest(lite, settings, result.digest_id) is True
    assert len(box.messages) == 1


def test_no_recipients_is_a_config_error(lite, tmp_path) -> None:
    from monitor.errors import ConfigError

    sample(World(lite))
    settings = mail_settings(tmp_path, 25, recipients=[])
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(ConfigError, match="recipients"):
        send_digest(lite, settings, result.digest_id)


def test_a_crash_after_the_server_accepted_resends_with_the_same_message_id(
    store, smtp, tmp_path, monkeypatch, caplog
) -> None:
    from monitor.report import delivery

    sample(World(store))
    box = Mailbox()
    settings = mail_settings(tmp_path, smtp(box))
    result = settled_write(store, settings, "2026-W11")
    real_utcnow = delivery.utcnow
    calls = {"n": 0}

    def dies_after_sending() -> object:  # the first call stamps the attempt; the second, sent_at
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("killed after the server's 250")
        return real_utcnow()

    monkeypatch.setattr(delivery, "utcnow", dies_after_sending)
    with pytest.raises(KeyboardInterrupt):
        send_digest(store, settings, result.digest_id)
    monkeypatch.setattr(delivery, "utcnow", real_utcnow)
    when, _, stats = sent_at(store, result.digest_id)
    assert when is None and stats["email_attempt"]["message_id"] == box.messages[0][1]["Message-ID"]
    with caplog.at_level(logging.WARNING, logger="monitor.report.delivery"):
        assert send_digest(store, settings, result.digest_id) is True  # the rerun finishes the job
    assert "may have been delivered" in caplog.text
    first, second = (msg["Message-ID"] for _, msg in box.messages)
    assert first == second and first.startswith("<digest-2026-W11-")
    # Other recipients make another message.
    settings.email.recipients = ["ana@example.org"]
    assert send_digest(store, settings, result.digest_id, force=True) is True
    assert box.messages[-1][1]["Message-ID"] != first


def test_a_rerender_keeps_the_email_state_so_the_resend_after_a_kill_warns(
    lite, smtp, tmp_path, monkeypatch, caplog
) -> None:
    from monitor.report import delivery

    sample(World(lite))
    box = Mailbox(refuse_rcpt={"bo@example.org"})
    settings = mail_settings(tmp_path, smtp(box))
    result = settled_write(lite, settings, "2026-W11")
    real_utcnow = delivery.utcnow
    calls = {"n": 0}

    def dies_after_sending() -> object:  # the first call stamps the attempt; the second, sent_at
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt("killed after the server's 250")
        return real_utcnow()

    monkeypatch.setattr(delivery, "utcnow", dies_after_sending)
    with pytest.raises(KeyboardInterrupt):
        send_digest(lite, settings, result.digest_id)
    monkeypatch.setattr(delivery, "utcnow", real_utcnow)
    # The next `monitor run` renders the period again before it mails what is unsent.
    settled_write(lite, settings, "2026-W11")
    _, _, stats = sent_at(lite, result.digest_id)
    assert stats["email_attempt"]["message_id"] == box.messages[0][1]["Message-ID"]
    assert "changed" in stats  # the rendering's counts are the new ones
    with caplog.at_level(logging.WARNING, logger="monitor.report.delivery"):
        assert send_digest(lite, settings, result.digest_id) is True
    assert "may have been delivered" in caplog.text
    settled_write(lite, settings, "2026-W11")  # and the refused recipients stay recorded after it was sent
    assert sent_at(lite, result.digest_id)[2]["email_refused"] == ["bo@example.org"]


def test_a_digest_the_mail_server_refuses_does_not_keep_the_next_from_going_out(lite, smtp, tmp_path) -> None:
    """`monitor run` mails every recent digest not yet sent: one refused (a permanent 554) fails the step
    with exit 8 once the next was tried and sent, and the run keeps what went out (as webhooks do)."""
    sample(World(lite))
    box = Mailbox(refuse_data=["554 5.7.1 rejected"])
    settings = mail_settings(tmp_path, smtp(box))
    with pytest.raises(DeliveryError, match="554"), recorded_run(lite, "run") as run:
        first = settled_write(lite, settings, "2026-W10", run_id=run.id)
        second = settled_write(lite, settings, "2026-W11", run_id=run.id)
        deliver_by(lite, settings, "email")
    assert box.data_attempts == 2 and len(box.messages) == 1
    assert sent_at(lite, first.digest_id)[0] is None and sent_at(lite, second.digest_id)[0] is not None
    with lite.session() as s:
        row = s.get(Run, run.id)
        assert row.status == "failed" and row.counts["email"] == {"sent": 1, "periods": ["2026-W11"]}


def test_writing_a_digest_never_mails_it(store, smtp, tmp_path) -> None:
    """Mail leaves from one place (the flow's deliver stage), even with report.email on."""
    sample(World(store))
    box = Mailbox()
    settings = mail_settings(tmp_path, smtp(box))
    settings.report.email = True
    result = settled_write(store, settings, "2026-W11")
    assert box.messages == [] and sent_at(store, result.digest_id)[0] is None
    assert deliver_by(store, settings, "email", [result.digest_id]).digest_ids == [result.digest_id]
    assert len(box.messages) == 1


def test_monitor_report_settles_once_and_the_digest_mail_and_webhook_only_read(
    store, db_url, smtp, tmp_path, monkeypatch, capsys
) -> None:
    """`monitor report --email --notify`, the real command: its outcomes step is the one settle of the
    run; the digest, the mail and the webhook post each read the stored outcomes (one load of the
    evidence apiece, to check they are current), none settles again."""
    sample(World(store))
    box = Mailbox()
    port = smtp(box)
    email_env = {"HOST": "127.0.0.1", "PORT": str(port), "SECURITY": "none", "SENDER": "m@example.org"}
    for key, value in email_env.items():
        monkeypatch.setenv(f"MONITOR_EMAIL__{key}", value)
    monkeypatch.setenv("MONITOR_EMAIL__RECIPIENTS", json.dumps(["ana@example.org"]))
    settles = count_calls(monkeypatch, gather, "settle_outcomes")
    loads = count_calls(monkeypatch, rollup, "load_evidence")
    with ScriptedLLM() as hooks:
        hooks.default = lambda _request: Reply(200, "ok")
        url = hooks.url.removesuffix("/v1") + "/hook"
        monkeypatch.setenv(
            "MONITOR_REPORT__WEBHOOKS",
            json.dumps([{"kind": "json", "url": url, "allow_private_network": True}]),
        )
        args = ["report", "--period", "2026-W11", "--email", "--notify"]
        code, out, err = main_in_process(args, db_url, tmp_path, monkeypatch, capsys)
        assert code == 0, (out, err)
        assert len(box.messages) == 1 and len(hooks.requests) == 1
    assert len(settles) == 1
    assert len(loads) == 4  # the settle, then the digest's, the mail's and the post's freshness checks
    with store.session() as s:
        run = s.scalars(select(Run).where(Run.command == "report")).one()
        assert run.status == "ok" and run.counts["outcomes"]["computed"] == 8


def test_a_later_run_settles_an_earlier_digests_period_once_before_mailing_it(
    store, smtp, tmp_path, monkeypatch
) -> None:
    """A digest an earlier run wrote but did not mail, its evidence moved since: the run that mails it
    settles its period first (once, in the step), so the mail shows the evidence as it is now; a digest
    that is not mailed (already sent) is not read, so nothing is settled for it."""
    w = World(store)
    sample(w)
    box = Mailbox()
    settings = mail_settings(tmp_path, smtp(box))
    with recorded_run(store, "run") as run:
        result = settled_write(store, settings, "2026-W11", run_id=run.id)
    w.paper("2603.08888", "Calibration breaks under scale", dt.date(2026, 3, 13))
    w.assess("2603.08888", "c_calib", "OVERTURNS", 0.97, evidence="calibration breaks")
    settles = count_calls(monkeypatch, gather, "settle_outcomes")
    assert deliver_by(store, settings, "email").digest_ids == [result.digest_id]
    assert len(settles) == 1
    [(_, msg)] = box.messages
    assert "Calibration breaks under scale" in msg.get_body(("plain",)).get_content()
    assert deliver_by(store, settings, "email").digest_ids == [] and len(settles) == 1


def test_a_webhook_post_of_an_already_posted_digest_settles_nothing(store, tmp_path, monkeypatch) -> None:
    """The webhooks channel looks at every recent digest; one every webhook has had is not read, so not
    settled."""
    sample(World(store))
    settings = trusted_settings()
    settings.paths.reports = tmp_path / "reports"
    with ScriptedLLM() as hooks:
        hooks.default = lambda _request: Reply(200, "ok")
        url = hooks.url.removesuffix("/v1") + "/hook"
        settings.report = settings.report.model_copy(
            update={
                "webhooks": [
                    WebhookSettings(kind="json", url=url, retry_wait_seconds=0.01, allow_private_network=True)
                ]
            }
        )
        with recorded_run(store, "run") as run:
            settled_write(store, settings, "2026-W11", run_id=run.id)
        settles = count_calls(monkeypatch, gather, "settle_outcomes")
        assert len(deliver_by(store, settings, "webhooks").digest_ids) == 1 and len(settles) == 1
        assert deliver_by(store, settings, "webhooks").digest_ids == [] and len(settles) == 1
        assert len(hooks.requests) == 1
