"""The embedding cache (`embeddings` rows): stored vectors by key and model, adding new ones.

Vectors travel as bytes here; monitor/embeddings.py turns them into arrays.
"""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.models import Embedding

KEY_CHUNK = 500  # keys per IN (...) query


def stored_vectors(session: Session, keys: list[str], model: str) -> Iterator[tuple[str, bytes, int]]:
    """(key, vector bytes, dim) of each of `keys` stored for `model`."""
    unique = sorted(set(keys))
    for start in range(0, len(unique), KEY_CHUNK):
        chunk = unique[start : start + KEY_CHUNK]
        rows = session.execute(
            select(Embedding.key, Embedding.vector, Embedding.dim).where(
                Embedding.model == model, Embedding.key.in_(chunk)
            )
        )
        yield from rows.tuples()


def add_vectors(session: Session, model: str, dim: int, vectors: dict[str, bytes]) -> None:
    """Store `vectors` (key -> bytes) for `model`; the caller handles a key stored meanwhile."""
    session.add_all(Embedding(key=key, model=model, dim=dim, vector=blob) for key, blob in vectors.items())
