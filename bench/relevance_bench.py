"""Relevance stage over the whole snapshot corpus: recall, share of pairs selected, speed, memory.

    python bench/relevance_bench.py [--method hybrid|bm25] [--share 0.02] [--papers N] [--db URL]

Loads the seed claims (monitor.claims) and the 22,120 corpus papers into a fresh SQLite store, runs
`select_candidates` exactly as the pipeline does, then reads the `candidates` table:

- recall: of the labelled pairs in eval/domain_dev.jsonl whose label is not UNRELATED, the share
  whose paper was selected for that claim (dev claim texts equal the seed claim texts);
- share: candidates / (papers x active claims);
- papers/s, wall time of the stage, peak RSS of the process.

`--rescan` runs the stage a second time after adding the last 300 papers (a daily run's size).
`--curve` also scores every (claim, paper) pair directly and prints the recall that each share of
pairs would buy (cuts learned on the reference sample, as the stage learns them) and the rank of each
labelled pair the stage missed: how far the bar is, not only whether it is met.

`--settings` instead prints, for each relevance setting (hybrid and plain BM25 at 2/5/10/20% and the
LLM screen's 20% first cut), the recall of the pairs that bear on a claim and what a week of 6,000
papers with the seeds' claims would cost an LLM judge (monitor.judge.estimate.alternatives on a
random 6,000 corpus papers). Recall is measured on
- domain_dev.jsonl's non-UNRELATED pairs (the set the hybrid was tuned on), and
- the teacher set's real claims (seeds' and other dated claims), which no relevance setting was tuned
  on. Its pairs were drawn at strata of BM25 rank (training/draw_pairs.py: top, cut, deep, random), so
  the raw share of its positives above a cut overstates recall; each first-round pair within BM25's
  top 3,000 is weighted by its stratum's size over the pairs drawn from it (pooled over claims); the
  second round (drawn where a student model pointed), claims' own source papers and the few random
  picks deeper than rank 3,000 are left out. `test`: its test split only.
Papers in eval/heldout_papers.txt are never used.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np
from sqlalchemy import delete, func, select

from monitor.claims.ids import claim_id
from monitor.claims.importer import import_claims
from monitor.config import Settings
from monitor.judge.estimate import alternatives
from monitor.llm.texts import ClaimText, PaperText
from monitor.relevance import select_candidates
from monitor.relevance.reference import claim_cuts, reference_papers
from monitor.relevance.select import make_scorer
from monitor.relevance.text import load_claims
from monitor.store import open_store
from monitor.store.models import Candidate, Claim, Paper, PaperVersion, RelevanceMark

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def load_papers(path: Path, limit: int | None) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        papers = [json.loads(line) for line in fh if line.strip()]
    papers.sort(key=lambda p: (p["published"], p["arxiv_id"]))
    return papers[:limit] if limit else papers


def store_papers(store, papers: list[dict]) -> None:
    with store.session() as session:
        for p in papers:
            for model in (Paper, PaperVersion):
                session.add(
                    model(
                        arxiv_id=p["arxiv_id"],
                        version=int(p.get("version") or 1),
                        title=p["title"],
                        abstract=p["abstract"],
                        source="file",
                    )
                )


def recall(store, pairs_path: Path) -> tuple[float, int, int]:
    with store.session() as session:
        chosen = set(session.execute(select(Candidate.arxiv_id, Candidate.claim_id)))
    rows = [json.loads(line) for line in pairs_path.open(encoding="utf-8") if line.strip()]
    positives = [(r["arxiv_id"], claim_id(r["claim"])) for r in rows if r["label"] != "UNRELATED"]
    hits = sum(pair in chosen for pair in positives)
    return hits / max(len(positives), 1), hits, len(positives)


CURVE_SHARES = (0.01, 0.02, 0.05, 0.10, 0.20, 0.35, 0.60)


def curve(store, settings: Settings, papers: list[dict], pairs_path: Path) -> list[str]:
    """Recall of the labelled pairs at several shares, and where the missed ones rank."""
    with store.session() as session:
        claims = load_claims(session)
    scorer = make_scorer(store, settings, claims)
    docs = [PaperText(p["arxiv_id"], int(p.get("version") or 1), p["title"], p["abstract"]) for p in papers]
    scores = np.concatenate([scorer.score(docs[i : i + 2000]) for i in range(0, len(docs), 2000)], axis=1)
    ref_papers, ref_tokens = reference_papers()
    ref_scores = scorer.score(list(ref_papers), tokens=list(ref_tokens))
    row = {c.id: k for k, c in enumerate(claims)}
    col = {p["arxiv_id"]: i for i, p in enumerate(papers)}
    rows = [json.loads(line) for line in pairs_path.open(encoding="utf-8") if line.strip()]
    positives = [
        (row[claim_id(r["claim"])], col[r["arxiv_id"]], r)
        for r in rows
        if r["label"] != "UNRELATED" and claim_id(r["claim"]) in row and r["arxiv_id"] in col
    ]
    out = ["share asked   share selected   recall"]
    for share in CURVE_SHARES:
        cuts = np.quantile(ref_scores, 1.0 - share, axis=1)
        chosen = scores >= cuts[:, None]
        hits = sum(bool(chosen[k, i]) for k, i, _ in positives)
        got = f"{hits / len(positives):.3f} ({hits}/{len(positives)})"
        out.append(f"{share:11.2f}   {chosen.mean():14.4f}   {got}")
    cuts = np.quantile(ref_scores, 1.0 - settings.relevance.share, axis=1)
    out.append("labelled pairs below the cut at the configured share (rank: share of papers scoring higher):")
    for k, i, r in positives:
        if scores[k, i] < cuts[k]:
            rank = float((scores[k] > scores[k, i]).mean())
            out.append(f"  {rank:6.1%}  {r['label']:9s} {r['arxiv_id']}  {r['title'][:60]}")
    return out


def weekly(store, settings: Settings, papers: list[dict]):
    """Store a week of papers, run the stage, repeat; the stage's time summed over all weeks."""
    weeks: dict[tuple[int, int], list[dict]] = {}
    for p in papers:
        year, week, _ = date.fromisoformat(p["published"][:10]).isocalendar()
        weeks.setdefault((year, week), []).append(p)
    spent, total = 0.0, None
    for key in sorted(weeks):
        store_papers(store, weeks[key])
        t0 = time.monotonic()
        summary = select_candidates(store, settings)
        spent += time.monotonic() - t0
        if total is None:
            total = summary
        else:
            total.papers_scanned += summary.papers_scanned
            total.candidates_added += summary.candidates_added
    if total is not None:
        total.seconds = spent
    return spent, len(weeks), total


