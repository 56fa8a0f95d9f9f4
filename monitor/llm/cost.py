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


def token_cost(settings: Settings, prompt_tokens: int, completion_tokens: int, batch: bool = False) -> float:
    """USD for these tokens at the configured per-token rates (llm.price_*); the Batch API costs half."""
    cfg = settings.llm
    cost = (
        prompt_tokens * cfg.price_input_per_million + completion_tokens * cfg.price_output_per_million
    ) / 1e6
    return cost / 2 if batch else cost


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
