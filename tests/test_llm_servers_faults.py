"""What a local port says is not to be trusted (issue 33, items 5 and 8): `monitor init` and `monitor
doctor` against real HTTP servers on 127.0.0.1 that list hostile model names, claim 100,000,000 slots
or trickle their answer a byte at a time; and the API key, which goes only to the server it is for
(never to a server `monitor init` adopted), counted on the requests the scripted server records."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import Reply, ScriptedLLM, answering
from ops_helpers import bare_environ, bare_monitor
from pydantic import SecretStr
from test_judge_runner import seed

from monitor.config import OPENAI_API_URL, LLMSettings, load_settings, same_server
from monitor.llm.servers import MAX_SLOTS, SCAN_SECONDS, find_servers, list_models
from monitor.store import open_store

SECRET = "sk-scope-test-9d2f-never-sent-to-a-local-port"


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        server.routes["/v1/models"] = Reply(body={"object": "list", "data": [{"id": "scripted-model"}]})
        server.default = answering("SUPPORTS")
        yield server


def _port(server: ScriptedLLM) -> str:
    return server.url.rsplit(":", 1)[1].split("/")[0]


def _carrying_key(server: ScriptedLLM) -> int:
    return sum(SECRET in r.headers.get("authorization", "") for r in server.requests)


# --- item 5: the key goes only to the server it is for -----------------------------------------------


def _init_then_judge(tmp_path: Path, llm: ScriptedLLM, **env: str) -> subprocess.CompletedProcess[str]:
    """`monitor init` adopts the scripted server on its port; 25 pairs wait; `monitor judge`."""
    made = bare_monitor("init", "--no-import", "--port", _port(llm), cwd=tmp_path, OPENAI_API_KEY=SECRET)
    assert made.returncode == 0, made.stderr
    assert tomllib.loads((tmp_path / "monitor.toml").read_text())["llm"]["base_url"] == llm.url
    store = open_store(f"sqlite:///{tmp_path / 'monitor.db'}")
    seed(store, papers=5, claims=5)
    store.close()
    llm.requests.clear()
    return bare_monitor("judge", "--skip-relevance", cwd=tmp_path, OPENAI_API_KEY=SECRET, **env)


def test_a_server_init_adopted_never_gets_the_api_key(tmp_path: Path, llm: ScriptedLLM) -> None:
    done = _init_then_judge(tmp_path, llm)
    assert done.returncode == 0, done.stderr
    asked = llm.chat_requests()
    assert len(asked) >= 5  # 25 pairs, 4 claims a call
    assert _carrying_key(llm) == 0, [r.headers.get("authorization") for r in asked]
    assert SECRET not in done.stdout + done.stderr
    doctor = bare_monitor("doctor", "--port", _port(llm), cwd=tmp_path, OPENAI_API_KEY=SECRET)
    assert f"API key: set for {OPENAI_API_URL} only, so not sent to {llm.url}" in doctor.stdout
    assert _carrying_key(llm) == 0  # doctor's own look at the server sent none either


def test_a_key_named_for_the_server_is_sent_to_it(tmp_path: Path, llm: ScriptedLLM) -> None:
    done = _init_then_judge(tmp_path, llm, MONITOR_LLM__KEY_BASE_URL=llm.url + "/")
    assert done.returncode == 0, done.stderr
    assert _carrying_key(llm) == len(llm.requests) > 0


KEYS = {"OPENAI_API_KEY": SECRET}
LOCAL = "http://127.0.0.1:11434/v1"


@pytest.mark.parametrize(
    ("env", "file", "sent"),
    [
        (KEYS, "", True),  # the OpenAI API
        ({**KEYS, "OPENAI_BASE_URL": "https://proxy.example/v1"}, "", True),  # the pair the SDK reads
        (KEYS, f'base_url = "{LOCAL}"', False),  # a server in the file: the leak of the issue
        ({**KEYS, "OPENAI_BASE_URL": "https://proxy.example/v1"}, f'base_url = "{LOCAL}"', False),
        ({"MONITOR_LLM__API_KEY": SECRET, "MONITOR_LLM__BASE_URL": LOCAL}, "", True),
        ({"MONITOR_LLM__API_KEY": SECRET}, f'base_url = "{LOCAL}"', False),
        ({"MONITOR_LLM__API_KEY": SECRET}, f'base_url = "{LOCAL}"\nkey_base_url = "{LOCAL}/"', True),
        ({"MONITOR_JUDGE__API_KEY": SECRET, "MONITOR_JUDGE__BASE_URL": LOCAL}, "", True),  # old spelling
    ],
    ids=[
        "openai-key-alone",
        "openai-key-and-base-url",
        "openai-key-file-server",
        "openai-pair-file-server",
        "monitor-key-and-url",
        "monitor-key-file-server",
        "file-names-the-server",
        "judge-spelling-pair",
    ],
)
def test_where_the_key_goes(monkeypatch, tmp_path, caplog, env, file, sent) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MONITOR_LLM__API_KEY", "MONITOR_LLM__BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    config = tmp_path / "monitor.toml"
    config.write_text(f"[llm]\n{file}\n")
    with caplog.at_level(logging.WARNING):
        llm = load_settings(config).llm
    assert (llm.api_key is not None) == sent
    assert (llm.withheld_for is None) == sent
    # Only a key the user set for this project warns; a shell-wide OPENAI_API_KEY is just kept home.
    warned = [r.getMessage() for r in caplog.records if "not sent to" in r.getMessage()]
    assert bool(warned) == (not sent and "OPENAI_API_KEY" not in env)
    assert all(SECRET not in message for message in warned)


def test_base_urls_compare_as_servers() -> None:
    assert same_server("https://API.openai.com:443/v1/", OPENAI_API_URL)
    assert not same_server("http://api.openai.com/v1", OPENAI_API_URL)  # another scheme
    assert not same_server("https://api.openai.com.evil.example/v1", OPENAI_API_URL)
    assert not same_server("http://127.0.0.1:11434/v1", "http://127.0.0.1:8080/v1")
    built = LLMSettings(api_key=SecretStr(SECRET), base_url=LOCAL)
    assert built.api_key is None and built.withheld_for == OPENAI_API_URL


# --- item 5: what a local server says --------------------------------------------------------------

HOSTILE = ["\x1b[2J\x1b[31mqwen2.5-instruct", "\x1b]8;;https://evil.example/\x07phi3\x1b]8;;\x07", "x\x9b1mz"]


def test_hostile_model_names_and_slot_counts_are_cleaned_and_bounded(
    tmp_path: Path, llm: ScriptedLLM
) -> None:
    llm.routes["/v1/models"] = Reply(body={"object": "list", "data": [{"id": m} for m in HOSTILE]})
    llm.routes["/props"] = Reply(body={"total_slots": 100_000_000})
    [server] = find_servers([int(_port(llm))]).servers
    # The control characters go (text.printable); what they introduced stays as inert text.
    assert server.models == ["[2J[31mqwen2.5-instruct", "]8;;https://evil.example/phi3]8;;", "x1mz"]
    assert server.llm_settings()["concurrency"] == MAX_SLOTS
    done = bare_monitor("init", "--no-import", "--port", _port(llm), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    written = (tmp_path / "monitor.toml").read_text()
    for text in (done.stdout, done.stderr, written):
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
    assert "\\u001b" not in written.lower() and "\\e" not in written
    llm_section = tomllib.loads(written)["llm"]
    assert llm_section["model"] == "[2J[31mqwen2.5-instruct" and llm_section["concurrency"] == MAX_SLOTS
    assert load_settings(tmp_path / "monitor.toml").llm.concurrency == MAX_SLOTS


# --- item 8: a server that trickles its answer ------------------------------------------------------


class Trickle:
    """A server on 127.0.0.1 that sends a 200's headers at once, then its body a byte every 0.2 s."""

    def __init__(self, length: int = 100_000) -> None:
        self.length = length
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.connections = 0

    def __enter__(self) -> Trickle:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.sock.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                head += f"Content-Length: {self.length}\r\n\r\n"
                conn.sendall(head.encode())
                for _ in range(self.length):
                    if self.stop.wait(0.2):
                        return
                    conn.sendall(b" ")
            except OSError:
                return  # the client gave up


