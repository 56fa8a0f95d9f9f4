"""The reference sample: a fixed random sample of arXiv papers on which each claim's cut is learned.

A claim's cut is the score above which `share` of the reference papers lie for it. Because the
sample never changes (it ships with the package; bench/build_reference.py rebuilds it from the
22,120-paper snapshot of cs.CL/cs.LG/cs.AI 2024-2026), the cut does not depend on what the store
holds or in which order papers arrive: a weekly replay selects what one whole-corpus scan selects.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from monitor.errors import ConfigError
from monitor.llm.texts import PaperText
from monitor.relevance.bm25 import tokenize
from monitor.relevance.scoring import RelevanceScorer
from monitor.relevance.text import paper_text

REFERENCE_PAPERS = Path(__file__).parent / "data" / "reference_papers.jsonl.gz"
SAMPLE_SIZE = 3000


@lru_cache(maxsize=2)
def reference_papers(path: Path = REFERENCE_PAPERS) -> tuple[tuple[PaperText, ...], tuple[list[str], ...]]:
    """The sample's papers and their tokens, read and tokenised once per process."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        papers = tuple(PaperText(r["arxiv_id"], int(r["version"]), r["title"], r["abstract"]) for r in rows)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"{path}: cannot read the relevance reference sample: {exc}") from None
    return papers, tuple(tokenize([paper_text(p.title, p.abstract) for p in papers]))


# Learned cuts are kept for this many claim sets (a scorer's settings and every claim query, with the
# shares asked for): a weekly replay asks for the same ones every period, and a daemon that sees claims
# edited for months must not grow. Least recently used out first (functools.lru_cache).
LEARNED_CUT_SETS_KEPT = 8


@dataclass(frozen=True)
class _ClaimSet:
    """A scorer as a cache key: known by what its scores depend on (`setup`: its settings and every claim
    query; the hybrid gate depends on the whole claim set), not by the object."""

    setup: str
    scorer: RelevanceScorer = field(compare=False)

    @classmethod
    def of(cls, scorer: RelevanceScorer) -> _ClaimSet:
        return cls(scorer.settings.model_dump_json() + "\n" + "\n".join(sorted(scorer.queries)), scorer)


@lru_cache(maxsize=LEARNED_CUT_SETS_KEPT)
def _learned(claims: _ClaimSet, shares: tuple[float, ...]) -> dict[float, np.ndarray]:
    """Every claim's cut at each share, the sample scored once for all of them (with the hybrid, scoring
    the sample embeds its 3,000 titles)."""
    papers, tokens = reference_papers()
    scores = claims.scorer.score(list(papers), tokens=list(tokens))
    return {share: np.quantile(scores, 1.0 - share, axis=1).astype(np.float32) for share in shares}


def claim_cuts(
    scorer: RelevanceScorer, share: float, fixed: float | None = None, claims: Sequence[int] | None = None
) -> np.ndarray:
    """The cut of each claim (rows of `scorer`, default all): `fixed`, or learned on the sample."""
    return share_cuts(scorer, [share], fixed, claims)[share]


def share_cuts(
    scorer: RelevanceScorer,
    shares: Sequence[float],
    fixed: float | None = None,
    claims: Sequence[int] | None = None,
) -> dict[float, np.ndarray]:
    """`claim_cuts` for each of `shares` (an estimate prices several; the share need not be the settings'
    own: the screen's first cut, an estimate)."""
    rows = list(range(len(scorer.claims))) if claims is None else list(claims)
    if fixed is not None:
        return {share: np.full(len(rows), fixed, dtype=np.float32) for share in shares}
    learned = _learned(_ClaimSet.of(scorer), tuple(sorted(set(shares))))
    return {share: learned[share][rows] for share in shares}
