"""How well a paper matches a claim: one score per (claim, paper), independent of other papers.

`bm25`: BM25 against a frozen reference lexicon, divided by the most the query could score, so
it lies in 0..1 for every claim. `hybrid` adds the cosine similarity of MiniLM embeddings of the
claim query and the paper's title (titles embed ~20x faster than abstracts on a CPU, which keeps
a whole-corpus replay within minutes; bench/relevance_bench.py measures the trade), for papers
whose best BM25 over the claims reaches `embed_gate`.

Because no score depends on the rest of the batch, a paper scores the same whether it is scanned
with 10 others or 20,000, which is what lets selection be incremental.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from monitor.config import RelevanceSettings
from monitor.llm.texts import ClaimText, PaperText
from monitor.relevance.bm25 import BM25Scorer, Lexicon, load_lexicon, tokenize
from monitor.relevance.text import paper_text


def title_key(paper: PaperText) -> str:
    """The cached embedding's key of a paper version's title."""
    # What is embedded is the title, so the key says so; abstracts would use another key.
    return f"title:{paper.arxiv_id}v{paper.version}"


TitleVectors = Callable[[Sequence[PaperText]], np.ndarray]
TextVectors = Callable[[Sequence[str]], np.ndarray]


class RelevanceScorer:
    """Scores papers against a fixed list of claims with the configured method."""

    def __init__(
        self,
        settings: RelevanceSettings,
        claims: Sequence[ClaimText],
        title_vectors: TitleVectors | None = None,
        text_vectors: TextVectors | None = None,
        lexicon: Lexicon | None = None,
    ) -> None:
        self.settings = settings
        self.claims = list(claims)
        self.method = settings.method
        self._bm25 = BM25Scorer(lexicon or load_lexicon())
        queries = [c.query_text(settings.query_context) for c in self.claims]
        self.queries = queries
        # Each query word counts once: the note title, the line questions and the claim repeat the
        # line's vocabulary ("RL", "diversity"), and counting repeats let those common words outweigh
        # the claim's own. On the 22,120-paper snapshot at ~2% of pairs this lifts the hybrid's
        # dev recall from 0.655 to 0.724 (bench/relevance_bench.py).
        self._query_tokens = [list(dict.fromkeys(q)) for q in tokenize(queries)]
        # The most a query can score: every term present, saturated, in a document of average length.
        best = np.array(
            [sum(self._bm25.lexicon.idf(t) for t in q) * (self._bm25.k1 + 1.0) for q in self._query_tokens],
            dtype=np.float32,
        )
        self._best = np.where(best > 0, best, 1.0)
        self._title_vectors = title_vectors
        self._claim_vectors: np.ndarray | None = None
        if self.method == "hybrid":
            if title_vectors is None or text_vectors is None:
                raise ValueError("the hybrid method needs title and text embeddings")
            self._claim_vectors = text_vectors(queries) if queries else np.zeros((0, 1), np.float32)

    def lexical(self, tokens: Sequence[list[str]]) -> np.ndarray:
        """BM25 of every claim against the tokenised papers, divided by the most each query could score.

        It depends only on the queries (`query_context`), so scorers of other methods, gates or
        weights over the same claims can share it (`score(..., lexical=)`).
        """
        return self._bm25.score(self._query_tokens, tokens) / self._best[:, None]

    def score(
        self,
        papers: Sequence[PaperText],
        tokens: Sequence[list[str]] | None = None,
        claims: Sequence[int] | None = None,
        lexical: np.ndarray | None = None,
    ) -> np.ndarray:
        """A (claims, papers) float32 matrix; higher is more relevant.

        `tokens`: the papers already tokenised; `claims`: only these rows (indices into `claims`);
        `lexical`: `lexical(tokens)` of these papers, already computed by a scorer with the same queries.
        """
        rows = list(range(len(self.claims))) if claims is None else list(claims)
        if not rows or not papers:
            return np.zeros((len(rows), len(papers)), dtype=np.float32)
        if lexical is None:
            docs = (
                tokens if tokens is not None else tokenize([paper_text(p.title, p.abstract) for p in papers])
            )
            lexical = self.lexical(docs)
        if self.method == "bm25":
            return lexical[rows].astype(np.float32, copy=False)
        assert self._title_vectors is not None and self._claim_vectors is not None
        scores = self.settings.lexical_weight * lexical[rows]
        # Embedding is the slow part; a paper sharing too few words with every claim cannot reach a
        # cut anyway (bench: gate 0.10 embeds 44% of the corpus at no recall cost), so it keeps its
        # lexical score alone. The gate looks at all the scorer's claims, whichever rows are asked.
        gated = np.flatnonzero(lexical.max(axis=0) >= self.settings.embed_gate)
        if gated.size:
            titles = self._title_vectors([papers[i] for i in gated])
            scores[:, gated] += self._claim_vectors[rows] @ titles.T
        return scores.astype(np.float32, copy=False)


def select_pairs(
    scores: np.ndarray, cuts: np.ndarray, eligible: np.ndarray, max_share: float, min_score: float
) -> list[tuple[int, int, float]]:
    """(claim index, paper index, score) for each eligible pair at or above its claim's cut.

    A claim takes at most ceil(max_share * papers) of one batch, best first, so a miscalibrated
    cut or a burst of on-topic papers cannot flood the judge.
    """
    claims, papers = np.nonzero(selection(scores, cuts, eligible, max_share, min_score))
    return [(int(c), int(p), float(scores[c, p])) for c, p in zip(claims, papers, strict=True)]


def selection(
    scores: np.ndarray, cuts: np.ndarray, eligible: np.ndarray, max_share: float, min_score: float
) -> np.ndarray:
    """The (claims, papers) mask of the pairs `select_pairs` selects, for a caller that only counts them."""
    cap = max(1, int(np.ceil(max_share * scores.shape[1])))
    # Strictly above min_score: a paper sharing nothing with the claim never passes a zero cut.
    mask = eligible & (scores >= cuts[:, None]) & (scores > min_score)
    for c in np.flatnonzero(mask.sum(axis=1) > cap):
        row, hits = scores[c], np.flatnonzero(mask[c])
        mask[c] = False
        mask[c, hits[np.argsort(-row[hits], kind="stable")[:cap]]] = True
    return mask