# Strata of the first-round draw (training/draw_pairs.py SEED_PLAN / OTHER_PLAN), 1-based BM25 ranks.
STRATA = {"seed": ((1, 40), (251, 800), (801, 3000)), "other": ((1, 30), (151, 800), (801, 3000))}
FIRST_ROUND = {"top", "cut", "deep", "random"}


def stratum(kind: str, rank: int) -> int:
    return next((k for k, (lo, hi) in enumerate(STRATA[kind]) if lo <= rank <= hi), len(STRATA[kind]))


def teacher_positives(path: Path) -> list[tuple[str, str, str, float, bool]]:
    """(kind, claim text, arxiv id, weight, in test split) of the teacher's real-claim positives."""
    rows = [json.loads(line) for line in path.open(encoding="utf-8") if line.strip()]
    rows = [
        r
        for r in rows
        if r["bucket"] in FIRST_ROUND and (r["source"] == "seed" or r["source"][:6] == "other:")
    ]
    kind = {r["claim"]: "seed" if r["source"] == "seed" else "other" for r in rows}
    drawn: dict[tuple[str, int], int] = {}
    for r in rows:
        key = (kind[r["claim"]], stratum(kind[r["claim"]], r["bm25_rank"]))
        drawn[key] = drawn.get(key, 0) + 1
    claims = {k: sum(v == k for v in kind.values()) for k in STRATA}
    sizes = {k: [hi - lo + 1 for lo, hi in STRATA[k]] for k in STRATA}
    out = []
    for r in rows:
        k, s = kind[r["claim"]], stratum(kind[r["claim"]], r["bm25_rank"])
        # Beyond the strata only the few random picks were drawn (2 of 332 bore on their claim): too
        # few to weigh, so the estimate is of recall among the papers within BM25's top 3,000.
        if r["label"] != "UNRELATED" and s < len(STRATA[k]):
            out.append(
                (k, r["claim"], r["arxiv_id"], claims[k] * sizes[k][s] / drawn[(k, s)], r["split"] == "test")
            )
    return out


