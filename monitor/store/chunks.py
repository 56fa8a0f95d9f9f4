"""Splitting long id lists for `IN (...)` queries."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

IN_CHUNK = 500  # values per IN (...) query: well under every driver's parameter limit


def in_chunks(items: Sequence[T], size: int = IN_CHUNK) -> Iterator[Sequence[T]]:
    """`items` in consecutive slices of at most `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]
