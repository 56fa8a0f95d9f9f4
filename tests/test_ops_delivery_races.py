"""Nothing mailed, posted or paid for twice by two commands at once (issue 33, item 2).

Real `monitor` processes race on one store (SQLite and PostgreSQL): one is held at a pause point
between deciding to mail (or post) a digest and doing it (`deliver:email`, `deliver:webhook`;
monitor/testhooks.py), or inside its first LLM call (the scripted server holds the answer), while the
other runs. Mail goes to a real SMTP server (aiosmtpd), posts to a real HTTP server and LLM calls to
the scripted OpenAI-compatible server, all on 127.0.0.1; the test counts what each received.

Every command that mails, posts or calls an LLM takes the run lock (monitor/schedule/lock.py), so the
second command exits 75 (or waits, with `schedule.on_lock_held = "wait"`) and nothing goes twice.
"""

from __future__ import annotations

import email
import email.policy
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import test_ops_run_faults as faults
from llm_server import Reply, ScriptedLLM, answering, completion, research_questions
from ops_helpers import MONITOR, env, make_settings, monitor, start_paused, write_config

from monitor.schedule.pipeline import RunOptions, run_once
from monitor.store import open_store

llm, snapshot, mailbox, judge_options = faults.llm, faults.snapshot, faults.mailbox, faults.judge_options
PERIOD = "2025-W11"  # the snapshot's last week: the period `monitor run` reports on this store too


@pytest.fixture
def hooks() -> Iterator[ScriptedLLM]:
    """A webhook receiver: records every POST, answers 200."""
    with ScriptedLLM() as server:
        server.default = lambda _request: Reply(200, "ok")
        yield server


def judged_store(tmp_path: Path, db_url: str, llm: ScriptedLLM, snapshot: Path) -> None:
    """Claims, the snapshot's papers, their judgements and verdicts; no digest written yet."""
    store = open_store(db_url)
    try:
        settings = make_settings(tmp_path, db_url, judge=judge_options(llm))
        run_once(store, settings, RunOptions(source=str(snapshot), report=False))
    finally:
        store.close()


def config_for(
    tmp_path: Path, db_url: str, llm: ScriptedLLM, port: int, hooks: ScriptedLLM | None = None
) -> Path:
    report: dict[str, Any] = {}
    if hooks is not None:
        url = hooks.url.removesuffix("/v1") + "/hooks/digest"
        report["webhooks"] = [
            {"kind": "json", "url": url, "retry_wait_seconds": 0.01, "allow_private_network": True}
        ]
    return write_config(
        tmp_path,
        db_url,
        judge=judge_options(llm),
        report=report,
        email={"host": "127.0.0.1", "port": port, "security": "none", "recipients": ["ana@example.org"]},
    )


