"""Draw the (claim, paper) pairs the teacher labels: the seeds' claims and other dated claims x corpus papers.

    python training/draw_pairs.py --other-claims training/teacher/other_claims.jsonl \
        --out training/teacher/drawn.jsonl [--seed 20261122]

What is drawn, and why (issue 11): the student must learn the hard part, telling a paper that bears
on a claim from an on-topic paper that does not. So each claim is paired with corpus papers at several
ranks of the relevance stage's own BM25 score (the shipped lexicon and query context):

- top: ranks 1-40 (where most papers that bear on a claim are),
- cut: ranks 250-800 (around today's 2% cut of the 22,120-paper corpus, ~440),
- deep: ranks 800-3,000, and random: anywhere, so that off-topic UNRELATED is seen too.

Other dated claims (findings stated in real corpus papers on other subjects, written by the teacher)
also get their source paper. Papers in eval/heldout_papers.txt and the papers of eval/domain_dev.jsonl
are never drawn, so both stay unseen. The `label` field is a placeholder (UNRELATED) so the file reads
as a pairs file for `monitor eval --judge openai`, which renders the exact judge requests; the
teacher's answer replaces it (training/build_teacher_set.py).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

import numpy as np
from jsonl import write_jsonl

from monitor.claims.importer import import_claims
from monitor.config import RelevanceSettings, Settings
from monitor.llm.texts import ClaimText, PaperText
from monitor.relevance.bm25 import tokenize
from monitor.relevance.scoring import RelevanceScorer
from monitor.relevance.text import load_claims, paper_text
from monitor.store import open_store

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# (bucket, first rank, last rank, how many) per claim; ranks are 0-based over the eligible corpus.
SEED_PLAN = (("top", 0, 40, 26), ("cut", 250, 800, 14), ("deep", 800, 3000, 8), ("random", 0, None, 4))
OTHER_PLAN = (("top", 0, 30, 20), ("cut", 150, 800, 10), ("deep", 800, 3000, 5), ("random", 0, None, 3))
# Claim variants (a finding stated faithfully, contrary to it, or too broadly) exist to teach the stances:
# their source paper and a few close neighbours.
VARIANT_PLAN = (("top", 0, 12, 3), ("cut", 150, 800, 1))


def excluded_ids() -> set[str]:
    held = {
        line.strip()
        for line in (SHARED / "eval" / "heldout_papers.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    dev = {
        json.loads(line)["arxiv_id"] for line in (SHARED / "eval" / "domain_dev.jsonl").open() if line.strip()
    }
    return held | dev


def eligible_papers(corpus: Path) -> tuple[list[dict], list[list[str]]]:
    """The corpus less held-out and domain_dev papers, and their tokens as the relevance stage makes them."""
    skip = excluded_ids()
    papers = [json.loads(line) for line in corpus.open(encoding="utf-8") if line.strip()]
    papers = [p for p in papers if p["arxiv_id"] not in skip]
    return papers, tokenize([paper_text(p["title"], p["abstract"]) for p in papers])


def seed_claims() -> list[tuple[ClaimText, str | None]]:
    """The seeds' claims with the relevance stage's query context, and each claim's date as written."""
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/draw.db")
        import_claims(store, Settings(), [REPO / "seeds"])
        with store.session() as session:
            claims = load_claims(session)
    return [(c, c.date_text) for c in claims]


def pair_row(
    query: ClaimText, date_text: str | None, paper: dict, source: str, bucket: str, rank: int
) -> dict:
    """One drawn pair in the pairs format; `label` is a placeholder the teacher's answer replaces."""
    return {
        "claim_id": query.id,
        "claim": query.text,
        "claim_date": date_text or "",
        "arxiv_id": paper["arxiv_id"],
        "title": paper["title"],
        "abstract": paper["abstract"],
        "published": paper["published"][:10],
        "label": "UNRELATED",
        "source": source,
        "bucket": bucket,
        "bm25_rank": rank,
    }


def draw(ranking: np.ndarray, plan: tuple, rng: random.Random) -> list[tuple[str, int]]:
    """(bucket, paper index) picks from one claim's ranking, no paper twice."""
    picked: list[tuple[str, int]] = []
    seen: set[int] = set()
    for bucket, first, last, count in plan:
        pool = [int(i) for i in ranking[first:last] if int(i) not in seen]
        for index in rng.sample(pool, min(count, len(pool))):
            seen.add(index)
            picked.append((bucket, index))
    return picked


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other-claims", type=Path, required=True)
    parser.add_argument("--variants", action="store_true", help="The claims file holds claim variants.")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=SHARED / "arxiv" / "corpus.jsonl")
    parser.add_argument("--seed", type=int, default=20261122)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    skip = excluded_ids()
    papers, tokens = eligible_papers(args.corpus)
    by_id = {p["arxiv_id"]: i for i, p in enumerate(papers)}

    claims: list[tuple[str, ClaimText, str | None, str | None, tuple]] = []
    if not args.variants:
        for query, date_text in seed_claims():
            claims.append(("seed", query, date_text, None, SEED_PLAN))
    for number, raw in enumerate(args.other_claims.read_text().splitlines(), start=1):
        if not raw.strip():
            continue
        obj = json.loads(raw)
        if obj["source_arxiv_id"] in skip:
            sys.exit(f"{args.other_claims}:{number}: source paper {obj['source_arxiv_id']} must not be used")
        query = ClaimText(id=f"{'variant' if args.variants else 'other'}-{number:03d}", text=obj["claim"])
        if args.variants:
            claims.append(
                ("variant:" + obj["kind"], query, obj["claim_date"], obj["source_arxiv_id"], VARIANT_PLAN)
            )
        else:
            claims.append(
                ("other:" + obj["topic"], query, obj["claim_date"], obj["source_arxiv_id"], OTHER_PLAN)
            )

    scorer = RelevanceScorer(RelevanceSettings(method="bm25"), [c[1] for c in claims])
    docs = [PaperText(p["arxiv_id"], 1, p["title"], p["abstract"], row_id=i) for i, p in enumerate(papers)]
    scores = scorer.score(docs, tokens=tokens)  # (claims, papers)
    rows: list[dict] = []
    for row, (source, query, date_text, source_paper, plan) in enumerate(claims):
        ranking = np.argsort(-scores[row], kind="stable")
        picks = draw(ranking, plan, rng)
        if source_paper is not None and source_paper in by_id:
            picks = [("source", by_id[source_paper])] + [p for p in picks if p[1] != by_id[source_paper]]
        rank_of = {int(i): r for r, i in enumerate(ranking)}
        for bucket, index in picks:
            rows.append(pair_row(query, date_text, papers[index], source, bucket, rank_of[index] + 1))
    rng.shuffle(rows)
    write_jsonl(args.out, rows)
    print(f"{len(rows)} pairs, {len(claims)} claims -> {args.out}")


if __name__ == "__main__":
    main()
