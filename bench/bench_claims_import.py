"""Time `import_claims`: the five real seeds, then N synthetic lines (first import and a no-op re-import).

    python bench/bench_claims_import.py [--lines 200] [--db sqlite:///tmp/bench.db]

Prints seconds per phase; no limits are asserted here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from monitor.claims.importer import import_claims
from monitor.config import PathSettings, Settings
from monitor.store import open_store

REPO = Path(__file__).resolve().parent.parent


def synthetic_line(i: int, notes: int = 12) -> str:
    parts = [
        "INQUIRING LINE",
        f"Does synthetic mechanism {i} hold at scale?",
        f"This explores synthetic question {i}.",
        "A prose body paragraph.",
        f"Sources {notes} notes",
    ]
    for k in range(notes):
        shared = k % 3 == 0  # a third of the notes are shared between neighbouring lines
        n = (i // 2) * 100 + k if shared else i * 100 + k
        parts += [f"Does note {n} generalise?", f"Note {n} finds that effect {n} holds in setting {n}."]
    parts += [
        "Research prompt for your LLMexpand ↓",
        "What a curated library found — and when (dated claims, not current truth):\n"
        "Findings span 2023–2026; treat each as a snapshot.\n"
        f"• Effect {i} holds for small models (~2025).\n• Effect {i} reverses at scale (2025-06, 2025-10).",
        f"Anchor papers (verify; mind their dates):\n• arXiv:2504.{i:05d} (2025-04) — Paper {i}",
        "Next inquiring lines",
    ]
    return "\n\n".join(parts) + "\n"


def timed(label: str, fn) -> object:
    start = time.perf_counter()
    result = fn()
    print(f"{label:<42} {time.perf_counter() - start:7.3f} s")
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--db", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.chdir(root)
        url = args.db or f"sqlite:///{root / 'bench.db'}"
        store = open_store(url)
        shutil.copytree(REPO / "seeds", root / "seeds")
        settings = Settings(paths=PathSettings(seeds=root / "seeds"))
        r = timed("5 real seeds: first import", lambda: import_claims(store, settings))
        print(f"  {r.totals}")
        timed("5 real seeds: re-import (no-op)", lambda: import_claims(store, settings))
        synth = root / "synthetic"
        synth.mkdir()
        for i in range(args.lines):
            (synth / f"{i:05d}.txt").write_text(synthetic_line(i))
        settings = Settings(paths=PathSettings(seeds=synth))
        r = timed(f"{args.lines} synthetic lines: first import", lambda: import_claims(store, settings))
        print(f"  {r.totals}")
        r = timed(f"{args.lines} synthetic lines: re-import", lambda: import_claims(store, settings))
        assert not r.changed
        first = synth / "00000.txt"
        first.write_text(first.read_text().replace("holds for small models", "holds for small models only"))
        r = timed(f"{args.lines} synthetic lines: one edited claim", lambda: import_claims(store, settings))
        print(f"  added {r.claims_added}, retired {r.claims_retired}")
        store.close()


if __name__ == "__main__":
    main()
