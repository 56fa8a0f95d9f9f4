"""Draw more seed-claim pairs where the student is weakest: on-topic papers it may wrongly call related.

    python training/draw_hard_pairs.py --out training/teacher/drawn_hard.jsonl [--seed 20261125]

Why (issue 11, second round): the first teacher set holds few pairs where a *seed* claim meets a paper
that bears on it (119 SUPPORTS, 42 RELAXES, 3 OVERTURNS among 1,820), and the student missed most of
them. Papers that bear on a seed claim sit among its BM25-ranked neighbours, so each seed claim's
papers at ranks 1-`--depth` not yet in the teacher set are scored by the shipped student, and the
pairs drawn are the `--hardest` it finds most likely related (its likely stances and its likely false
alarms alike) plus `--random` others from the same ranks. A model only picks which pairs the teacher
reads; the teacher still decides every label by reading the pair. Held-out and domain_dev papers are
never drawn (draw_pairs.excluded_ids). The result depends on the shipped student's weights, so it is
reproducible only with the same model (recorded in each row's `picked_by`).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import numpy as np
from draw_pairs import SHARED, eligible_papers, pair_row, seed_claims
from jsonl import read_jsonl, write_jsonl

from monitor.config import RelevanceSettings
from monitor.judge.embedded import EmbeddedJudge
from monitor.llm.texts import ClaimText, PaperText
from monitor.relevance.scoring import RelevanceScorer

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--teacher", type=Path, default=REPO / "training" / "teacher" / "pairs.jsonl")
    parser.add_argument("--corpus", type=Path, default=SHARED / "arxiv" / "corpus.jsonl")
    parser.add_argument("--depth", type=int, default=300)
    parser.add_argument("--hardest", type=int, default=30)
    parser.add_argument("--random", type=int, default=15)
    parser.add_argument("--seed", type=int, default=20261125)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    done = {(r["claim"], r["arxiv_id"]) for r in read_jsonl(args.teacher)}
    papers, tokens = eligible_papers(args.corpus)
    claims = seed_claims()
    scorer = RelevanceScorer(RelevanceSettings(method="bm25"), [q for q, _ in claims])
    docs = [PaperText(p["arxiv_id"], 1, p["title"], p["abstract"], row_id=i) for i, p in enumerate(papers)]
    scores = scorer.score(docs, tokens=tokens)
    judge = EmbeddedJudge()

    rows: list[dict] = []
    for row, (query, date_text) in enumerate(claims):
        ranking = [int(i) for i in np.argsort(-scores[row], kind="stable")[: args.depth]]
        rank_of = {index: rank for rank, index in enumerate(ranking)}
        pool = [i for i in ranking if (query.text, papers[i]["arxiv_id"]) not in done]
        related = {}
        for index in pool:
            paper = PaperText(papers[index]["arxiv_id"], 1, papers[index]["title"], papers[index]["abstract"])
            probs, _ = judge.probabilities(paper, [ClaimText(query.id, query.text)])
            related[index] = 1.0 - float(probs[0][judge.config.labels.index("UNRELATED")])
        hardest = sorted(pool, key=lambda i: (-related[i], rank_of[i]))[: args.hardest]
        rest = [i for i in pool if i not in set(hardest)]
        picks = [("hard", i) for i in hardest] + [
            ("near", i) for i in rng.sample(rest, min(args.random, len(rest)))
        ]
        for bucket, index in picks:
            row = pair_row(query, date_text, papers[index], "seed", bucket, rank_of[index] + 1)
            rows.append({**row, "picked_by": judge.model})
    rng.shuffle(rows)
    write_jsonl(args.out, rows)
    print(f"{len(rows)} pairs, {len(claims)} claims -> {args.out}")


if __name__ == "__main__":
    main()