def _cli(*args: str, cwd: Path, timeout: float = 40) -> tuple[subprocess.CompletedProcess[str], float]:
    """`monitor <args>` as its own process (so that an old, hanging build is stopped by the timeout)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", "from monitor.cli import main; main()", *args],
        cwd=cwd,
        env=bare_environ(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done, time.monotonic() - started


def test_init_and_doctor_give_up_on_a_trickling_server_at_one_deadline(tmp_path: Path) -> None:
    with Trickle() as trickle:
        line = f"local LLM server at 127.0.0.1:{trickle.port}: no complete answer within {SCAN_SECONDS:g} s"
        doctor, took = _cli("doctor", "--write", "--port", str(trickle.port), cwd=tmp_path)
        assert doctor.returncode == 0 and "Traceback" not in doctor.stderr, doctor.stderr
        assert line in doctor.stdout and took < 20
        assert not (tmp_path / "monitor.toml").exists()  # nothing adopted, nothing written
        init, took = _cli("init", "--no-import", "--port", str(trickle.port), cwd=tmp_path)
        assert init.returncode == 0 and "Traceback" not in init.stderr, init.stderr
        assert line in init.stdout and took < 20
        assert tomllib.loads((tmp_path / "monitor.toml").read_text())["llm"] == {}  # the defaults only
        started = time.monotonic()  # in this process, now that a hang would have shown above
        detection = find_servers([trickle.port])
        assert time.monotonic() - started < SCAN_SECONDS + 1.5
        assert detection.servers == [] and detection.unanswered == [f"127.0.0.1:{trickle.port}"]
        # A configured server that trickles: the doctor names it as not answering, within its deadline.
        (tmp_path / "monitor.toml").write_text(f'[llm]\nbase_url = "{trickle.url}"\nmodel = "m"\n')
        started = time.monotonic()
        assert list_models(trickle.url, timeout=1.0) is None
        assert time.monotonic() - started < 2.5
        configured, took = _cli("doctor", "--port", str(trickle.port), cwd=tmp_path)
        assert configured.returncode == 0 and "Traceback" not in configured.stderr, configured.stderr
        assert f"the server at {trickle.url} does not answer" in configured.stdout and took < 25
