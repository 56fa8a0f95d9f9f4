"""Finding an OpenAI-compatible server on this machine, for `monitor init` and `monitor doctor`.

The usual local servers listen on known ports (Ollama 11434, llama.cpp 8080, LM Studio 1234, vLLM 8000).
Each port is tried on 127.0.0.1 and localhost with short timeouts, all at once, so nothing listening
costs about a second at most; a server counts only when `GET /v1/models` answers an OpenAI model list.

Such a server usually answers one request at a time, and on a CPU one call can take minutes
(README, "Using a local LLM server"), so the settings proposed for it are one request in flight (or
llama.cpp's slot count, from its `/props`) and a long timeout.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from monitor.config import MAX_CONCURRENCY

# port -> the server that usually listens there (a guess: any OpenAI-compatible server is taken)
USUAL_PORTS: dict[int, str] = {11434: "Ollama", 8080: "llama.cpp", 1234: "LM Studio", 8000: "vLLM"}
HOSTS = ("127.0.0.1", "localhost")
CONNECT_SECONDS = 0.3
ANSWER_SECONDS = 2.0
LOCAL_TIMEOUT_SECONDS = 300.0  # llm.timeout_seconds for a local server: longer than a slow CPU call

# Models that cannot judge (embeddings, rerankers, speech): never picked while another is listed.
_NOT_CHAT = ("embed", "rerank", "bge-", "e5-", "whisper", "tts", "clip")
# Names that say the model follows instructions: preferred among the rest.
_CHAT = ("instruct", "chat", "-it", ":it")


@dataclass(frozen=True)
class FoundServer:
    """An OpenAI-compatible server that answered, and what it serves."""

    base_url: str  # http://127.0.0.1:8080/v1
    kind: str  # the server usual on that port
    models: list[str]
    slots: int | None = None  # requests it serves at once, where it says so (llama.cpp)

    @property
    def model(self) -> str | None:
        """The model to judge with: an instruction-following chat model where one is listed, else the first
        chat model (servers list the loaded one first)."""
        chat = [m for m in self.models if not any(word in m.lower() for word in _NOT_CHAT)] or self.models
        preferred = [m for m in chat if any(word in m.lower() for word in _CHAT)]
        return (preferred or chat or [None])[0]

    @property
    def other_models(self) -> list[str]:
        return [m for m in self.models if m != self.model]

    def llm_settings(self) -> dict[str, Any]:
        """The [llm] settings that work against this server (README, "Using a local LLM server")."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "concurrency": self.slots or 1,
            "timeout_seconds": LOCAL_TIMEOUT_SECONDS,
        }


@dataclass
class Detection:
    """What a scan found: the servers that answered, in the order of the ports asked."""

    ports: list[int]
    servers: list[FoundServer] = field(default_factory=list)

    @property
    def chosen(self) -> FoundServer | None:
        """The first server that lists a model."""
        return next((s for s in self.servers if s.model), None)


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=CONNECT_SECONDS):
            return True
    except OSError:
        return False


def _get_json(url: str, api_key: str | None = None, timeout: float = ANSWER_SECONDS) -> Any:
    """The JSON a GET answers, or None for any failure (no server, not JSON, an error status)."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError, urllib.error.URLError):
        return None


def list_models(
    base_url: str, api_key: str | None = None, timeout: float = ANSWER_SECONDS
) -> list[str] | None:
    """The model ids an OpenAI-compatible server lists at `base_url`/models; None when it does not answer
    such a list."""
    body = _get_json(base_url.rstrip("/") + "/models", api_key, timeout)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    return [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]


def _slots(host: str, port: int) -> int | None:
    """llama.cpp's server says how many requests it serves at once (`-np N`) in GET /props."""
    props = _get_json(f"http://{host}:{port}/props")
    slots = props.get("total_slots") if isinstance(props, dict) else None
    # What a server says is bounded as the setting is (llm.concurrency): 100000000 would not load.
    return min(slots, MAX_CONCURRENCY) if isinstance(slots, int) and slots > 0 else None


def _probe(port: int) -> FoundServer | None:
    for host in HOSTS:
        if not _listening(host, port):
            continue
        base_url = f"http://{host}:{port}/v1"
        models = list_models(base_url)
        if models is not None:
            kind = USUAL_PORTS.get(port, "OpenAI-compatible")
            return FoundServer(base_url, kind, models, _slots(host, port))
    return None


def find_servers(ports: list[int] | None = None) -> Detection:
    """Scan `ports` (default: the usual ones) on this machine, in parallel."""
    wanted = list(dict.fromkeys(ports or USUAL_PORTS))
    with ThreadPoolExecutor(max_workers=len(wanted)) as pool:
        found = list(pool.map(_probe, wanted))
    return Detection(wanted, [s for s in found if s is not None])
