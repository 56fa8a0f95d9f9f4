"""What a model reads (a paper version, claims) and the record one request leaves (an Exchange)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

# What a prompt carries of a paper at most: arXiv caps abstracts at 1,920 characters, so only malformed
# or hostile text is cut (a megabyte abstract would otherwise be sent, and paid for, verbatim).
MAX_TITLE_CHARS = 500
MAX_ABSTRACT_CHARS = 4000


def clip(text: str, limit: int, what: str) -> str:
    """`text` cut to `limit` characters, with a marker saying so (the model should know it reads a part)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} [{what} truncated: {limit:,} of {len(text):,} characters shown]"


@dataclass(frozen=True)
class PaperText:
    """The parts of a paper version a model may read."""

    arxiv_id: str
    version: int
    title: str
    abstract: str
    published: str | None = None  # ISO date the paper appeared, shown to LLM judges beside the claim's date

    def for_prompt(self) -> PaperText:
        """This paper as a prompt carries it: title and abstract capped (MAX_*_CHARS)."""
        return replace(
            self,
            title=clip(self.title, MAX_TITLE_CHARS, "title"),
            abstract=clip(self.abstract, MAX_ABSTRACT_CHARS, "abstract"),
        )


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
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's prefix cache
    latency_ms: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # (prompt, completion) tokens estimated locally, for a reply whose server reported no usage
    estimated: tuple[int, int] | None = None


# The recorder stores an Exchange and returns its row id (or None when nothing is stored).
Recorder = Callable[[Exchange], int | None]
