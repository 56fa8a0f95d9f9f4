"""The teacher's answers through ../shared/tools/llm_relay.py, for the benches that measure the LLM path.

A capable LLM (build-time helper agents) answers the project's exact requests; the relay replays those
answers to the project's own `openai` client, screen and second look, and records every request it has
no answer for. A pipeline whose later calls depend on earlier answers (screen, then judge, then second
look) runs in rounds: run, have the new requests answered, run again, until a run records nothing new.

    with relay(ANSWERS, NEW_REQUESTS) as env:   # env points the project's [llm] at the relay
        subprocess.run(["monitor", ...], env=env)

`first_turns` keeps, of the recorded requests, those a teacher should answer: a corrective turn (an
assistant reply and a correction after it) only exists because the relay's stand-in answer for an
unanswered request was refused, and goes away once the request is answered.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MONITOR_SHARED", REPO.parent / "shared"))
RELAY = SHARED / "tools" / "llm_relay.py"


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def relay(answers: list[Path], recorded: Path) -> Iterator[dict[str, str]]:
    """`llm_relay.py mixed` answering from the `answers` files (merged), recording what it lacks in
    `recorded`; yields an environment that points every LLM use of `monitor` at it."""
    with tempfile.TemporaryDirectory() as tmp:
        merged = Path(tmp) / "answers.jsonl"
        with merged.open("w", encoding="utf-8") as out:
            for path in answers:
                for row in read_jsonl(path):
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, str(RELAY), "mixed", str(port), str(recorded), str(merged)],
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("MONITOR_", "OPENAI_"))}
            env.update(
                MONITOR_SHARED=str(SHARED),
                MONITOR_LLM__BASE_URL=f"http://127.0.0.1:{port}/v1",
                MONITOR_LLM__API_KEY="relay",
                MONITOR_LLM__MODEL="teacher",
                MONITOR_LLM__CONCURRENCY="4",
                MONITOR_LLM__TIMEOUT_SECONDS="30",
                MONITOR_JUDGE__PROVIDER="openai",
            )
            yield env
        finally:
            server.terminate()
            server.wait()


def first_turns(recorded: Path) -> list[dict[str, Any]]:
    """The recorded requests a teacher answers: first turns only (system and user), each once."""
    seen: set[str] = set()
    out = []
    for row in read_jsonl(recorded):
        roles = [m["role"] for m in row["messages"]]
        if roles == ["system", "user"] and row["key"] not in seen:
            seen.add(row["key"])
            out.append(row)
    return out


def kind_of(request: dict[str, Any]) -> str:
    """screen | recheck | judge | second_look: which stage sent a recorded request (recheck: the screen's
    second reading, relevance.screen_recheck)."""
    schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("name", "")
    second = "second, closer reading" in request["messages"][0]["content"]
    if schema == "screened_papers":
        return "recheck" if second else "screen"
    return "second_look" if second else "judge"
