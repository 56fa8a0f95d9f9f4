"""A digest's summary posted to webhooks (monitor/report/webhooks.py), against a real HTTP server.

The server is tests/llm_server.py's scripted one (127.0.0.1, in a thread): it records every request
(path, headers, JSON body, arrival time) and answers from a queue of scripted replies, else 200 "ok".
A webhook URL carries its token in its path (SECRET below): it must appear in no log, output or error.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import test_digest_judging_failures as failures
import test_ops_run_faults as faults
from digest_world import (
    NASTY,
    TRUSTED_ENV,
    World,
    deliver_by,
    open_sqlite,
    sample,
    settled_write,
    trusted_settings,
)
from llm_server import Reply, ScriptedLLM, answering
from ops_helpers import make_settings, monitor, write_config
from test_report_digest import main_in_process

from monitor.config import Settings, WebhookSettings
from monitor.errors import ConfigError
from monitor.report.channels import SettledPeriods, channels, deliver, sent_and_posted
from monitor.report.delivery import DeliveryError
from monitor.report.webhooks import SCHEMA, notify_digest
from monitor.store.digests import WEBHOOKS_POSTED
from monitor.store.records import Digest

SECRET = "T0001/B0002/xoxb-sEcReT-wEbHoOk-token"
SECRET_URL = f"https://hooks.example.org/services/{SECRET}"
PASSWORD = "hunter2-pAsSwOrD"
LOCAL = {"allow_private_network": True}  # the receiver listens on 127.0.0.1
llm, snapshot = faults.llm, faults.snapshot  # the scripted judge and the small snapshot of the run tests


def write_and_deliver(store, settings: Settings, period: str, email: bool = False, notify: bool = False):
    """`monitor report --period P [--email] [--notify]`: the digest is written, then delivered."""
    result = settled_write(store, settings, period)
    chosen, settled = channels(settings, email, notify), SettledPeriods(store, settings, None)
    done = deliver(store, chosen, settled, [result.digest_id])
    result.sent, result.posted = sent_and_posted(done, email, notify)
    return result


@pytest.fixture
def server() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as hooks:
        hooks.default = lambda _request: Reply(200, "ok")
        yield hooks


@pytest.fixture
def lite(sqlite_url: str):
    """A SQLite store: posting does not depend on the database (the first test runs on both)."""
    from monitor.store import open_store

    s = open_store(sqlite_url)
    yield s
    s.close()


def hook_url(server: ScriptedLLM, path: str = f"/services/{SECRET}") -> str:
    return server.url.removesuffix("/v1") + path


def hook_settings(tmp_path: Path, *hooks: dict[str, object], **report: object) -> Settings:
    settings = trusted_settings()
    settings.paths.reports = tmp_path / "reports"
    defaults = {"retry_wait_seconds": 0.01, "timeout_seconds": 5, "allow_private_network": True}
    webhooks = [WebhookSettings(**{**defaults, **h}) for h in hooks]
    settings.report = settings.report.model_copy(update={"webhooks": webhooks, **report})
    return settings


def posted(store, digest_id: int) -> dict[str, object]:
    with store.session() as s:
        row = s.get(Digest, digest_id)
        return dict((row.stats or {}).get(WEBHOOKS_POSTED) or {})


def test_slack_and_json_bodies_are_posted_once_per_period_and_force_posts_again(
    store, server, tmp_path, monkeypatch
) -> None:
    sample(World(store))
    monkeypatch.setenv("MONITOR_SLACK_URL", hook_url(server))
    settings = hook_settings(
        tmp_path,
        {"kind": "slack", "url_env": "MONITOR_SLACK_URL"},
        {
            "kind": "json",
            "name": "curators",
            "url": hook_url(server, "/hooks/json"),
            "headers": {"Authorization": "Bearer hdr-secret"},
        },
        board_url="https://board.example.org/",
        public_url="https://example.org/reports",
    )
    result = write_and_deliver(store, settings, "2026-W11", notify=True)
    assert result.posted == [f"slack webhook at {hook_url(server, '')}", "json webhook curators"]
    slack, generic = server.requests
    assert slack.path == f"/services/{SECRET}" and generic.path == "/hooks/json"
    assert generic.headers["authorization"] == "Bearer hdr-secret"
    assert generic.headers["content-type"].startswith("application/json")

    body = generic.body
    assert body["schema"] == SCHEMA and body["final"] is True
    assert body["period"] == {
        "key": "2026-W11",
        "label": body["period"]["label"],
        "start": "2026-03-09",
        "end": "2026-03-15",
    }
    assert "2026-W11" in body["period"]["label"]
    [change] = body["verdict_changes"]
    assert change["claim_id"] == "c_sparse" and (change["from"], change["to"]) == ("DURABLE", "CONTESTED")
    assert change["text"].startswith("RL updates only 5–30% of parameters")
    assert change["paper"]["arxiv_id"] == "2603.01234" and NASTY in change["paper"]["title"]
    assert (
        body["counts"]["verdict_changes"] == 1
        and body["counts"]["new_evidence"] == result.stats["new_evidence"]
    )
    assert body["counts"]["verdicts"]["CONTESTED"] == 1
    # Issue 31: six names, each meaning one thing, and what each means travels with them.
    assert body["schema"] == "claim-monitor.digest-summary/2"
    assert list(body["counts"]["verdicts"]) == [
        "OVERTURNED", "CONTESTED", "PERISHABLE", "DURABLE", "UNSETTLED", "UNTESTED"
    ]
    unsettled = "papers count toward it, none strong enough yet to move it"
    assert body["verdict_meanings"]["UNSETTLED"] == unsettled
    assert body["verdict_meanings"]["UNTESTED"] == "no paper counts toward it yet"
    assert body["judging"]["judged"] == result.stats["judging"]["judged"] > 0
    assert body["links"] == {
        "board": "https://board.example.org/",
        "digest": "https://example.org/reports/digest-2026-W11.md",
    }
    assert "1 verdict changed" in body["summary"]

    assert set(slack.body) == {"text", "blocks"} and "2026-W11" in slack.body["text"]
    assert all(b["type"] in ("section", "context") for b in slack.body["blocks"])
    texts = "\n".join(
        b["text"]["text"] if b["type"] == "section" else b["elements"][0]["text"]
        for b in slack.body["blocks"]
    )
    assert {b["text"]["type"] for b in slack.body["blocks"] if b["type"] == "section"} == {"mrkdwn"}
    assert "• `c_sparse` DURABLE → *CONTESTED*" in texts
    assert "<https://arxiv.org/abs/2603.01234v1|arXiv:2603.01234>" in texts
    assert "<https://board.example.org/|Open the claim board>" in texts
    assert f"Judged {body['judging']['judged']} of the period's {body['judging']['pairs']}" in texts
    assert "<script>" not in json.dumps(slack.body)  # paper text is escaped for mrkdwn

    # Recorded per webhook; a rerun (a re-render too) posts nothing; --force posts to both again.
    assert set(posted(store, result.digest_id)) == {"curators", f"slack-{_hash(hook_url(server))}"}
    again = write_and_deliver(store, settings, "2026-W11", notify=True)
    assert again.posted == [] and len(server.requests) == 2
    assert notify_digest(store, settings, result.digest_id) == []
    assert len(notify_digest(store, settings, result.digest_id, force=True)) == 2
    assert len(server.requests) == 4


def _hash(url: str) -> str:
    import hashlib

    return hashlib.sha256(url.encode()).hexdigest()[:12]


def test_a_503_with_retry_after_is_retried_after_the_wait_asked(lite, server, tmp_path, caplog) -> None:
    sample(World(lite))
    server.push(Reply(503, {"error": "busy"}, headers={"Retry-After": "1"}))
    settings = hook_settings(tmp_path, {"kind": "slack", "url": hook_url(server)})
    result = settled_write(lite, settings, "2026-W11")
    with caplog.at_level(logging.DEBUG):
        assert len(notify_digest(lite, settings, result.digest_id)) == 1
    first, second = server.requests
    assert second.at - first.at >= 0.95  # Retry-After: 1, not the 0.01 s back-off
    assert second.body == first.body
    assert "attempt 1 failed (HTTP 503" in caplog.text
    assert SECRET not in caplog.text and "/services/" not in caplog.text
    assert len(posted(lite, result.digest_id)) == 1


def test_retries_run_out_and_nothing_is_recorded(lite, server, tmp_path) -> None:
    sample(World(lite))
    server.default = lambda _request: Reply(502, "bad gateway")
    settings = hook_settings(tmp_path, {"kind": "json", "url": hook_url(server), "max_retries": 2})
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(DeliveryError, match="HTTP 502") as failure:
        notify_digest(lite, settings, result.digest_id)
    assert len(server.requests) == 3 and posted(lite, result.digest_id) == {}
    assert SECRET not in str(failure.value) and failure.value.exit_code == 8


def test_a_redirect_is_a_refusal_not_followed(lite, server, tmp_path) -> None:
    sample(World(lite))
    server.push(Reply(302, "", headers={"Location": hook_url(server, "/elsewhere")}))
    settings = hook_settings(tmp_path, {"kind": "json", "url": hook_url(server)})
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(DeliveryError, match="HTTP 302"):
        notify_digest(lite, settings, result.digest_id)
    assert [(r.method, r.path) for r in server.requests] == [("POST", f"/services/{SECRET}")]


def test_a_digest_that_is_not_final_is_not_posted_unless_forced(lite, server, tmp_path, caplog) -> None:
    sample(World(lite))
    settings = hook_settings(tmp_path, {"kind": "json", "url": hook_url(server)})
    result = settled_write(lite, settings, "2026-W11")
    with lite.session() as s:  # as a digest most of whose pairs failed is recorded (views.Summary.final)
        row = s.get(Digest, result.digest_id)
        row.stats = {**row.stats, "final": False}
    with caplog.at_level(logging.WARNING):
        assert notify_digest(lite, settings, result.digest_id) == []
    assert server.requests == [] and "is not final" in caplog.text
    assert len(notify_digest(lite, settings, result.digest_id, force=True)) == 1


def test_webhooks_are_tried_although_the_mail_failed_and_the_other_webhook_failed(
    lite, server, tmp_path
) -> None:
    sample(World(lite))
    server.push(Reply(404, "no_service"))
    settings = hook_settings(
        tmp_path,
        {"kind": "slack", "name": "gone", "url": hook_url(server, "/gone")},
        {"kind": "json", "name": "good", "url": hook_url(server, "/good")},
    )
    settings.email.host, settings.email.port = "127.0.0.1", 9  # nothing listens: the mail fails
    settings.email.recipients, settings.email.max_retries = ["ana@example.org"], 0
    with pytest.raises(DeliveryError, match="mail server .*; digest 2026-W11: slack webhook gone") as failure:
        write_and_deliver(lite, settings, "2026-W11", email=True, notify=True)
    assert failure.value.exit_code == 8
    assert [r.path for r in server.requests] == ["/gone", "/good"]  # the 404 is not retried
    with lite.session() as s:
        row = s.query(Digest).one()
        assert set(row.stats[WEBHOOKS_POSTED]) == {"good"}
    server.push(Reply(404, "no_service"))  # a rerun posts to the one that failed only
    with pytest.raises(
        DeliveryError, match="slack webhook gone did not take the digest: HTTP 404 no_service"
    ):
        notify_digest(lite, settings, row.id)
    assert [r.path for r in server.requests][-1] == "/gone" and len(server.requests) == 3


def test_a_missing_url_variable_and_a_bad_url_are_config_errors_that_do_not_show_the_url(
    lite, tmp_path, monkeypatch
) -> None:
    sample(World(lite))
    monkeypatch.delenv("MONITOR_SLACK_URL", raising=False)
    settings = hook_settings(tmp_path, {"kind": "slack", "url_env": "MONITOR_SLACK_URL"})
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(ConfigError, match=r"report.webhooks\[0\]: environment variable MONITOR_SLACK_URL"):
        notify_digest(lite, settings, result.digest_id)
    monkeypatch.setenv("MONITOR_SLACK_URL", f"hooks.example.org/services/{SECRET}")
    with pytest.raises(ConfigError, match="not an http") as failure:
        notify_digest(lite, settings, result.digest_id)
    assert SECRET not in str(failure.value)


def test_an_unreachable_webhook_fails_without_its_secret_in_the_message(lite, tmp_path) -> None:
    import socket

    sample(World(lite))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/services/{SECRET}?token={SECRET}"
    settings = hook_settings(tmp_path, {"kind": "slack", "url": url, "max_retries": 1})
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(DeliveryError, match="ConnectionRefusedError") as failure:
        notify_digest(lite, settings, result.digest_id)
    assert SECRET not in str(failure.value) and f"127.0.0.1:{port}" in str(failure.value)


def test_monitor_run_posts_each_recent_digest_once(lite, server, tmp_path) -> None:
    """What `monitor run` does after writing its digest (the deliver stage's webhooks channel)."""
    from monitor.store.runs import recorded_run

    sample(World(lite))
    settings = hook_settings(tmp_path, {"kind": "json", "url": hook_url(server)})
    with recorded_run(lite, "run") as run:
        settled_write(lite, settings, "2026-W11", run_id=run.id)
        posted = deliver_by(lite, settings, "webhooks")
        run.record(posted)  # what flow.Steps does with a step's result
        assert len(posted.digest_ids) == 1
        assert run.counts["webhooks"] == {"posted": 1, "periods": ["2026-W11"]}
    with recorded_run(lite, "run") as rerun:
        settled_write(lite, settings, "2026-W11", run_id=rerun.id)
        assert deliver_by(lite, settings, "webhooks").digest_ids == []
    assert len(server.requests) == 1


def test_a_post_that_fails_still_leaves_what_was_posted_on_the_run(lite, server, tmp_path) -> None:
    """The webhooks channel tries every due digest, then raises; what it posted before is carried on the
    error (runs.partial_on_failure) and the run row keeps it as its `webhooks` counts."""
    from monitor.store.records import Run
    from monitor.store.runs import recorded_run

    sample(World(lite))
    answers = iter([Reply(200, "ok"), Reply(400, "no")])
    server.default = lambda _request: next(answers)
    settings = hook_settings(tmp_path, {"kind": "json", "url": hook_url(server)})
    with pytest.raises(DeliveryError), recorded_run(lite, "run") as run:
        first = settled_write(lite, settings, "2026-W10", run_id=run.id)
        settled_write(lite, settings, "2026-W11", run_id=run.id)
        deliver_by(lite, settings, "webhooks")
    assert len(server.requests) == 2 and posted(lite, first.digest_id)
    with lite.session() as s:
        row = s.get(Run, run.id)
        assert row.status == "failed" and row.counts["webhooks"] == {"posted": 1, "periods": ["2026-W10"]}


def test_cli_notify_a_400_exits_8_keeps_the_digest_and_never_shows_the_url(
    store, db_url, server, tmp_path, monkeypatch, capsys, caplog
) -> None:
    sample(World(store))
    monkeypatch.setenv("MONITOR_SLACK_URL", hook_url(server))
    monkeypatch.setenv(
        "MONITOR_REPORT__WEBHOOKS", json.dumps([{"kind": "slack", "url_env": "MONITOR_SLACK_URL", **LOCAL}])
    )
    server.push(Reply(400, "invalid_payload"))
    caplog.set_level(logging.DEBUG)
    args = ["-v", "report", "--period", "2026-W11", "--notify"]
    code, out, err = main_in_process(args, db_url, tmp_path, monkeypatch, capsys)
    assert code == 8, (out, err)
    assert "HTTP 400 invalid_payload" in err and "--notify" in err
    assert len(server.requests) == 1  # a 400 is not retried
    assert (tmp_path / "reports" / "digest-2026-W11.md").exists()
    with store.session() as s:
        row = s.query(Digest).one()
        assert WEBHOOKS_POSTED not in row.stats
    code, out, err = main_in_process(args, db_url, tmp_path, monkeypatch, capsys)
    assert code == 0 and "posted to slack webhook at http://127.0.0.1" in out, (out, err)
    code, out, err = main_in_process(args, db_url, tmp_path, monkeypatch, capsys)
    assert code == 0 and "not posted: already posted" in out and len(server.requests) == 2
    code, out, err = main_in_process([*args, "--force"], db_url, tmp_path, monkeypatch, capsys)
    assert code == 0 and "posted to" in out and len(server.requests) == 3
    assert SECRET not in caplog.text and "/services/" not in caplog.text


def test_the_webhook_url_is_in_no_output_of_the_command(sqlite_url, server, tmp_path) -> None:
    """The console entry point in a child process, logging at INFO (-v), failing once and then posting."""
    filled = open_sqlite(sqlite_url)
    sample(World(filled))
    filled.close()
    server.push(Reply(500, "boom"), Reply(403, f"invalid token for /services/{SECRET}"))
    env = dict(
        os.environ,
        MONITOR_DATABASE__URL=sqlite_url,
        MONITOR_PATHS__REPORTS=str(tmp_path / "reports"),
        MONITOR_SLACK_URL=hook_url(server),
        MONITOR_REPORT__WEBHOOKS=json.dumps(
            [{"kind": "slack", "url_env": "MONITOR_SLACK_URL", "retry_wait_seconds": 0.01, **LOCAL}]
        ),
        **TRUSTED_ENV,
    )
    env.pop("MONITOR_CONFIG", None)
    command = [sys.executable, "-m", "monitor", "-v", "report", "--period", "2026-W11", "--notify"]
    failed = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert failed.returncode == 8, failed.stderr
    assert "HTTP 403" in failed.stderr and "attempt 1 failed (HTTP 500" in failed.stderr
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "posted to" in done.stdout, done.stderr
    for result in (failed, done):
        assert SECRET not in result.stdout + result.stderr
        assert "/services/" not in result.stdout + result.stderr


def test_monitor_run_posts_a_final_digest_once_and_a_failed_judges_digest_never(
    tmp_path, sqlite_url, snapshot, llm, server
) -> None:
    """`monitor run` end to end (the scripted LLM judge, a snapshot): the webhook step follows the digest."""
    from monitor.errors import JudgeError
    from monitor.schedule.pipeline import RunOptions, run_once
    from monitor.store import open_store

    llm.default = failures.first_call_then_garbage()  # most pairs fail: a digest that is not final
    hooks = {"webhooks": [{"kind": "json", "url": hook_url(server), "retry_wait_seconds": 0.01, **LOCAL}]}
    settings = make_settings(tmp_path, sqlite_url, judge=faults.judge_options(llm), report=hooks)
    store = open_store(sqlite_url)
    with pytest.raises(JudgeError):
        run_once(store, settings, RunOptions(source=str(snapshot)))
    assert server.requests == []  # not posted, as not mailed
    llm.default = answering("UNRELATED", evidence="")
    outcome = run_once(store, settings, RunOptions(source=str(snapshot)))
    assert outcome.posted == [outcome.digest_id] and len(server.requests) == 1
    assert server.requests[0].body["final"] is True
    store.close()
    config = write_config(tmp_path, sqlite_url, judge=faults.judge_options(llm), report=hooks)
    rerun = monitor(config, "run", "--source", str(snapshot))
    assert rerun.returncode == 0, rerun.stderr
    assert "webhooks: nothing to do" in rerun.stdout and len(server.requests) == 1


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ('kind = "slack"', "exactly one of url and url_env"),
        (f'kind = "slack"\nurl = "{SECRET_URL}"\nurl_env = "X"', "exactly one"),
        (f'kind = "teams"\nurl = "{SECRET_URL}"', "'slack' or 'json'"),
    ],
)
def test_a_bad_webhook_entry_is_a_config_error_naming_it_without_its_url(tmp_path, entry, problem) -> None:
    from monitor.config import load_settings

    path = tmp_path / "monitor.toml"
    path.write_text(f"[[report.webhooks]]\n{entry}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="report.webhooks.0") as failure:
        load_settings(path)
    assert problem in str(failure.value) and SECRET not in str(failure.value)


def slow_hook(server: ScriptedLLM, seconds: float | None) -> threading.Event:
    """The receiver keeps every body, then answers only after `seconds` (None: not before the test
    ends): a slow gateway that did take the digest. Set the returned event to let it answer."""
    release = threading.Event()

    def respond(_request: object) -> Reply:
        release.wait(seconds if seconds is not None else 120)
        return Reply(200, "ok")

    server.default = respond
    return release


@pytest.mark.parametrize("seconds", [3.0, None], ids=["answers-after-3s", "never-answers"])
def test_a_webhook_that_answers_after_the_timeout_gets_one_copy_until_forced(
    store, db_url, server, tmp_path, monkeypatch, capsys, caplog, seconds
) -> None:
    """Issue 33, item 3: the body went out in full and no answer came within `timeout_seconds`: maybe
    delivered, so recorded, not retried and not posted again by later commands until `--force` (before:
    4 copies a command, exit 8, nothing recorded; a second command 4 more)."""
    sample(World(store))
    caplog.set_level(logging.WARNING)
    release = slow_hook(server, seconds)
    monkeypatch.setenv("MONITOR_SLACK_URL", hook_url(server))
    hook = {"kind": "slack", "url_env": "MONITOR_SLACK_URL", "timeout_seconds": 1, "max_retries": 3, **LOCAL}
    monkeypatch.setenv("MONITOR_REPORT__WEBHOOKS", json.dumps([{**hook, "retry_wait_seconds": 0.01}]))
    args = ["report", "--period", "2026-W11", "--notify"]
    try:
        code, out, err = main_in_process(args, db_url, tmp_path, monkeypatch, capsys)
        assert code == 8, (out, err)
        assert len(server.requests) == 1, f"{len(server.requests)} copies"
        assert "may have been delivered" in err and "--notify --force" in err, err
        caplog.clear()
        code, out, err = main_in_process(args, db_url, tmp_path, monkeypatch, capsys)
        assert code == 0, (out, err)
        assert len(server.requests) == 1, f"{len(server.requests)} copies"
        assert "may have been delivered" in caplog.text and "--notify --force" in caplog.text
        assert "not posted" in out and "may have been delivered" in out, (out, err)
        code, out, _ = main_in_process(["runs", "--json"], db_url, tmp_path, monkeypatch, capsys)
        second, first = json.loads(out)[:2]
        assert any("may have been delivered" in e for e in first["errors"]), first
        assert any("may have been delivered" in w for w in second["warnings"]), second
    finally:
        release.set()
    with store.session() as s:
        row = s.query(Digest).one()
        [(key, note)] = row.stats[WEBHOOKS_POSTED].items()
        assert note["status"] is None and "no answer" in note["unconfirmed"]
        assert SECRET not in json.dumps(row.stats)
    server.default = lambda _request: Reply(200, "ok")
    code, out, err = main_in_process([*args, "--force"], db_url, tmp_path, monkeypatch, capsys)
    assert code == 0 and "posted to" in out, (out, err)
    assert len(server.requests) == 2
    assert posted(store, row.id)[key] == {"at": posted(store, row.id)[key]["at"], "status": 200}


def test_a_run_does_not_post_again_what_may_have_been_delivered_and_says_so(lite, server, tmp_path) -> None:
    """`monitor run`'s webhooks step (the deliver stage) over a digest whose post got no answer."""
    from monitor.store.runs import recorded_run

    sample(World(lite))
    release = slow_hook(server, None)
    settings = hook_settings(tmp_path, {"kind": "json", "url": hook_url(server), "timeout_seconds": 1})
    try:
        with pytest.raises(DeliveryError, match="may have been delivered"), recorded_run(lite, "run") as run:
            settled_write(lite, settings, "2026-W11", run_id=run.id)
            deliver_by(lite, settings, "webhooks")
        with recorded_run(lite, "run") as rerun:
            settled_write(lite, settings, "2026-W11", run_id=rerun.id)
            again = deliver_by(lite, settings, "webhooks")
            rerun.record(again)
    finally:
        release.set()
    assert again.digest_ids == [] and len(server.requests) == 1
    assert rerun.counts["webhooks"]["unconfirmed"] == 1
    assert any("may have been delivered" in w and "--notify --force" in w for w in rerun.warnings)


def test_a_refused_connection_is_still_retried(lite, tmp_path, caplog) -> None:
    """Nothing was sent: not a maybe-delivery, so retried (the other side of the line drawn above)."""
    import socket

    sample(World(lite))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    hook = {"kind": "json", "url": f"http://127.0.0.1:{port}/h", "max_retries": 2}
    settings = hook_settings(tmp_path, hook)
    result = settled_write(lite, settings, "2026-W11")
    with caplog.at_level(logging.WARNING), pytest.raises(DeliveryError, match="Refused") as failure:
        notify_digest(lite, settings, result.digest_id)
    assert "attempt 2 failed" in caplog.text  # three tries
    assert "may have been delivered" not in str(failure.value)
    assert posted(lite, result.digest_id) == {}


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        (f"https://hooks.example.org/services/{SECRET}\r\nX-Injected: 1", "a space, control or non-ASCII"),
        (f"https://hooks.example.org/services/{SECRET} x", "a space, control or non-ASCII"),
        (f"https://hooks.example.org/services/{SECRET}\x1b[2J", "a space, control or non-ASCII"),
        (f"https://hooks.example.org/services/{SECRET}é", "a space, control or non-ASCII"),
        (f"https://ops:pw-{PASSWORD}@hooks.example.org/services/{SECRET}", "a user name or password"),
    ],
    ids=["crlf", "space", "escape", "non-ascii", "user-password"],
)
def test_a_webhook_url_that_cannot_be_posted_to_as_written_is_refused_without_showing_it(
    store, db_url, server, tmp_path, monkeypatch, capsys, url, problem
) -> None:
    """Issue 33, item 13: a CR/LF printed the URL's path (its secret) in the error; `user:pass@` failed as
    "Name or service not known"; a non-ASCII character raised a traceback. Refused before any post."""
    sample(World(store))
    monkeypatch.setenv("MONITOR_SLACK_URL", url)
    monkeypatch.setenv(
        "MONITOR_REPORT__WEBHOOKS",
        json.dumps([{"kind": "slack", "url_env": "MONITOR_SLACK_URL", "name": "lab"}]),
    )
    code, out, err = main_in_process(
        ["report", "--period", "2026-W11", "--notify"], db_url, tmp_path, monkeypatch, capsys
    )
    assert code == 2, (out, err)
    assert "report.webhooks[0] (lab)" in err and problem in err, err
    assert SECRET not in out + err and "/services/" not in out + err and PASSWORD not in out + err
    assert server.requests == []


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "10.1.2.3",
        "192.168.0.10",
        "169.254.169.254",
        "0.0.0.0",
        "[fe80::1]",
    ],
)
def test_a_webhook_to_a_local_or_private_address_is_refused_unless_allowed(lite, tmp_path, host) -> None:
    """Issue 33, item 13: a webhook URL could point the post at a local admin port or a cloud metadata
    address; refused before connecting unless the webhook sets `allow_private_network = true`."""
    sample(World(lite))
    settings = hook_settings(
        tmp_path,
        {"kind": "json", "url": f"http://{host}:8080/hooks/{SECRET}", "allow_private_network": False},
    )
    result = settled_write(lite, settings, "2026-W11")
    with pytest.raises(ConfigError, match="allow_private_network = true") as failure:
        notify_digest(lite, settings, result.digest_id)
    assert "report.webhooks[0]" in str(failure.value) and SECRET not in str(failure.value)
    assert posted(lite, result.digest_id) == {}


