"""A cheaper LLM week: the embedded student's relatedness as a first cut between BM25 and the LLM judge.

    nice python bench/cascade_eval.py [--sample 200] [--wide 0.10,0.20] [--keep 0.02,0.03,0.05]

For each cascade "BM25 top `wide` of papers per claim, then the `keep` share of all pairs with the
highest student relatedness (1 - P(UNRELATED)), then the LLM judge", and for plain BM25 at the same
shares, it prints the recall of the papers that bear on a claim, measured as relevance_bench.py
--settings does (domain_dev's 29 non-UNRELATED pairs; the teacher set's real-claim positives weighted by
draw stratum; its test split), and a week's LLM cost (6,000 random corpus papers x the seeds' claims,
gpt-4o-mini prices, monitor.judge.estimate.alternatives).

The relatedness cut is one bar for the whole week (the top `keep` share of all pairs): it is the
quantile of the student's relatedness over the BM25-passed pairs of `--sample` random week papers x the
seeds' claims, so the number of pairs judged is the plain BM25 row's at share `keep` and the cost is
priced as that row (the same pairs-per-call packing assumed). The student then reads every pair BM25
passes: at `wide` 20% about 42,000 pairs a week of CPU time, no money. Held-out papers are never used.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from relevance_bench import SHARED, load_papers, store_papers, teacher_positives  # noqa: E402

from monitor.claims.importer import import_claims  # noqa: E402
from monitor.config import Settings  # noqa: E402
from monitor.judge.embedded import EmbeddedJudge  # noqa: E402
from monitor.judge.estimate import alternatives  # noqa: E402
from monitor.llm.texts import ClaimText, PaperText  # noqa: E402
from monitor.relevance.reference import claim_cuts  # noqa: E402
from monitor.relevance.select import make_scorer  # noqa: E402
from monitor.relevance.text import load_claims  # noqa: E402
from monitor.store import open_store  # noqa: E402

GROUPS = ("dev", "teacher", "test")


def relatedness(judge: EmbeddedJudge, paper: dict, claims: list[str]) -> list[float]:
    """1 - P(UNRELATED) of each claim against the paper, as the embedded judge computes it."""
    text = PaperText(paper["arxiv_id"], 1, paper["title"], paper["abstract"])
    probs, _ = judge.probabilities(text, [ClaimText(f"c{k}", c) for k, c in enumerate(claims)])
    unrelated = judge.config.labels.index("UNRELATED")
    return [1.0 - float(p[unrelated]) for p in probs]


def bm25_pass(store, settings, claims: list[ClaimText], docs: list[PaperText], share: float) -> np.ndarray:
    cfg = settings.relevance.model_copy(update={"method": "bm25"})
    scorer = make_scorer(store, settings, claims, cfg)
    return scorer.score(docs) >= claim_cuts(scorer, share)[:, None]


def positives(corpus: dict[str, dict], seeds: list[str]) -> list[tuple[str, str, str, float]]:
    """(group, claim text, arxiv id, weight), as relevance_bench.settings_table counts them."""
    import json

    dev = [json.loads(line) for line in (SHARED / "eval" / "domain_dev.jsonl").open(encoding="utf-8")]
    found = [("dev", r["claim"], r["arxiv_id"], 1.0) for r in dev if r["label"] != "UNRELATED"]
    teacher = REPO / "training" / "teacher" / "pairs.jsonl"
    for _, claim, arxiv_id, weight, test in teacher_positives(teacher):
        found += [("teacher", claim, arxiv_id, weight)] + (
            [("test", claim, arxiv_id, weight)] if test else []
        )
    return [f for f in found if f[2] in corpus]


def print_table(found, passed, related, costs, wide_ok, sample_rel, sizes) -> None:
    """The Markdown table: plain BM25 at each share, then each cascade."""
    wides, keeps, n_seeds, n_sample = sizes

    def recall(keep_pair) -> dict[str, float]:
        return {
            g: sum(w for h, c, a, w in found if h == g and keep_pair(c, a))
            / sum(w for h, *_, w in found if h == g)
            for g in GROUPS
        }

    def row(label: str, got: dict[str, float], share: float) -> str:
        r = costs[share]
        return (
            f"| {label} | {got['dev']:.3f} | {got['teacher']:.3f} | {got['test']:.3f} | {r.pairs:,} | "
            f"{r.calls:,} | ${r.cost:.2f} |"
        )

    print(f"positives: {', '.join(f'{g} {sum(1 for h, *_ in found if h == g)}' for g in GROUPS)}; "
          f"relatedness bar from {n_sample} week papers x {n_seeds} seed claims")  # fmt: skip
    print(
        "| setting | recall dev | recall teacher | teacher test | pairs / week | calls / week | USD / week |"
    )
    print("|---|---|---|---|---|---|---|")
    for share in sorted({*keeps, *wides}):
        print(row(f"bm25 {share:.0%}", recall(lambda c, a, s=share: passed[s][(c, a)]), share))
    total = n_seeds * n_sample
    for wide in wides:
        scores = np.sort(sample_rel[wide_ok[wide]])[::-1]
        for keep in keeps:
            if keep >= wide:
                continue
            bar = float(scores[min(int(keep * total), len(scores)) - 1])
            got = recall(lambda c, a, w=wide, b=bar: passed[w][(c, a)] and related[(c, a)] >= b)
            print(row(f"bm25 {wide:.0%} → student top {keep:.0%} (relatedness ≥ {bar:.3f})", got, keep))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=int, default=200, help="week papers behind the relatedness bar")
    ap.add_argument("--wide", default="0.10,0.20")
    ap.add_argument("--keep", default="0.02,0.03,0.05")
    args = ap.parse_args()
    wides = [float(v) for v in args.wide.split(",")]
    keeps = [float(v) for v in args.keep.split(",")]
    held = {line.strip() for line in (SHARED / "eval" / "heldout_papers.txt").open() if line[:1].isdigit()}
    corpus = {p["arxiv_id"]: p for p in load_papers(SHARED / "arxiv" / "corpus.jsonl", None)}
    corpus = {a: p for a, p in corpus.items() if a not in held}
    settings = Settings()
    judge = EmbeddedJudge()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{tmp}/cascade.db")
        import_claims(store, settings, [REPO / "seeds"])
        with store.session() as session:
            seeds = load_claims(session)
        found = positives(corpus, [q.text for q in seeds])
        seed_texts = {q.text for q in seeds}
        others = sorted({c for _, c, _, _ in found if c not in seed_texts})
        groups = [seeds, [ClaimText(f"other-{i}", t) for i, t in enumerate(others)]]
        ids = sorted({a for _, _, a, _ in found})
        docs = [PaperText(a, 1, corpus[a]["title"], corpus[a]["abstract"]) for a in ids]
        passed: dict[float, dict[tuple[str, str], bool]] = {}
        for share in sorted({*wides, *keeps}):
            passed[share] = {}
            for claims in groups:
                ok = bm25_pass(store, settings, claims, docs, share)
                passed[share].update(
                    {(c.text, a): bool(ok[k, j]) for k, c in enumerate(claims) for j, a in enumerate(ids)}
                )
        widest = max(wides)
        related = {
            (c, a): relatedness(judge, corpus[a], [c])[0] for _, c, a, _ in found if passed[widest][(c, a)]
        }
        week = random.Random(14).sample(sorted(corpus), 6000)
        sample = [corpus[a] for a in random.Random(3).sample(week, args.sample)]
        sample_docs = [PaperText(p["arxiv_id"], 1, p["title"], p["abstract"]) for p in sample]
        wide_ok = {w: bm25_pass(store, settings, seeds, sample_docs, w) for w in wides}
        sample_rel = np.zeros((len(seeds), len(sample)))
        for j, paper in enumerate(sample):
            rows = np.flatnonzero(wide_ok[widest][:, j])
            if len(rows):
                sample_rel[rows, j] = relatedness(judge, paper, [seeds[k].text for k in rows])
        store_papers(store, [corpus[a] for a in week])
        costs = {
            r.share: r
            for r in alternatives(store, settings, shares=keeps + wides, methods=("bm25",))
            if not r.screen
        }
        store.close()

    print_table(found, passed, related, costs, wide_ok, sample_rel, (wides, keeps, len(seeds), args.sample))


if __name__ == "__main__":
    main()
