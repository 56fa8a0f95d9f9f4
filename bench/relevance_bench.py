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
"""

from __future__ import annotations

import argparse
import json
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
from monitor.relevance import select_candidates
from monitor.relevance.reference import reference_papers
from monitor.relevance.scoring import PaperDoc
from monitor.relevance.select import load_claim_queries, make_scorer
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
        claims = load_claim_queries(session)
    scorer = make_scorer(store, settings, claims)
    docs = [PaperDoc(0, p["arxiv_id"], int(p.get("version") or 1), p["title"], p["abstract"]) for p in papers]
    scores = np.concatenate([scorer.score(docs[i : i + 2000]) for i in range(0, len(docs), 2000)], axis=1)
    ref_papers, ref_tokens = reference_papers()
    ref_scores = scorer.score(list(ref_papers), tokens=list(ref_tokens))
    row = {c.claim_id: k for k, c in enumerate(claims)}
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
    args = ap.parse_args()

    settings = Settings()
    rel = settings.relevance
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
    papers = load_papers(args.shared / "arxiv" / "corpus.jsonl", args.papers)
    daily = papers[-300:] if args.rescan else []
    first = papers[: len(papers) - len(daily)]

    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(args.db or f"sqlite:///{tmp}/bench.db")
        import_claims(store, settings, [REPO / "seeds"])
        with store.session() as session:
            reused = bool(session.scalar(select(func.count()).select_from(Paper)))
            if reused:
                session.execute(delete(Candidate))
                session.execute(delete(RelevanceMark))
                session.execute(
                    delete(PaperVersion).where(PaperVersion.arxiv_id.in_([p["arxiv_id"] for p in daily]))
                )
                session.execute(delete(Paper).where(Paper.arxiv_id.in_([p["arxiv_id"] for p in daily])))
            if reused and args.weekly:
                session.execute(delete(PaperVersion))
                session.execute(delete(Paper))
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
