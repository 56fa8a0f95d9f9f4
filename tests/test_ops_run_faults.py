"""`monitor run` with an LLM judge and mail: a spent budget, a dead judge, and kills around delivery.

The judge is the OpenAI client talking to a local scripted server; mail goes to a real SMTP server
(aiosmtpd) on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from llm_server import Reply, ScriptedLLM, answering, error_body
from ops_helpers import make_settings, monitor, start_paused, write_config, write_snapshot
from sqlalchemy import func, select

from monitor.errors import BudgetExhausted, JudgeError
from monitor.judge.factory import make_judge
from monitor.judge.prompts import load_prompts
from monitor.judge.work import estimate_judge_units, pending_units
from monitor.schedule.pipeline import RunOptions, run_once
from monitor.store import open_store
from monitor.store.models import Assessment
from monitor.store.records import Digest, Run


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.default = answering("SUPPORTS")
        yield server


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "snapshot.jsonl"
    write_snapshot(path, limit=30)
    return path


def _judged(store) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(Assessment)) or 0)


def judge_options(llm: ScriptedLLM, **extra: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": llm.url,
        "api_key": "sk-ops",
        "key_base_url": llm.url,  # the key is for this server (it goes to no other)
        "model": "scripted-model",
        "response_format": "json_schema",
        "max_retries": 0,
        "timeout_seconds": 10,
        "concurrency": 1,
        **extra,
    }


def test_spent_budget_keeps_the_work_and_the_next_run_finishes(tmp_path, db_url, snapshot, llm) -> None:
    # A budget that fits the largest call's estimate and about half of what the whole run spends (measured
    # on a store of its own), whatever the prompts' size: some pairs are judged, not all.
    measure_url = f"sqlite:///{tmp_path / 'measure.db'}"
    measure = make_settings(tmp_path, measure_url, judge=judge_options(llm))
    measure_store = open_store(measure_url)
    try:
        measured = run_once(measure_store, measure, RunOptions(source=str(snapshot), email=False))
        units = pending_units(measure_store, make_judge(measure, connect=False), force=True)
    finally:
        measure_store.close()
    estimate_judge_units(units, load_prompts())
    budget = max(u.estimated_tokens for u in units) + measured.counts["judge"]["tokens"] // 2
    store = open_store(db_url)
    tight = make_settings(tmp_path, db_url, judge=judge_options(llm, token_budget=budget))
    with pytest.raises(BudgetExhausted) as err:
        run_once(store, tight, RunOptions(source=str(snapshot), email=False))
    assert err.value.exit_code == 7
    with store.session() as s:
        run = s.scalars(select(Run)).one()
        judged = s.scalar(select(func.count()).select_from(Assessment))
        assert run.status == "partial" and run.tokens > 0 and "verdicts" not in run.counts
        assert s.scalar(select(func.count()).select_from(Digest)) == 0  # no digest on half the evidence
    assert judged and judged == run.counts["judge"]["judged"]
    roomy = make_settings(tmp_path, db_url, judge=judge_options(llm))
    outcome = run_once(store, roomy, RunOptions(source=str(snapshot), email=False))
    assert outcome.status == "ok" and outcome.counts["judge"]["judged"] > 0
    with store.session() as s:
        keys = s.execute(select(Assessment.cache_key, Assessment.generation)).all()
        assert len(keys) == len(set(keys)) == judged + outcome.counts["judge"]["judged"]


def test_a_judge_that_answers_nothing_fails_the_run_with_code_6(tmp_path, sqlite_url, snapshot, llm) -> None:
    llm.default = lambda _req: Reply(500, error_body("model overloaded"))
    store = open_store(sqlite_url)
    settings = make_settings(tmp_path, sqlite_url, judge=judge_options(llm))
    with pytest.raises(JudgeError) as err:
        run_once(store, settings, RunOptions(source=str(snapshot), email=False))
    assert err.value.exit_code == 6
    with store.session() as s:
        run = s.scalars(select(Run)).one()
        assert run.status == "failed" and run.errors


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[bytes] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.messages.append(envelope.content)
        return "250 OK"


@pytest.fixture
def mailbox() -> Iterator[tuple[Mailbox, int]]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    box = Mailbox()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    yield box, port
    controller.stop()


@pytest.mark.parametrize("point", ["email:before", "email:after"])
def test_killed_around_delivery_the_digest_is_sent_exactly_once(
    tmp_path, sqlite_url, snapshot, llm, mailbox, point
) -> None:
    box, port = mailbox
    config = write_config(
        tmp_path,
        sqlite_url,
        judge=judge_options(llm),
        report={"email": True},
        email={"host": "127.0.0.1", "port": port, "security": "none", "recipients": ["ana@example.org"]},
    )
    args = ("run", "--source", str(snapshot))
    victim = start_paused(config, point, tmp_path / "pause.txt", *args)
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    sent_before_rerun = len(box.messages)
    assert sent_before_rerun == (1 if point == "email:after" else 0)
    rerun = monitor(config, *args)
    assert rerun.returncode == 0, rerun.stderr
    assert len(box.messages) == 1  # sent by whichever run got there, never twice
    store = open_store(sqlite_url)
    with store.session() as s:
        digest = s.scalars(select(Digest)).one()
        assert digest.sent_at is not None
        assert [r.status for r in s.scalars(select(Run).order_by(Run.id))] == ["abandoned", "ok"]
    # The run's output says what it mailed (it printed "email: nothing to do").
    if point == "email:before":
        assert "email: sent 1" in rerun.stdout and f"emailed: digest {digest.period_key}" in rerun.stdout
    else:
        assert "email: nothing to do" in rerun.stdout and "emailed:" not in rerun.stdout


class SlowMailbox(Mailbox):
    """Stores the message, then answers only after the client has given up (the next `slow` times)."""

    def __init__(self, delay: float, slow: int) -> None:
        super().__init__()
        self.delay, self.slow = delay, slow

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.messages.append(envelope.content)
        if self.slow:
            self.slow -= 1
            await asyncio.sleep(self.delay)
        return "250 OK"


def test_a_server_that_answers_after_the_timeout_gets_one_copy_until_forced(
    tmp_path, sqlite_url, snapshot, llm
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    box = SlowMailbox(delay=2.5, slow=3)  # as slow for every retry
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        config = write_config(
            tmp_path,
            sqlite_url,
            judge=judge_options(llm),
            report={"email": True},
            email={
                "host": "127.0.0.1",
                "port": port,
                "security": "none",
                "recipients": ["ana@example.org"],
                "timeout_seconds": 1,
                "max_retries": 2,
                "retry_wait_seconds": 0.01,
            },
        )
        args = ("run", "--source", str(snapshot))
        first = monitor(config, *args)
        # Stored, then no answer within the timeout: exit 8, and no retry that would send copy 2 and 3.
        assert first.returncode == 8, first.stderr
        assert len(box.messages) == 1
        assert "may have been delivered" in first.stderr and "--email --force" in first.stderr
        second = monitor(config, *args)  # the next run does not resend it on its own
        assert second.returncode == 0, second.stderr
        assert "may have been delivered" in second.stderr and "email: nothing to do" in second.stdout
        assert len(box.messages) == 1
        store = open_store(sqlite_url)
        with store.session() as s:
            digest = s.scalars(select(Digest)).one()
            assert digest.sent_at is None and "email_unconfirmed" in digest.stats  # kept by the re-render
        box.slow = 0  # the server is quick again
        forced = monitor(config, "report", "--period", digest.period_key, "--email", "--force")
        assert forced.returncode == 0, forced.stderr
        assert len(box.messages) == 2 and "emailed" in forced.stdout
        with store.session() as s:
            digest = s.scalars(select(Digest)).one()
            assert digest.sent_at is not None and "email_unconfirmed" not in digest.stats
        store.close()
    finally:
        controller.stop()


def test_the_api_key_is_in_no_file_log_or_report(tmp_path, snapshot, llm) -> None:
    key = "sk-ops-5c3e9d1f-must-not-be-stored"
    db = tmp_path / "monitor.db"
    # The key comes from the environment, as documented; the config file has none.
    options = {
        k: v for k, v in judge_options(llm, max_retries=1, backoff_seconds=0.01).items() if k != "api_key"
    }
    config = write_config(tmp_path, f"sqlite:///{db}", judge=options)
    # A server that echoes the key in an error (as OpenAI does for a wrong key); the retry then works.
    llm.push(Reply(500, error_body(f"Incorrect API key provided: {key}")))
    done = monitor(config, "-v", "run", "--source", str(snapshot), "--no-email", MONITOR_JUDGE__API_KEY=key)
    assert done.returncode == 0, done.stderr
    listed = monitor(config, "runs", "--json", MONITOR_JUDGE__API_KEY=key)
    assert listed.returncode == 0, listed.stderr
    requests = llm.chat_requests()
    assert len(requests) > 1 and all(r.headers["authorization"] == f"Bearer {key}" for r in requests)
    store = open_store(f"sqlite:///{db}")
    assert _judged(store) > 0
    store.close()
    secret = key.encode()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]  # the database (and -wal), reports, feed
    assert db in files and any(p.name.startswith("digest-") for p in files)
    for path in files:
        assert secret not in path.read_bytes(), path
    for text in (done.stdout, done.stderr, listed.stdout, listed.stderr):
        assert key not in text