def test_allow_private_network_lets_a_webhook_post_to_a_local_receiver(lite, server, tmp_path) -> None:
    sample(World(lite))
    url = hook_url(server)
    refused = hook_settings(tmp_path, {"kind": "json", "url": url, "allow_private_network": False})
    result = settled_write(lite, refused, "2026-W11")
    with pytest.raises(ConfigError, match="loopback"):
        notify_digest(lite, refused, result.digest_id)
    assert server.requests == []
    allowed = hook_settings(tmp_path, {"kind": "json", "url": url, "allow_private_network": True})
    assert len(notify_digest(lite, allowed, result.digest_id)) == 1 and len(server.requests) == 1


def test_monitor_run_refuses_a_bad_webhook_before_it_fetches_or_judges(
    tmp_path, sqlite_url, snapshot
) -> None:
    from monitor.schedule.pipeline import RunOptions, run_once
    from monitor.store import open_store
    from monitor.store.models import Paper

    hooks = {"webhooks": [{"kind": "json", "url": f"http://ops:{PASSWORD}@hooks.example.org/x"}]}
    settings = make_settings(tmp_path, sqlite_url, report=hooks)
    store = open_store(sqlite_url)
    with pytest.raises(ConfigError, match="a user name or password") as failure:
        run_once(store, settings, RunOptions(source=str(snapshot)))
    assert PASSWORD not in str(failure.value)
    with store.session() as s:
        assert s.query(Paper).count() == 0  # refused before the fetch
    store.close()
