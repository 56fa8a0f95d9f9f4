"""Would a claim's labelled precedents sharpen the embedded judge's "does this paper bear on it"?

    python bench/precedents.py [--shared ../shared] [--teacher training/teacher/pairs.jsonl] [--k 15]

A precedent is a (claim, paper) pair whose label an LLM teacher gave: for the seed claims, the teacher
set's `train` split (about 130 papers a claim, one in seven bearing). For a new paper, its `k` nearest
precedents of the same claim (cosine of TF-IDF vectors over the relevance stage's stemmed words and
reference IDF) vote, weighted by similarity, on whether it bears on the claim. No model is trained.

Scored on pairs no precedent and no model saw: eval/domain_dev.jsonl, the teacher `test` split's
seed-claim pairs, and run-time-like pairs (`calib`+`test` seed-claim pairs drawn by rank, buckets `top`
and `cut`). Figures: relatedness AUC of the student's P(related), of the precedents' vote, and of their
rank average; and, on the run-time-like pairs, how many bearing pairs each finds when it may flag as
many pairs as the shipped decision rule does.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from judge_prior import auc, probabilities

from monitor.judge.embedded import EmbeddedJudge, decide_stance
from monitor.judge.evaluate import LabelledPair, read_pairs
from monitor.relevance.bm25 import load_lexicon, tokenize

ROOT = Path(__file__).resolve().parent.parent

Vector = dict[str, float]


def vectors(pairs: list[LabelledPair]) -> list[Vector]:
    """Unit-length TF-IDF vectors of title and abstract (log term frequency, reference IDF)."""
    lexicon = load_lexicon()
    out = []
    for words in tokenize([f"{p.title}. {p.abstract}" for p in pairs]):
        weights = {w: (1 + math.log(n)) * lexicon.idf(w) for w, n in Counter(words).items()}
        norm = math.sqrt(sum(v * v for v in weights.values())) or 1.0
        out.append({w: v / norm for w, v in weights.items()})
    return out


def vote(query: Vector, bank: list[tuple[Vector, bool]], k: int) -> float:
    """Similarity-weighted share of bearing papers among the k most similar precedents."""
    sims = sorted(
        ((sum(v * query.get(w, 0.0) for w, v in vec.items()), bearing) for vec, bearing in bank), reverse=True
    )[:k]
    weights = [math.exp(10 * s) for s, _ in sims]
    return sum(w for w, (_, bearing) in zip(weights, sims, strict=True) if bearing) / sum(weights)


def percentile(scores: np.ndarray) -> np.ndarray:
    return scores.argsort().argsort() / max(len(scores) - 1, 1)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--teacher", type=Path, default=ROOT / "training" / "teacher" / "pairs.jsonl")
    parser.add_argument("--k", type=int, default=15)
    args = parser.parse_args()

    seed = [p for p in read_pairs(args.teacher) if p.extra.get("source") == "seed"]
    train = [p for p in seed if p.extra.get("split") == "train"]
    banks: dict[str, list[tuple[Vector, bool]]] = defaultdict(list)
    for pair, vec in zip(train, vectors(train), strict=True):
        banks[pair.claim].append((vec, pair.label != "UNRELATED"))
    print(f"precedents: {len(train)} seed-claim pairs of the teacher train split, {len(banks)} claims")

    judge = EmbeddedJudge()
    domain = [p for p in read_pairs(args.shared / "eval" / "domain_dev.jsonl") if p.claim in banks]
    sets = {
        "domain_dev": domain,
        "teacher test, seed claims": [p for p in seed if p.extra.get("split") == "test"],
        "run-time-like": [
            p for p in seed if p.extra.get("split") != "train" and p.extra.get("bucket") in ("top", "cut")
        ],
    }
    for name, pairs in sets.items():
        gold = np.array([p.label != "UNRELATED" for p in pairs])
        probs = probabilities(judge, pairs)
        student = 1 - probs[:, -1]
        votes = np.array(
            [vote(v, banks[p.claim], args.k) for p, v in zip(pairs, vectors(pairs), strict=True)]
        )
        both = percentile(student) + percentile(votes)
        print(f"\n{name}: n={len(pairs)}, {gold.sum()} bearing")
        for label, scores in (("student", student), ("precedents", votes), ("rank average", both)):
            print(f"  relatedness AUC, {label}: {auc(scores, gold):.3f}")
        if name == "run-time-like":
            flagged = sum(decide_stance(row, judge.config).label != "UNRELATED" for row in probs)
            for label, scores in (("student", student), ("precedents", votes), ("rank average", both)):
                top = np.argsort(-scores)[:flagged]
                found = gold[top].sum()
                print(
                    f"  flagging {flagged} pairs as the shipped rule does, {label} finds "
                    f"{found} of {gold.sum()} bearing ({found / gold.sum():.0%})"
                )


if __name__ == "__main__":
    main()
