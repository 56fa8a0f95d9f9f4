"""Two real processes that could both spend tokens on the same pending pairs, against the scripted LLM
server: whatever the interleaving, no pair is sent twice.

`monitor judge` takes the run lock like `monitor run`; a run suspended past the staleness limit is not
taken over while its process lives; a run whose lock was taken over stops before its next call.
"""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import ScriptedLLM, answering, asked_abstract, asked_claim_ids
from ops_helpers import monitor, start_paused, write_config, write_snapshot
from sqlalchemy import delete, func, select, update

from monitor.store import open_store
from monitor.store.models import Assessment, utcnow
from monitor.store.records import Lock

POINT = "judge:after_first_batch"


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.default = answering("SUPPORTS")
        yield server


@pytest.fixture
def config(tmp_path: Path, llm: ScriptedLLM) -> Path:
    snapshot = tmp_path / "snapshot.jsonl"
    write_snapshot(snapshot, limit=30)
    judge = {
        "provider": "openai",
        "base_url": llm.url,
        "api_key": "sk-lock",
        "key_base_url": llm.url,  # the key is for this server (it goes to no other)
        "model": "scripted-model",
        "response_format": "json_schema",
        "concurrency": 1,
        "max_retries": 0,
        "second_look": "none",  # each pair is sent once: what these tests count
    }
    return write_config(
        tmp_path,
        f"sqlite:///{tmp_path / 'monitor.db'}",
        judge=judge,
        schedule={"lock_stale_seconds": 2, "lock_heartbeat_seconds": 1},
        report={"research_questions": False},
    )


def _pairs_sent(llm: ScriptedLLM) -> Counter[tuple[str, str]]:
    """(abstract, claim id) of every judge request the server received."""
    sent: Counter[tuple[str, str]] = Counter()
    for request in llm.chat_requests():
        body: Any = request.body
        if "<abstract>" in json.dumps(body):
            sent.update((asked_abstract(body), cid) for cid in asked_claim_ids(body))
    return sent


def _judged(tmp_path: Path) -> int:
    store = open_store(f"sqlite:///{tmp_path / 'monitor.db'}")
    with store.session() as s:
        count = int(s.scalar(select(func.count()).select_from(Assessment)) or 0)
    store.close()
    return count


def _silent_since(tmp_path: Path, ago: dt.timedelta) -> None:
    """Set the run lock's last heartbeat `ago` back, as a holder that has been silent that long."""
    store = open_store(f"sqlite:///{tmp_path / 'monitor.db'}")
    try:
        with store.session() as s:
            s.execute(update(Lock).values(heartbeat_at=utcnow() - ago))
    finally:
        store.close()


def _resume(proc: subprocess.Popen[str], marker: Path) -> tuple[int, str]:
    Path(f"{marker}.resume").touch()
    _, err = proc.communicate(timeout=240)
    return proc.returncode, err


def _run_paused(tmp_path: Path, config: Path) -> tuple[subprocess.Popen[str], Path]:
    marker = tmp_path / "pause.txt"
    snapshot = tmp_path / "snapshot.jsonl"
    return start_paused(config, POINT, marker, "run", "--source", str(snapshot), "--no-email"), marker


def test_judge_beside_a_run_waits_for_the_lock_and_nothing_is_sent_twice(tmp_path, config, llm) -> None:
    run, marker = _run_paused(tmp_path, config)
    try:
        sent_before = len(llm.chat_requests())
        beside = monitor(config, "judge")
        assert beside.returncode == 75, beside.stderr
        assert "run lock" in beside.stderr
        assert len(llm.chat_requests()) == sent_before  # it asked nothing
        code, err = _resume(run, marker)
        assert code == 0, err
    finally:
        run.kill()
    sent = _pairs_sent(llm)
    assert sent and max(sent.values()) == 1
    assert _judged(tmp_path) == len(sent)


def test_a_suspended_run_is_not_taken_over_while_its_process_lives(tmp_path, config, llm) -> None:
    run, marker = _run_paused(tmp_path, config)
    try:
        run.send_signal(signal.SIGSTOP)
        _silent_since(tmp_path, dt.timedelta(hours=1))  # far past lock_stale_seconds without a heartbeat
        sent_before = len(llm.chat_requests())
        beside = monitor(config, "judge")
        assert beside.returncode == 75, beside.stderr
        assert f"kill -CONT {run.pid}" in beside.stderr and "dead" not in beside.stderr
        assert len(llm.chat_requests()) == sent_before
        run.send_signal(signal.SIGCONT)
        code, err = _resume(run, marker)
        assert code == 0, err
    finally:
        run.send_signal(signal.SIGCONT)
        run.kill()
    sent = _pairs_sent(llm)
    assert sent and max(sent.values()) == 1
    assert _judged(tmp_path) == len(sent)


def test_a_run_whose_lock_was_taken_over_stops_before_its_next_call(tmp_path, config, llm) -> None:
    run, marker = _run_paused(tmp_path, config)
    store = open_store(f"sqlite:///{tmp_path / 'monitor.db'}")
    try:
        # As a run on another host does that found this one silent past lock_stale_seconds.
        with store.session() as s:
            s.execute(update(Lock).values(holder="otherhost:4242:feedface"))
        sent_before = len(llm.chat_requests())
        code, err = _resume(run, marker)
        assert code == 75, err
        assert "taken over" in err
        assert len(llm.chat_requests()) == sent_before  # not one more call
    finally:
        run.kill()
    with store.session() as s:  # the other host's run finished and let go
        s.execute(delete(Lock))
    store.close()
    rest = monitor(config, "judge")
    assert rest.returncode == 0, rest.stderr
    sent = _pairs_sent(llm)
    assert sent and max(sent.values()) == 1
    assert _judged(tmp_path) == len(sent)


def test_relevance_takes_the_run_lock_only_with_the_llm_screen(tmp_path, config, llm) -> None:
    from monitor.schedule.lock import RunLock

    url = f"sqlite:///{tmp_path / 'monitor.db'}"
    store = open_store(url)
    held = RunLock(store)  # a run is judging
    held.acquire()
    try:
        plain = monitor(config, "relevance")
        assert plain.returncode == 0, plain.stderr  # BM25 and embeddings cost nothing: no lock needed
        screened = write_config(
            tmp_path,
            url,
            judge={"provider": "openai", "base_url": llm.url, "api_key": "sk-lock", "key_base_url": llm.url},
            relevance={"screen": "llm"},
        )
        busy = monitor(screened, "relevance")
        assert busy.returncode == 75 and "run lock" in busy.stderr, busy.stderr
    finally:
        held.release()
        store.close()
    assert llm.chat_requests() == []