def settings_table(store, settings: Settings, shared: Path, teacher: Path) -> list[str]:
    """Recall per setting on the dev pairs and the weighted teacher pairs, and a week's LLM cost."""
    held = {line.strip() for line in (shared / "eval" / "heldout_papers.txt").open() if line[:1].isdigit()}
    corpus = {p["arxiv_id"]: p for p in load_papers(shared / "arxiv" / "corpus.jsonl", None)}
    corpus = {a: p for a, p in corpus.items() if a not in held}
    with store.session() as session:
        seeds = {q.text: q for q in load_claims(session)}
    dev = [json.loads(line) for line in (shared / "eval" / "domain_dev.jsonl").open(encoding="utf-8")]
    # (group, claim text, arxiv id, weight): group "dev", "teacher" or "test" (also counted in teacher)
    found = [("dev", r["claim"], r["arxiv_id"], 1.0) for r in dev if r["label"] != "UNRELATED"]
    for _, claim, arxiv_id, weight, test in teacher_positives(teacher):
        found += [("teacher", claim, arxiv_id, weight)] + (
            [("test", claim, arxiv_id, weight)] if test else []
        )
    found = [f for f in found if f[2] in corpus]
    others = sorted({c for _, c, _, _ in found if c not in seeds})
    groups = [list(seeds.values()), [ClaimText(f"other-{i}", t) for i, t in enumerate(others)]]
    ids = sorted({a for _, _, a, _ in found})
    docs = [
        PaperText(a, int(corpus[a].get("version") or 1), corpus[a]["title"], corpus[a]["abstract"])
        for a in ids
    ]
    rel = settings.relevance
    options = [(m, s, False) for m in ("hybrid", "bm25") for s in (0.02, 0.05, 0.10, 0.20)]
    options += [(m, rel.screen_share, True) for m in ("hybrid", "bm25")]
    recall: dict[tuple[str, float, bool], dict[str, float]] = {}
    for method, share, screen in options:
        cfg = rel.model_copy(
            update={"method": method, "embed_gate": rel.screen_embed_gate if screen else rel.embed_gate}
        )
        passed: dict[tuple[str, str], bool] = {}
        for claims in groups:
            scorer = make_scorer(store, settings, claims, cfg)
            ok = scorer.score(docs) >= claim_cuts(scorer, share)[:, None]
            passed.update(
                {(c.text, a): bool(ok[k, j]) for k, c in enumerate(claims) for j, a in enumerate(ids)}
            )
        recall[(method, share, screen)] = {
            g: sum(w for h, c, a, w in found if h == g and passed[(c, a)])
            / sum(w for h, *_, w in found if h == g)
            for g in ("dev", "teacher", "test")
        }
    week = random.Random(14).sample(sorted(corpus), 6000)
    store_papers(store, [corpus[a] for a in week])
    priced = settings.model_copy(update={"relevance": rel})
    rows = alternatives(store, priced, methods=("hybrid", "bm25"))
    judge2 = {r.method: r for r in rows if r.share == 0.02 and not r.screen}
    n = {g: sum(1 for h, *_ in found if h == g) for g in ("dev", "teacher", "test")}
    out = [
        f"positives: domain_dev {n['dev']}, teacher real claims {n['teacher']} (test split {n['test']}), "
        f"weighted by draw stratum; week: 6,000 random corpus papers x {len(seeds)} claims, "
        f"${settings.llm.price_input_per_million}/${settings.llm.price_output_per_million} per M tokens",
        "| setting | recall dev | recall teacher | recall teacher test | pairs | judge calls | prompt tok | "
        "completion tok | USD/week |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        got = recall[(r.method, r.share, r.screen)]
        extra = f" + judge of kept pairs (${judge2[r.method].cost:.2f} if it keeps 2%)" if r.screen else ""
        out.append(
            f"| {r.label} | {got['dev']:.3f} | {got['teacher']:.3f} | {got['test']:.3f} | {r.pairs:,} | "
            f"{r.calls:,}{' screen' if r.screen else ''} | {r.prompt_tokens:,} | {r.completion_tokens:,} | "
            f"${r.cost:.2f}{extra} |"
        )
    return out


def overrides(rel, args: argparse.Namespace) -> None:
    """The relevance settings given on the command line."""
    for field, value in (
        ("method", args.method),
        ("share", args.share),
        ("lexical_weight", args.lexical_weight),
        ("embed_gate", args.embed_gate),
    ):
        if value is not None:
            setattr(rel, field, value)
    if args.context is not None:
        rel.query_context = [part for part in args.context.split(",") if part]


def reset(store, daily: list[dict], weekly: bool) -> bool:
    """On a reused database: clear candidates and marks (and the papers a run adds); True if reused."""
    with store.session() as session:
        reused = bool(session.scalar(select(func.count()).select_from(Paper)))
        if reused:
            session.execute(delete(Candidate))
            session.execute(delete(RelevanceMark))
            ids = [p["arxiv_id"] for p in daily]
            session.execute(delete(PaperVersion).where(PaperVersion.arxiv_id.in_(ids)))
            session.execute(delete(Paper).where(Paper.arxiv_id.in_(ids)))
        if reused and weekly:
            session.execute(delete(PaperVersion))
            session.execute(delete(Paper))
    return reused


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", choices=["hybrid", "bm25"], default=None)
    ap.add_argument("--share", type=float, default=None)
    ap.add_argument("--lexical-weight", type=float, default=None)
    ap.add_argument("--embed-gate", type=float, default=None, help="embed titles only where BM25 reaches it")
    ap.add_argument("--context", default=None, help="query context, comma-separated: title,questions,topics")
    ap.add_argument("--papers", type=int, default=None, help="only the first N papers (by date)")
    ap.add_argument(
        "--db",
        default=None,
        help="database URL to keep between runs (default: a temporary SQLite file); on reuse its "
        "candidates and marks are cleared and its cached embeddings kept",
    )
    ap.add_argument("--rescan", action="store_true", help="also time a daily-sized incremental run")
    ap.add_argument(
        "--weekly",
        action="store_true",
        help="feed the papers one week (of `published`) at a time, running the stage after each, as "
        "`monitor replay` does",
    )
    ap.add_argument("--curve", action="store_true", help="also print recall at several shares")
    ap.add_argument("--shared", type=Path, default=SHARED)
    ap.add_argument("--settings", action="store_true", help="recall and a week's LLM cost per setting")
    ap.add_argument("--teacher", type=Path, default=REPO / "training" / "teacher" / "pairs.jsonl")
    args = ap.parse_args()
    if args.settings:
        with tempfile.TemporaryDirectory() as tmp:
            store = open_store(args.db or f"sqlite:///{tmp}/bench.db")
            import_claims(store, Settings(), [REPO / "seeds"])
            lines = settings_table(store, Settings(), args.shared, args.teacher)
            store.close()
        print("\n".join(lines))
        return

    settings = Settings()
    rel = settings.relevance
    overrides(rel, args)
    papers = load_papers(args.shared / "arxiv" / "corpus.jsonl", args.papers)
    daily = papers[-300:] if args.rescan else []
    first = papers[: len(papers) - len(daily)]

    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(args.db or f"sqlite:///{tmp}/bench.db")
        import_claims(store, settings, [REPO / "seeds"])
        reused = reset(store, daily, args.weekly)
        if not reused and not args.weekly:
            store_papers(store, first)
        with store.session() as session:
            n_claims = session.scalar(
                select(func.count()).select_from(Claim).where(Claim.retired_at.is_(None))
            )

        t0 = time.monotonic()
        if args.weekly:
            wall, weeks, summary = weekly(store, settings, first)
        else:
            summary = select_candidates(store, settings)
            wall = time.monotonic() - t0
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if daily:
            store_papers(store, daily)
            t1 = time.monotonic()
            again = select_candidates(store, settings)
            daily_wall = time.monotonic() - t1
        with store.session() as session:
            n_candidates = session.scalar(select(func.count()).select_from(Candidate)) or 0
        rec, hits, total = recall(store, args.shared / "eval" / "domain_dev.jsonl")
        dev = args.shared / "eval" / "domain_dev.jsonl"
        curve_lines = curve(store, settings, first, dev) if args.curve else []
        store.close()

    share = n_candidates / max(len(papers) * (n_claims or 1), 1)
    print(
        f"method            {rel.method} (share {rel.share}, lexical_weight {rel.lexical_weight}, "
        f"embed_gate {rel.embed_gate}, context {'+'.join(rel.query_context)})"
    )
    print(f"papers x claims   {len(first)} x {n_claims}{' (title embeddings cached)' if reused else ''}")
    print(f"recall            {rec:.3f} ({hits}/{total} labelled non-UNRELATED pairs)")
    print(f"share selected    {share:.4f} ({n_candidates} candidates)")
    print(f"papers/s          {len(first) / wall:.0f}")
    print(f"wall time         {wall:.1f} s (stage summary: {summary.as_dict()})")
    print(f"peak memory       {peak_mib:.0f} MiB (max RSS of the process)")
    if args.weekly:
        print(f"weekly            {weeks} weeks, {wall / weeks:.2f} s a week on average")
    if daily:
        print(f"daily rescan      {len(daily)} papers in {daily_wall:.1f} s ({again.as_dict()})")
    for line in curve_lines:
        print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
