"""Rebuild the relevance stage's shipped reference data from the snapshot corpus.

    python bench/build_reference.py [../shared/arxiv/corpus.jsonl]

Writes, under monitor/relevance/data/:
- reference_lexicon.jsonl.gz: BM25's corpus statistics (document frequency of every stemmed token
  seen in at least two papers, the paper count, the average length);
- reference_papers.jsonl.gz: a seeded random sample of papers (id, version, title, abstract) on
  which each claim's score cut is learned.
Deterministic: rebuilding from the same corpus gives the same files.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path

from monitor.relevance.bm25 import REFERENCE_LEXICON, Lexicon, tokenize
from monitor.relevance.reference import REFERENCE_PAPERS, SAMPLE_SIZE
from monitor.relevance.text import paper_text

DEFAULT_CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "arxiv" / "corpus.jsonl"


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_CORPUS
    with corpus.open(encoding="utf-8") as fh:
        papers = [json.loads(line) for line in fh if line.strip()]
    lexicon = Lexicon.build(tokenize([paper_text(p["title"], p["abstract"]) for p in papers]))
    # A token seen once says little and would double the file; unseen tokens default to df=1.
    lexicon.df = {t: n for t, n in lexicon.df.items() if n >= 2}
    lexicon.save(REFERENCE_LEXICON)
    print(
        f"{lexicon.n_docs} papers, {len(lexicon.df)} tokens, avg length {lexicon.avg_len:.1f}: "
        f"{REFERENCE_LEXICON} ({REFERENCE_LEXICON.stat().st_size // 1024} KiB)"
    )

    sample = sorted(random.Random(20260401).sample(papers, SAMPLE_SIZE), key=lambda p: p["arxiv_id"])
    with gzip.open(REFERENCE_PAPERS, "wt", encoding="utf-8") as fh:
        for p in sample:
            row = {k: p[k] for k in ("arxiv_id", "title", "abstract")} | {
                "version": int(p.get("version") or 1)
            }
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(
        f"{len(sample)} reference papers: {REFERENCE_PAPERS} ({REFERENCE_PAPERS.stat().st_size // 1024} KiB)"
    )


if __name__ == "__main__":
    main()
