"""The reference sample: a fixed random sample of arXiv papers on which each claim's cut is learned.

A claim's cut is the score above which `share` of the reference papers lie for it. Because the
sample never changes (it ships with the package; bench/build_reference.py rebuilds it from the
22,120-paper snapshot of cs.CL/cs.LG/cs.AI 2024-2026), the cut does not depend on what the store
holds or in which order papers arrive: a weekly replay selects what one whole-corpus scan selects.
"""

from __future__ import annotations

import gzip
import json
from collections import OrderedDict
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from monitor.errors import ConfigError
from monitor.relevance.bm25 import tokenize
from monitor.relevance.scoring import PaperDoc, RelevanceScorer
from monitor.relevance.text import paper_text

REFERENCE_PAPERS = Path(__file__).parent / "data" / "reference_papers.jsonl.gz"
SAMPLE_SIZE = 3000


@lru_cache(maxsize=2)
def reference_papers(path: Path = REFERENCE_PAPERS) -> tuple[tuple[PaperDoc, ...], tuple[list[str], ...]]:
    """The sample's papers and their tokens, read and tokenised once per process."""
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh if line.strip()]
        papers = tuple(PaperDoc(0, r["arxiv_id"], int(r["version"]), r["title"], r["abstract"]) for r in rows)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"{path}: cannot read the relevance reference sample: {exc}") from None
    return papers, tuple(tokenize([paper_text(p.title, p.abstract) for p in papers]))


# Learned cuts by (settings, share, claim query): a weekly replay asks for the same ones every period.
# Bounded, least recently used out first: a daemon that sees claims edited for months must not grow.
LEARNED_CUTS_KEPT = 4096
_learned: OrderedDict[tuple[str, float, str], float] = OrderedDict()


def _remember(key: tuple[str, float, str], cut: float) -> None:
    _learned[key] = cut
    _learned.move_to_end(key)
    while len(_learned) > LEARNED_CUTS_KEPT:
        _learned.popitem(last=False)


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
    """`claim_cuts` for each of `shares`, scoring the sample once for all of them (an estimate prices
    several shares; with the hybrid, scoring the sample embeds its 3,000 titles)."""
    rows = list(range(len(scorer.claims))) if claims is None else list(claims)
    if fixed is not None:
        return {share: np.full(len(rows), fixed, dtype=np.float32) for share in shares}
    # The hybrid gate depends on the whole claim set, so the set is part of the key.
    setup = scorer.settings.model_dump_json() + "\n" + "\n".join(sorted(scorer.queries))
    # The share is part of the key: it need not be the settings' own (the screen's first cut, an estimate).
    keys = {share: [(setup, share, scorer.queries[i]) for i in rows] for share in shares}
    missing = sorted({i for share in shares for i, key in enumerate(keys[share]) if key not in _learned})
    learned: dict[tuple[str, float, str], float] = {}
    if missing:
        papers, tokens = reference_papers()
        scores = scorer.score(list(papers), tokens=list(tokens), claims=[rows[i] for i in missing])
        for share in shares:
            learned.update(
                (keys[share][i], float(np.quantile(scores[row], 1.0 - share)))
                for row, i in enumerate(missing)
            )
    for key in (key for share in shares for key in keys[share]):
        # Read before remembering: this call's own keys may outnumber what is kept.
        if key not in learned:
            learned[key] = _learned[key]
    for key, cut in learned.items():
        _remember(key, cut)
    return {share: np.array([learned[key] for key in keys[share]], dtype=np.float32) for share in shares}
