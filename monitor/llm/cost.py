"""Token estimates before anything is called, and what tokens cost at the configured rates."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from monitor.config import Settings

U = TypeVar("U")


def estimate_tokens(text: str) -> int:
    """Tokens in `text` by the usual four-characters-a-token rule (no tokenizer download needed)."""
    return chars_tokens(len(text))


def chars_tokens(chars: Any) -> Any:
    """`estimate_tokens` of a text of `chars` characters: an int, or a numpy integer array of them."""
    return -(-chars // 4)  # the ceiling in integers, exact at any length


def messages_tokens(messages: list[dict[str, str]]) -> int:
    """Estimated prompt tokens of a chat request's messages."""
    return sum(estimate_tokens(str(m.get("content") or "")) for m in messages)


def token_cost(
    settings: Settings,
    prompt_tokens: int,
    completion_tokens: int,
    batch: bool = False,
    cached_tokens: int = 0,
) -> float:
    """USD for these tokens at the configured per-token rates (llm.price_*): the prompt tokens a
    provider served from its prefix cache (`cached_tokens`, part of `prompt_tokens`) at the cached
    rate, the rest at the input rate; the Batch API costs half of each."""
    cfg = settings.llm
    cached = max(0, min(cached_tokens, prompt_tokens))
    cost = (
        (prompt_tokens - cached) * cfg.price_input_per_million
        + cached * cfg.price_cached_input_per_million
        + completion_tokens * cfg.price_output_per_million
    ) / 1e6
    return cost / 2 if batch else cost


# A provider caches a prompt prefix once it is this long (OpenAI: 1,024 tokens, then in 128-token steps).
CACHE_MIN_TOKENS, CACHE_STEP_TOKENS = 1024, 128


def cached_prefix(tokens: int) -> int:
    """Of a prefix of `tokens` sent again, what a provider serves from its cache (0 below its minimum)."""
    return 0 if tokens < CACHE_MIN_TOKENS else tokens // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS


def cached_of(usage: Any) -> int:
    """The prompt tokens a reply's `usage` says came from the provider's prefix cache (OpenAI's
    `prompt_tokens_details.cached_tokens`); 0 where the server says nothing of it. Never more than the
    prompt itself: a server's odd count must not make a call cheaper than free."""
    if usage is None:
        return 0

    def part(of: Any, name: str) -> Any:
        return of.get(name) if isinstance(of, dict) else getattr(of, name, None)

    cached, prompt = part(part(usage, "prompt_tokens_details"), "cached_tokens"), part(usage, "prompt_tokens")
    try:
        return max(0, min(int(cached or 0), int(prompt or 0)))
    except (TypeError, ValueError):
        return 0


def within_budget(units: Sequence[U], tokens: Callable[[U], int], budget: int | None) -> tuple[list[U], bool]:
    """The leading units whose estimated tokens fit `budget`, and whether any had to be left out."""
    chosen: list[U] = []
    planned = 0
    for unit in units:
        if budget is not None and planned + tokens(unit) > budget:
            return chosen, True
        planned += tokens(unit)
        chosen.append(unit)
    return chosen, False
