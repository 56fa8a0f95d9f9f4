"""Draw seed-claim pairs that a reader's searches would find: papers likely to bear on each claim.

    python training/draw_queried_pairs.py --queries training/teacher/seed_queries.jsonl \
        --out training/teacher/drawn_queried.jsonl [--per-query 8] [--seed 20261126]

Why (issue 11, third round): after two rounds the teacher set still held few seed-claim pairs that
relax or overturn a claim (127 RELAXES, 12 OVERTURNS of 3,395), because papers that contradict a
claim rarely share its words, so the relevance stage's own ranking seldom reaches them. An LLM wrote,
for each seed claim, searches for what a supporting, a relaxing and a contradicting paper would say
(`--queries`: one line per claim, `{"claim_id", "queries": [{"aim", "text"}]}`), and each search's
top BM25 papers not yet in the teacher set are drawn. The searches only choose which pairs the
teacher reads; the teacher decides every label by reading the pair. Held-out and domain_dev papers
are never drawn (draw_pairs.excluded_ids).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np
from draw_pairs import SHARED, eligible_papers, pair_row, seed_claims
from jsonl import read_jsonl, write_jsonl

from monitor.config import RelevanceSettings
from monitor.llm.texts import PaperText
from monitor.relevance.bm25 import BM25Scorer, load_lexicon, tokenize
from monitor.relevance.scoring import RelevanceScorer

REPO = Path(__file__).resolve().parents[1]


def read_queries(path: Path, known: set[str]) -> dict[str, list[tuple[str, str]]]:
    """claim id -> [(aim, search text)], checked against the seeds' claims."""
    out: dict[str, list[tuple[str, str]]] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        obj = json.loads(raw)
        if obj["claim_id"] not in known:
            sys.exit(f"{path}:{number}: claim_id {obj['claim_id']!r} is not a seed claim")
        out[obj["claim_id"]] = [(q["aim"], q["text"]) for q in obj["queries"]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--teacher", type=Path, default=REPO / "training" / "teacher" / "pairs.jsonl")
    parser.add_argument("--corpus", type=Path, default=SHARED / "arxiv" / "corpus.jsonl")
    parser.add_argument("--per-query", type=int, default=8)
    parser.add_argument("--seed", type=int, default=20261126)
    args = parser.parse_args()

    done = {(r["claim"], r["arxiv_id"]) for r in read_jsonl(args.teacher)}
    papers, tokens = eligible_papers(args.corpus)
    claims = seed_claims()
    searches = read_queries(args.queries, {q.id for q, _ in claims})
    # Each paper's rank under the relevance stage's own query for the claim, kept for analysis.
    own = RelevanceScorer(RelevanceSettings(method="bm25"), [q for q, _ in claims])
    docs = [PaperText(p["arxiv_id"], 1, p["title"], p["abstract"], row_id=i) for i, p in enumerate(papers)]
    own_scores = own.score(docs, tokens=tokens)
    bm25 = BM25Scorer(load_lexicon())

    rows: list[dict] = []
    for row, (query, date_text) in enumerate(claims):
        texts = searches.get(query.id, [])
        if not texts:
            continue
        rank_of = {int(i): r for r, i in enumerate(np.argsort(-own_scores[row], kind="stable"))}
        scores = bm25.score([list(dict.fromkeys(t)) for t in tokenize([t for _, t in texts])], tokens)
        picked: set[int] = set()
        for (aim, _), line in zip(texts, scores, strict=True):
            taken = 0
            for index in np.argsort(-line, kind="stable"):
                index = int(index)
                if taken == args.per_query:
                    break
                if index in picked or (query.text, papers[index]["arxiv_id"]) in done:
                    continue
                picked.add(index)
                taken += 1
                pair = pair_row(query, date_text, papers[index], "seed", "queried", rank_of[index] + 1)
                rows.append({**pair, "picked_by": f"search:{aim}"})
    random.Random(args.seed).shuffle(rows)
    write_jsonl(args.out, rows)
    print(f"{len(rows)} pairs, {len(searches)} claims -> {args.out}")


if __name__ == "__main__":
    main()
