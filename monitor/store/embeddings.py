"""The embedding cache (`embeddings` rows): stored vectors by key and model, adding new ones.

Vectors travel as bytes here; monitor/embeddings.py turns them into arrays.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from monitor.store.chunks import in_chunks
from monitor.store.models import Embedding


def stored_vectors(session: Session, keys: list[str], model: str) -> list[tuple[str, bytes, int]]:
    """(key, vector bytes, dim) of each of `keys` stored for `model`."""
    found: list[tuple[str, bytes, int]] = []
    for chunk in in_chunks(sorted(set(keys))):
        rows = session.execute(
            select(Embedding.key, Embedding.vector, Embedding.dim).where(
                Embedding.model == model, Embedding.key.in_(chunk)
            )
        )
        found.extend((key, blob, dim) for key, blob, dim in rows)
    return found


def add_vectors(session: Session, model: str, dim: int, vectors: dict[str, bytes]) -> None:
    """Store `vectors` (key -> bytes) for `model`; the caller handles a key stored meanwhile."""
    session.add_all(Embedding(key=key, model=model, dim=dim, vector=blob) for key, blob in vectors.items())
