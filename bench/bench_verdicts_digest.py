"""Time `compute_verdicts`, `settle_period` and `write_digest` on a synthetic store of lines, claims and
assessments (a run settles a period's outcomes once, in its outcomes step; the digest only reads them).

    python bench/bench_verdicts_digest.py [--claims 200] [--papers 5000] [--per-paper 3] [--db URL]

Prints seconds per phase; no limits are asserted here.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import tempfile
import time
from pathlib import Path

from monitor.config import Settings
from monitor.report.digest import write_digest
from monitor.report.gather import settle_period
from monitor.report.period import resolve_period
from monitor.store import open_store
from monitor.store.models import Assessment, Claim, Line, LineClaim, Paper, PaperVersion
from monitor.verdicts.rollup import compute_verdicts

LABELS = ["UNRELATED"] * 6 + ["SUPPORTS"] * 2 + ["RELAXES", "OVERTURNS"]


def build(url: str, claims: int, papers: int, per_paper: int) -> None:
    rng = random.Random(7)
    store = open_store(url)
    start = dt.date(2025, 6, 1)
    with store.session() as s:
        for i in range(claims // 8 + 1):
            s.add(Line(id=f"l{i}", question=f"Synthetic line {i}?"))
        for i in range(claims):
            s.add(
                Claim(
                    id=f"c{i}",
                    text=f"Synthetic claim {i} about mechanism {i % 17}.",
                    kind="dated",
                    date_text="2025-05",
                    date_start=dt.date(2025, 5, 1),
                    date_end=dt.date(2025, 5, 31),
                    date_precision="month",
                )
            )
        s.flush()
        for i in range(claims):
            s.add(LineClaim(line_id=f"l{i // 8}", claim_id=f"c{i}", role="dated", position=i % 8))
        for p in range(papers):
            pid = f"25{p:07d}"
            day = start + dt.timedelta(days=rng.randrange(400))
            s.add(
                Paper(
                    arxiv_id=pid,
                    title=f"Paper {p}",
                    abstract="x",
                    published=day,
                    source="file",
                    first_seen=dt.datetime.combine(day, dt.time(6)),
                )
            )
        s.flush()
        for p in range(papers):
            pid = f"25{p:07d}"
            s.add(PaperVersion(arxiv_id=pid, version=1, title=f"Paper {p}", abstract="x", source="file"))
            for k in range(per_paper):
                s.add(
                    Assessment(
                        cache_key=f"{pid}-{k}",
                        arxiv_id=pid,
                        version=1,
                        claim_id=f"c{rng.randrange(claims)}",
                        claim_text_hash="h",
                        judge=rng.choice(["openai", "local"]),
                        model="m",
                        prompt_version="p",
                        label=rng.choice(LABELS),
                        confidence=rng.random(),
                        rationale="r",
                        evidence="e",
                        grounded=rng.random() > 0.1,
                    )
                )
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--claims", type=int, default=200)
    parser.add_argument("--papers", type=int, default=5000)
    parser.add_argument("--per-paper", type=int, default=3)
    parser.add_argument("--db", default=None)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    url = args.db or f"sqlite:///{tmp / 'bench.db'}"
    t0 = time.perf_counter()
    build(url, args.claims, args.papers, args.per_paper)
    print(
        f"build: {args.claims} claims, {args.papers} papers, {args.papers * args.per_paper} assessments "
        f"in {time.perf_counter() - t0:.2f}s"
    )
    store = open_store(url)
    settings = Settings()
    settings.paths.reports = tmp / "reports"
    t0 = time.perf_counter()
    changes = compute_verdicts(store, settings, as_of=dt.date(2026, 7, 5))
    print(f"compute_verdicts (first): {time.perf_counter() - t0:.2f}s, {len(changes)} rows written")
    t0 = time.perf_counter()
    changes = compute_verdicts(store, settings, as_of=dt.date(2026, 7, 12))
    print(f"compute_verdicts (no change): {time.perf_counter() - t0:.2f}s, {len(changes)} rows written")
    weeks = 8
    for label in ("", " again"):  # again: the same evidence, each week's outcomes read, not computed
        settling = writing = 0.0
        for week in range(1, weeks + 1):
            # As a run does it: its outcomes step settles the period once, then the digest reads.
            period = resolve_period(f"2026-W{week:02d}")
            t0 = time.perf_counter()
            settle_period(store, settings, period)
            t1 = time.perf_counter()
            write_digest(store, settings, period, formats=["md", "html"])
            settling, writing = settling + t1 - t0, writing + time.perf_counter() - t1
        print(
            f"settle_period{label}: {settling / weeks:.2f}s, write_digest md+html{label}: "
            f"{writing / weeks:.2f}s per week ({weeks} weeks)"
        )
    md = (tmp / "reports" / "digest-2026-W08.md").stat().st_size
    print(f"digest-2026-W08.md: {md / 1024:.0f} KiB")
    store.close()


if __name__ == "__main__":
    main()
