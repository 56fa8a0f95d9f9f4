"""What a model reads (a paper version, claims) and the record one request leaves (an Exchange)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PaperText:
    """The parts of a paper version a model may read."""

    arxiv_id: str
    version: int
    title: str
    abstract: str
    published: str | None = None  # ISO date the paper appeared, shown to LLM judges beside the claim's date


@dataclass(frozen=True)
class ClaimText:
    """A claim as a model sees it: its stable id, its text and the date it was made."""

    id: str
    text: str
    date_text: str | None = None


@dataclass
class Exchange:
    """One request to a model and its outcome, handed to the recorder for the llm_exchanges table."""

    provider: str
    model: str
    prompt_version: str
    request: dict[str, Any]
    response: str | None = None
    response_format: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# The recorder stores an Exchange and returns its row id (or None when nothing is stored).
Recorder = Callable[[Exchange], int | None]
