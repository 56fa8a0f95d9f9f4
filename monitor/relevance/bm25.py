"""Lexical relevance: BM25 with corpus statistics frozen from a reference corpus.

Plain BM25 scores depend on the corpus they are computed in (IDF, average length), so the same
(paper, claim) pair would score differently in a batch of 300 new papers than in the whole store,
and a fixed score cut would select a different share of each batch. Here the document frequencies
and average length come from a fixed reference corpus (`Lexicon`; the shipped one counts 22,120
arXiv cs.CL/cs.LG/cs.AI abstracts from 2024-2026), so a pair's score is the same whatever else is
being scanned with it, and scanning can be incremental.

Tokens are bm25s's (lower-cased words, English stop words removed) stemmed by Snowball.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import bm25s
import numpy as np

from monitor.errors import ConfigError

REFERENCE_LEXICON = Path(__file__).parent / "data" / "reference_lexicon.jsonl.gz"
TOKENIZER = "bm25s-en-stop+snowball-en"


@lru_cache(maxsize=1)
def _stemmer() -> object:
    import Stemmer  # PyStemmer

    return Stemmer.Stemmer("english")


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Stemmed, stop-word-free tokens of each text."""
    if not texts:
        return []
    tokens = bm25s.tokenize(
        list(texts), stemmer=_stemmer(), stopwords="en", return_ids=False, show_progress=False
    )
    return [list(doc) for doc in tokens]


@dataclass
class Lexicon:
    """Document frequencies and average length of a reference corpus: BM25's corpus statistics."""

    n_docs: int
    avg_len: float
    df: dict[str, int] = field(default_factory=dict)

    @classmethod
    def build(cls, docs: Iterable[list[str]]) -> Lexicon:
        df: Counter[str] = Counter()
        n_docs = 0
        total = 0
        for tokens in docs:
            n_docs += 1
            total += len(tokens)
            df.update(set(tokens))
        return cls(n_docs=n_docs, avg_len=total / max(n_docs, 1), df=dict(df))

    def idf(self, token: str) -> float:
        # Lucene's IDF; a word the reference never saw counts as seen in one document.
        df = self.df.get(token, 1)
        return math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            header = {"n_docs": self.n_docs, "avg_len": self.avg_len, "tokenizer": TOKENIZER}
            fh.write(json.dumps(header) + "\n")
            for token, count in sorted(self.df.items()):
                fh.write(json.dumps([token, count]) + "\n")

    @classmethod
    def load(cls, path: Path) -> Lexicon:
        try:
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                header = json.loads(fh.readline())
                if header.get("tokenizer") != TOKENIZER:
                    raise ConfigError(f"{path}: lexicon built with tokenizer {header.get('tokenizer')!r}")
                df = {token: int(count) for token, count in map(json.loads, fh)}
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"{path}: cannot read BM25 reference lexicon: {exc}") from None
        return cls(n_docs=int(header["n_docs"]), avg_len=float(header["avg_len"]), df=df)


@lru_cache(maxsize=4)
def load_lexicon(path: Path = REFERENCE_LEXICON) -> Lexicon:
    return Lexicon.load(path)


@dataclass
class BM25Scorer:
    """Scores token lists against queries with BM25 (Lucene variant) and a frozen `Lexicon`."""

    lexicon: Lexicon
    k1: float = 1.5
    b: float = 0.75

    def score(self, queries: Sequence[list[str]], docs: Sequence[list[str]]) -> np.ndarray:
        """A (len(queries), len(docs)) float32 matrix of BM25 scores."""
        vocab = sorted({t for q in queries for t in q})
        column = {t: i for i, t in enumerate(vocab)}
        q_counts = np.zeros((len(queries), len(vocab)), dtype=np.float32)
        for row, query in enumerate(queries):
            for token, count in Counter(query).items():
                q_counts[row, column[token]] = count
        tf = np.zeros((len(docs), len(vocab)), dtype=np.float32)
        lengths = np.zeros(len(docs), dtype=np.float32)
        for row, doc in enumerate(docs):
            lengths[row] = len(doc)
            for token, count in Counter(t for t in doc if t in column).items():
                tf[row, column[token]] = count
        idf = np.array([self.lexicon.idf(t) for t in vocab], dtype=np.float32)
        norm = self.k1 * (1.0 - self.b + self.b * lengths / self.lexicon.avg_len)
        saturated = tf * (self.k1 + 1.0) / (tf + norm[:, None])
        return (q_counts * idf) @ saturated.T
