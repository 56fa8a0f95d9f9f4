"""The local embedding backend (int8 MiniLM on onnxruntime) and its cache in the embeddings table."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import func, select

from monitor.embeddings import Embedder, cached_embeddings, from_bytes, get_embedder, to_bytes
from monitor.store.models import Embedding


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return get_embedder()


def test_vectors_are_unit_length_and_meaningful(embedder: Embedder) -> None:
    texts = [
        "Reinforcement learning fine-tuning reduces the diversity of model outputs.",
        "Fine-tuning with reinforcement learning makes the outputs of a model less diverse.",
        "The recipe needs two cups of flour and a pinch of salt.",
        "",
    ]
    vecs = embedder.embed(texts)
    assert vecs.shape == (4, embedder.dim) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    paraphrase, unrelated = float(vecs[0] @ vecs[1]), float(vecs[0] @ vecs[2])
    assert paraphrase > 0.6
    assert unrelated < 0.2
    assert embedder.embed([]).shape == (0, embedder.dim)


def test_batching_does_not_change_vectors(embedder: Embedder) -> None:
    texts = ["short text", "a considerably longer sentence about sparse parameter updates in RL " * 3]
    together = embedder.embed(texts)
    apart = np.vstack([embedder.embed([t]) for t in texts])
    assert np.allclose(together, apart, atol=1e-5)


def test_long_text_is_truncated_not_rejected(embedder: Embedder) -> None:
    vec = embedder.embed(["word " * 5000])
    assert np.isfinite(vec).all()


def test_bytes_round_trip() -> None:
    vec = np.linspace(-1, 1, 384, dtype=np.float32)
    assert np.array_equal(from_bytes(to_bytes(vec), 384), vec)
    with pytest.raises(ValueError):
        from_bytes(to_bytes(vec), 100)


class CountingEmbedder(Embedder):
    """The real embedder, counting how many texts it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim, self.count = inner, inner.name, inner.dim, 0

    def embed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        self.count += len(texts)
        return self.inner.embed(texts, batch_size)


def test_cached_embeddings_embed_each_key_once(store, embedder: Embedder) -> None:
    counting = CountingEmbedder(embedder)
    first = cached_embeddings(store, {"paper:1v1": "sparse updates", "claim:a:h": "RL is sparse"}, counting)
    assert counting.count == 2
    second = cached_embeddings(
        store, {"paper:1v1": "sparse updates", "claim:a:h": "RL is sparse", "paper:2v1": "new"}, counting
    )
    assert counting.count == 3  # only the new key was embedded
    assert np.allclose(first["paper:1v1"], second["paper:1v1"])
    assert np.allclose(second["paper:2v1"], embedder.embed(["new"])[0], atol=1e-6)
    with store.session() as session:
        assert session.scalar(select(func.count()).select_from(Embedding)) == 3
        row = session.scalars(select(Embedding).where(Embedding.key == "claim:a:h")).one()
        assert row.model == embedder.name and row.dim == embedder.dim