def resume(marker: Path, proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    """Let a paused process go on; its exit code and output."""
    Path(f"{marker}.resume").write_text("go\n", encoding="utf-8")
    out, err = proc.communicate(timeout=240)
    return proc.returncode, out, err


def message_ids(messages: list[bytes]) -> list[str]:
    return [email.message_from_bytes(m, policy=email.policy.default)["Message-ID"] for m in messages]


def test_two_reports_mailing_the_same_digest_at_once_send_one_copy(
    tmp_path, db_url, llm, snapshot, mailbox
) -> None:
    box, port = mailbox
    judged_store(tmp_path, db_url, llm, snapshot)
    config = config_for(tmp_path, db_url, llm, port)
    args = ("report", "--period", PERIOD, "--email")
    marker = tmp_path / "pause.txt"
    first = start_paused(config, "deliver:email", marker, *args)  # decided to send, not sent yet
    second = monitor(config, *args)
    code, out, err = resume(marker, first)
    assert code == 0, err
    assert len(box.messages) == 1, f"{len(box.messages)} copies: {message_ids(box.messages)}"
    assert second.returncode == 75, (second.returncode, second.stdout, second.stderr)
    assert "run lock" in second.stderr and "emailed" in out


def test_a_run_beside_a_report_that_is_mailing_sends_no_second_copy(
    tmp_path, db_url, llm, snapshot, mailbox
) -> None:
    box, port = mailbox
    judged_store(tmp_path, db_url, llm, snapshot)
    config = config_for(tmp_path, db_url, llm, port)
    marker = tmp_path / "pause.txt"
    report = start_paused(config, "deliver:email", marker, "report", "--period", PERIOD, "--email")
    run = monitor(config, "run", "--no-fetch", MONITOR_REPORT__EMAIL="true")
    code, _out, err = resume(marker, report)
    assert code == 0, err
    assert len(box.messages) == 1, f"{len(box.messages)} copies: {message_ids(box.messages)}"
    assert run.returncode == 75, (run.returncode, run.stdout, run.stderr)
    # Once the report is done, the run has nothing left to mail.
    again = monitor(config, "run", "--no-fetch", MONITOR_REPORT__EMAIL="true")
    assert again.returncode == 0, again.stderr
    assert len(box.messages) == 1


def test_two_reports_posting_the_same_digest_at_once_post_it_once(
    tmp_path, db_url, llm, snapshot, mailbox, hooks
) -> None:
    _box, port = mailbox
    judged_store(tmp_path, db_url, llm, snapshot)
    config = config_for(tmp_path, db_url, llm, port, hooks)
    args = ("report", "--period", PERIOD, "--notify")
    marker = tmp_path / "pause.txt"
    first = start_paused(config, "deliver:webhook", marker, *args)
    second = monitor(config, *args)
    code, out, err = resume(marker, first)
    assert code == 0, err
    assert len(hooks.requests) == 1, f"{len(hooks.requests)} posts"
    assert second.returncode == 75, (second.returncode, second.stdout, second.stderr)
    assert "posted to" in out


class Gate:
    """Holds every research-questions request until opened; counts them as they arrive."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.arrived = threading.Condition()
        self.count = 0

    def __call__(self, request: Any) -> Reply:
        questions = research_questions(request)
        if questions is None:  # a judge request (none expected: everything is judged)
            return answering("SUPPORTS")(request)
        with self.arrived:
            self.count += 1
            self.arrived.notify_all()
        self.opened.wait(120)
        return Reply(body=completion(questions))

    def wait_for(self, count: int, proc: subprocess.Popen[str], timeout: float = 240) -> bool:
        """Until `count` requests arrived (True) or `proc` exited (False)."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while self.count < count:
                if proc.poll() is not None:
                    return False
                assert time.monotonic() < deadline, f"{self.count} of {count} requests arrived"
                self.arrived.wait(0.1)  # woken by a request; the timeout only looks at the process
        return True


def test_two_reports_asking_research_questions_at_once_pay_once(tmp_path, db_url, llm, snapshot) -> None:
    judged_store(tmp_path, db_url, llm, snapshot)
    config = write_config(tmp_path, db_url, judge=judge_options(llm))
    gate = Gate()
    llm.default = gate
    before = len(llm.chat_requests())
    command = [MONITOR, "--config", str(config), "report", "--period", PERIOD]

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())

    first = start()
    second: subprocess.Popen[str] | None = None
    try:
        assert gate.wait_for(1, first), first.communicate()
        second = start()
        gate.wait_for(2, second)  # the second asks too (the defect), or exits at once
        gate.opened.set()
        out, err = first.communicate(timeout=240)
        second_out, second_err = second.communicate(timeout=240)
    finally:
        gate.opened.set()
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
    assert first.returncode == 0, err
    asked = [json.dumps(r.body, sort_keys=True) for r in llm.chat_requests()[before:]]
    # One request per line with new evidence, none asked twice (the two reports asked 9 for 5 lines).
    assert asked and len(asked) == len(set(asked)), f"{len(asked)} LLM calls for {len(set(asked))} lines"
    assert second.returncode == 75, (second.returncode, second_out, second_err)


def test_a_report_that_only_writes_files_runs_beside_a_run_and_one_that_mails_waits(
    tmp_path, db_url, llm, snapshot, mailbox
) -> None:
    """The lock is taken for sending and spending only: a report with no mail, no webhook and no LLM
    configured writes its files while a run holds the lock; with --email it exits 75 and sends nothing."""
    from monitor.schedule.lock import RunLock

    box, port = mailbox
    judged_store(tmp_path, db_url, llm, snapshot)
    config = write_config(
        tmp_path,
        db_url,
        email={"host": "127.0.0.1", "port": port, "security": "none", "recipients": ["ana@example.org"]},
    )  # the embedded judge, no LLM
    store = open_store(db_url)
    held = RunLock(store)  # a run is in progress
    held.acquire()
    try:
        plain = monitor(config, "report", "--period", PERIOD)
        mailing = monitor(config, "report", "--period", PERIOD, "--email")
    finally:
        held.release()
        store.close()
    assert plain.returncode == 0, plain.stderr
    assert (tmp_path / "reports" / f"digest-{PERIOD}.md").exists()
    assert mailing.returncode == 75 and "run lock" in mailing.stderr, mailing.stderr
    assert box.messages == []
    done = monitor(config, "report", "--period", PERIOD, "--email")
    assert done.returncode == 0 and len(box.messages) == 1, done.stderr
