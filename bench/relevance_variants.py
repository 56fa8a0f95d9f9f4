"""Would embedding abstracts (or whole inquiring lines) lift the relevance stage's recall at 2%?

    python bench/relevance_variants.py [--tokens 64] [--share 0.02]

The shipped hybrid embeds paper titles only. This bench embeds every corpus abstract (title + abstract,
truncated to `--tokens` word pieces; 64 tokens take ~4 min for 22,120 papers on 2 cores, 128 take
~10 min) and scores variants on the same footing as the stage: per-claim cuts at `share` of the
shipped reference sample, recall over the labelled non-UNRELATED pairs of eval/domain_dev.jsonl.

- abstract cosine alone (claim text, or the stage's claim query with note title and line questions);
- the shipped hybrid plus w x abstract cosine;
- the shipped hybrid plus b x the cosine between the abstract and the text of the claim's inquiring
  line(s) (question, framing and body), both standardised per claim on the reference sample.

Each variant prints its recall, the share it selects and the ranks of the pairs it misses.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sqlalchemy import select

from monitor.claims.ids import claim_id
from monitor.claims.importer import import_claims
from monitor.config import Settings
from monitor.embeddings import Embedder, model_files
from monitor.llm.texts import PaperText
from monitor.relevance.reference import reference_papers
from monitor.relevance.select import make_scorer
from monitor.relevance.text import load_claims
from monitor.store import open_store
from monitor.store.models import Line, LineClaim

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def standardise(scores: np.ndarray, ref: np.ndarray) -> np.ndarray:
    mean = scores[:, ref].mean(axis=1, keepdims=True)
    std = scores[:, ref].std(axis=1, keepdims=True)
    return (scores - mean) / np.where(std > 0, std, 1.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=64, help="word pieces of title + abstract embedded")
    ap.add_argument("--share", type=float, default=0.02)
    ap.add_argument("--shared", type=Path, default=SHARED)
    args = ap.parse_args()

    settings = Settings()
    with (args.shared / "arxiv" / "corpus.jsonl").open(encoding="utf-8") as fh:
        papers = [json.loads(line) for line in fh if line.strip()]
    column = {p["arxiv_id"]: i for i, p in enumerate(papers)}
    ref_ids = [p.arxiv_id for p in reference_papers()[0]]
    ref = np.array([column[a] for a in ref_ids if a in column])

    store = open_store("sqlite://")
    import_claims(store, settings, [REPO / "seeds"])
    with store.session() as session:
        claims = load_claims(session)
        lines = list(session.scalars(select(Line).where(Line.retired_at.is_(None)).order_by(Line.id)))
        line_texts = [" ".join(filter(None, (ln.question, ln.framing, ln.body))) for ln in lines]
        line_row = {ln.id: j for j, ln in enumerate(lines)}
        links = list(session.execute(select(LineClaim.line_id, LineClaim.claim_id)))
    row = {c.id: k for k, c in enumerate(claims)}
    member = np.zeros((len(claims), len(lines)), dtype=bool)
    for line, claim in links:
        if claim in row and line in line_row:
            member[row[claim], line_row[line]] = True

    scorer = make_scorer(store, settings, claims)
    docs = [PaperText(p["arxiv_id"], int(p.get("version") or 1), p["title"], p["abstract"]) for p in papers]
    hybrid = np.concatenate([scorer.score(docs[i : i + 2000]) for i in range(0, len(docs), 2000)], axis=1)

    embedder = Embedder(*model_files(), max_tokens=args.tokens)
    began = time.monotonic()
    abstracts = embedder.embed([f"{p['title']}. {p['abstract']}" for p in papers])
    spent = time.monotonic() - began
    print(
        f"embedded {len(papers)} abstracts at {args.tokens} tokens "
        f"in {spent:.0f} s ({len(papers) / spent:.1f}/s)"
    )
    cos_claim = embedder.embed([c.text for c in claims]) @ abstracts.T
    cos_query = embedder.embed([c.query_text(settings.relevance.query_context) for c in claims]) @ abstracts.T
    cos_line = embedder.embed(line_texts) @ abstracts.T
    line_best = np.stack([cos_line[member[k]].max(axis=0) for k in range(len(claims))])

    rows = [json.loads(line) for line in (args.shared / "eval" / "domain_dev.jsonl").open(encoding="utf-8")]
    positives = [
        (row[claim_id(r["claim"])], column[r["arxiv_id"]])
        for r in rows
        if r["label"] != "UNRELATED" and claim_id(r["claim"]) in row and r["arxiv_id"] in column
    ]

    def report(name: str, scores: np.ndarray) -> None:
        cuts = np.quantile(scores[:, ref], 1.0 - args.share, axis=1)
        chosen = scores >= cuts[:, None]
        missed = sorted(float((scores[k] > scores[k, i]).mean()) for k, i in positives if not chosen[k, i])
        hits = len(positives) - len(missed)
        ranks = ", ".join(f"{m:.0%}" for m in missed)
        print(
            f"{name:34s} recall {hits / len(positives):.3f} ({hits}/{len(positives)})  "
            f"share {chosen.mean():.4f}  missed at ranks {ranks}"
        )

    report("hybrid (shipped)", hybrid)
    report("abstract cosine, claim text", cos_claim)
    report("abstract cosine, claim query", cos_query)
    for w in (0.5, 1.0, 2.0):
        report(f"hybrid + {w} x abstract cosine", hybrid + w * cos_query)
    z_hybrid, z_line = standardise(hybrid, ref), standardise(line_best, ref)
    for b in (0.5, 1.0):
        report(f"hybrid + {b} x line cosine (z)", z_hybrid + b * z_line)


if __name__ == "__main__":
    main()
