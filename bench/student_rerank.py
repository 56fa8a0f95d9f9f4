"""Can the embedded judge re-rank a wider first cut better than today's 2% BM25 cut?

    python bench/student_rerank.py [--wide 0.10] [--budget 0.02] [--sample 150]

For each seed claim, the whole corpus (less held-out papers) is ranked by the relevance stage's
BM25 score. Today's cut keeps the top `budget` share. The alternative keeps the top `wide` share,
then re-ranks it by the student's P(related) = 1 - P(UNRELATED) and keeps as many pairs as today.

Positives are the pairs an LLM labelled as bearing on the claim that no model was trained on:
eval/domain_dev.jsonl's non-UNRELATED pairs and the teacher set's `test` split for seed claims.
Scoring all ~2,200 wide-cut papers of 35 claims would take half an hour on two cores, so each
claim's wide cut is represented by a seeded random sample of `--sample` papers: a positive survives
the re-rank if its P(related) beats the share of the sample that the budget allows to pass.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "training"))

from draw_pairs import seed_claims  # noqa: E402

from monitor.config import RelevanceSettings  # noqa: E402
from monitor.judge.embedded import EmbeddedJudge  # noqa: E402
from monitor.llm.texts import ClaimText, PaperText  # noqa: E402
from monitor.relevance.scoring import RelevanceScorer  # noqa: E402

SHARED = REPO.parent / "shared"


def positives(claim_texts: set[str]) -> list[tuple[str, str]]:
    """(claim text, arxiv id) of unseen pairs an LLM labelled as bearing on a seed claim."""
    out = []
    for line in (SHARED / "eval" / "domain_dev.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["label"] != "UNRELATED" and row["claim"] in claim_texts:
            out.append((row["claim"], row["arxiv_id"]))
    teacher = REPO / "training" / "teacher" / "pairs.jsonl"
    for line in teacher.open(encoding="utf-8"):
        row = json.loads(line)
        if row["split"] == "test" and row["source"] == "seed" and row["label"] != "UNRELATED":
            out.append((row["claim"], row["arxiv_id"]))
    return sorted(set(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wide", type=float, default=0.10)
    parser.add_argument("--budget", type=float, default=0.02)
    parser.add_argument("--sample", type=int, default=150)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    held = {line.strip() for line in (SHARED / "eval" / "heldout_papers.txt").open() if line[:1].isdigit()}
    papers = [json.loads(line) for line in (SHARED / "arxiv" / "corpus.jsonl").open(encoding="utf-8")]
    papers = [p for p in papers if p["arxiv_id"] not in held]
    index = {p["arxiv_id"]: i for i, p in enumerate(papers)}
    claims = [q for q, _ in seed_claims()]
    by_text = {q.text: row for row, q in enumerate(claims)}
    wanted = [(c, a) for c, a in positives(set(by_text)) if a in index]

    scorer = RelevanceScorer(RelevanceSettings(method="bm25"), claims)
    scores = scorer.score(
        [PaperText(p["arxiv_id"], 1, p["title"], p["abstract"], row_id=i) for i, p in enumerate(papers)]
    )
    n = len(papers)
    wide_k, budget_k = int(args.wide * n), int(args.budget * n)
    judge = EmbeddedJudge()
    started, judged = time.perf_counter(), 0
    today = reranked = 0
    rows = []
    for claim_text, arxiv_id in wanted:
        row = by_text[claim_text]
        order = np.argsort(-scores[row], kind="stable")
        rank = int(np.flatnonzero(order == index[arxiv_id])[0])
        kept_today = rank < budget_k
        kept_rerank = False
        if rank < wide_k:
            sample = [int(i) for i in rng.sample(list(order[:wide_k]), args.sample)]
            texts = [papers[i] for i in sample] + [papers[index[arxiv_id]]]
            related = []
            for p in texts:
                probs, _ = judge.probabilities(
                    PaperText(p["arxiv_id"], 1, p["title"], p["abstract"]), [ClaimText("c", claim_text)]
                )
                related.append(1.0 - float(probs[0][judge.config.labels.index("UNRELATED")]))
            judged += len(texts)
            # The re-rank keeps budget_k of wide_k papers: the positive must beat that quantile.
            cut = float(np.quantile(related[:-1], 1.0 - budget_k / wide_k))
            kept_rerank = related[-1] >= cut
        today += kept_today
        reranked += kept_rerank
        rows.append((arxiv_id, claim_text[:50], rank + 1, kept_today, kept_rerank))
    for r in rows:
        print(
            f"{r[0]}  rank {r[2]:>6}  2%-cut {'kept' if r[3] else '-':>4}  "
            f"re-rank {'kept' if r[4] else '-':>4}  {r[1]}"
        )
    m = len(wanted)
    print(f"{m} positives (domain_dev + teacher test split, seed claims)")
    print(f"recall, today's BM25 top {args.budget:.0%}: {today}/{m} = {today / m:.3f}")
    print(f"recall, BM25 top {args.wide:.0%} re-ranked by the student to {args.budget:.0%}: "
          f"{reranked}/{m} = {reranked / m:.3f}")  # fmt: skip
    print(f"student: {judged} pairs in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
