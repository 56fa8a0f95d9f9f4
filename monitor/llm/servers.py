"""Finding an OpenAI-compatible server on this machine, for `monitor init` and `monitor doctor`.

The usual local servers listen on known ports (Ollama 11434, llama.cpp 8080, LM Studio 1234, vLLM 8000).
Each port is tried on 127.0.0.1 and localhost, all at once, and a server counts only when `GET
/v1/models` answers an OpenAI model list. The whole scan has one deadline (SCAN_SECONDS), not a
timeout per read: a server that sends its headers and then a byte a second would otherwise hold
`init` for minutes. Nothing listening costs about a second at most.

What a server says is untrusted: model names are cleaned of control characters (`text.printable`:
no terminal escape reaches the screen or monitor.toml), a body is read up to MAX_BODY_BYTES, and
llama.cpp's slot count is believed up to MAX_SLOTS. No API key is ever sent to a scanned port.

Such a server usually answers one request at a time, and on a CPU one call can take minutes
(README, "Using a local LLM server"), so the settings proposed for it are one request in flight (or
llama.cpp's slot count, from its `/props`) and a long timeout.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx2

from monitor.config import MAX_CONCURRENCY
from monitor.text import printable

# port -> the server that usually listens there (a guess: any OpenAI-compatible server is taken)
USUAL_PORTS: dict[int, str] = {11434: "Ollama", 8080: "llama.cpp", 1234: "LM Studio", 8000: "vLLM"}
HOSTS = ("127.0.0.1", "localhost")
CONNECT_SECONDS = 0.3
SCAN_SECONDS = 3.0  # the whole scan: every port, both hosts, the model list and the slot count
ANSWER_SECONDS = 5.0  # a configured server's whole answer to GET /models (monitor doctor)
MAX_BODY_BYTES = 1 << 20  # a model list is a few kB; anything past a MiB is not one
MAX_MODELS = 200  # names kept from one list
MAX_NAME_CHARS = 200  # characters kept of one name
MAX_SLOTS = 32  # llm.concurrency proposed at most, whatever /props claims
LOCAL_TIMEOUT_SECONDS = 300.0  # llm.timeout_seconds for a local server: longer than a slow CPU call
T = TypeVar("T")

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
            "concurrency": min(self.slots or 1, MAX_SLOTS),
            "timeout_seconds": LOCAL_TIMEOUT_SECONDS,
        }


@dataclass
class Detection:
    """What a scan found: the servers that answered, in the order of the ports asked, and the
    addresses that took a connection but gave no complete answer by the deadline."""

    ports: list[int]
    servers: list[FoundServer] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)  # "127.0.0.1:11434"
    seconds: float = SCAN_SECONDS  # the scan's deadline

    @property
    def chosen(self) -> FoundServer | None:
        """The first server that lists a model."""
        return next((s for s in self.servers if s.model), None)


class _Late(Exception):
    """No complete answer by the deadline."""


async def _by(deadline: float, work: Awaitable[T]) -> T:
    """`work` if it finishes by `deadline` (the event loop's clock), else _Late."""
    try:
        async with asyncio.timeout_at(deadline):
            return await work
    except TimeoutError:
        raise _Late from None


async def _get_json(client: httpx2.AsyncClient, url: str, api_key: str | None = None) -> Any:
    """The JSON a GET answers, or None for any failure (no server, an error status, not JSON, too big)."""
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    try:
        async with client.stream("GET", url, headers=headers) as response:
            if not response.is_success:
                return None
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    return None
        return json.loads(body)
    except (httpx2.HTTPError, httpx2.InvalidURL, ValueError):
        return None


def _names(body: Any) -> list[str] | None:
    """The model ids of an OpenAI model list, cleaned for printing and writing; None: not such a list."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return None
    ids = (str(m["id"]) for m in data if isinstance(m, dict) and m.get("id"))
    names = (" ".join(printable(name).split())[:MAX_NAME_CHARS] for name in ids)  # one line each
    return [name for name in names if name][:MAX_MODELS]


def _client(trust_env: bool, connect: float = CONNECT_SECONDS) -> httpx2.AsyncClient:
    # Per-read timeouts only stop a silent server early; the deadline (_by) bounds the whole answer.
    timeout = httpx2.Timeout(SCAN_SECONDS, connect=connect)
    return httpx2.AsyncClient(timeout=timeout, trust_env=trust_env, follow_redirects=False)


def list_models(
    base_url: str, api_key: str | None = None, timeout: float = ANSWER_SECONDS
) -> list[str] | None:
    """The model ids an OpenAI-compatible server lists at `base_url`/models; None when it does not answer
    such a list, completely, within `timeout` seconds."""

    async def ask() -> list[str] | None:
        deadline = asyncio.get_running_loop().time() + timeout
        # A configured server may be far away, behind a proxy: the connection may take the whole time.
        async with _client(trust_env=True, connect=timeout) as client:
            try:
                return _names(
                    await _by(deadline, _get_json(client, base_url.rstrip("/") + "/models", api_key))
                )
            except _Late:
                return None

    return asyncio.run(ask())


async def _slots(client: httpx2.AsyncClient, host: str, port: int) -> int | None:
    """llama.cpp's server says how many requests it serves at once (`-np N`) in GET /props."""
    props = await _get_json(client, f"http://{host}:{port}/props")
    slots = props.get("total_slots") if isinstance(props, dict) else None
    # What a server says is bounded as the setting is (llm.concurrency): 100000000 would not load.
    if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0:
        return min(slots, MAX_CONCURRENCY)
    return None


async def _probe(client: httpx2.AsyncClient, port: int, deadline: float) -> FoundServer | str | None:
    """The server on `port`; "host:port" when one took the connection but did not answer in time."""
    for host in HOSTS:
        base_url = f"http://{host}:{port}/v1"
        try:
            models = _names(await _by(deadline, _get_json(client, base_url + "/models")))
        except _Late:
            return f"{host}:{port}"
        if models is None:
            continue
        try:
            slots = await _by(deadline, _slots(client, host, port))
        except _Late:
            slots = None  # the models answered: the server is usable, its slot count unknown
        return FoundServer(base_url, USUAL_PORTS.get(port, "OpenAI-compatible"), models, slots)
    return None


def find_servers(ports: list[int] | None = None, seconds: float = SCAN_SECONDS) -> Detection:
    """Scan `ports` (default: the usual ones) on this machine, all at once, within `seconds` in all."""
    wanted = list(dict.fromkeys(ports or USUAL_PORTS))

    async def scan() -> list[FoundServer | str | None]:
        deadline = asyncio.get_running_loop().time() + seconds
        async with _client(trust_env=False) as client:  # 127.0.0.1 is never reached through a proxy
            return await asyncio.gather(*(_probe(client, port, deadline) for port in wanted))

    found = asyncio.run(scan())
    return Detection(
        wanted,
        [s for s in found if isinstance(s, FoundServer)],
        [s for s in found if isinstance(s, str)],
        seconds,
    )
