"""The source check's paraphrase cut, measured: how many of a seed note's word pairs each corpus paper shares.

    nice python bench/source_check.py [--corpus ../shared/arxiv/corpus.jsonl] [--seeds DIR] [--json]

A note cites its paper by neither id nor title, so `monitor/verdicts/sources.py` takes a paper to be the
note's when at least `PARAPHRASE_SHARE` of the note's consecutive content-word pairs recur in the paper's
title and abstract. This scores every note of the shipped seeds (monitor/data/seeds) against every paper of
the corpus with the module's own word pairs and prints, per note, the papers at or above the cut and the
best share of any other; last, the highest share a paper below the cut reaches over all notes. The cut is
right while the notes' own papers stand above it and every other paper well below: docs/verdicts.md keeps
the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from monitor.claims.seeds import parse_seed_file  # noqa: E402
from monitor.verdicts.sources import PARAPHRASE_SHARE, _pairs  # noqa: E402

CORPUS = REPO.parent / "shared" / "arxiv" / "corpus.jsonl"
SEEDS = REPO / "monitor" / "data" / "seeds"
SHOWN = 0.20  # notes whose best paper shares this much are listed with their two best


def _notes(seeds: Path) -> list[tuple[str, str]]:
    """(seed file and line number, text) of every note of the seed files."""
    out = []
    for path in sorted(seeds.glob("*.txt")):
        for line in parse_seed_file(path).lines:
            out += [(f"{path.name}:{c.source_line}", c.text) for c in line.claims if c.kind == "note"]
    return out


def measure(corpus: Path, seeds: Path) -> dict[str, object]:
    papers = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    titles = {p["arxiv_id"]: p["title"] for p in papers}
    paper_pairs = [(p["arxiv_id"], _pairs(f"{p['title']} {p['abstract']}")) for p in papers]
    notes: list[dict[str, object]] = []
    runner_up = {"share": 0.0, "paper": "", "note": ""}
    for where, text in _notes(seeds):
        mine = _pairs(text)
        if not mine:
            continue
        best = sorted(
            ((len(mine & theirs) / len(mine), arxiv_id) for arxiv_id, theirs in paper_pairs), reverse=True
        )[:2]
        # The best paper of a note listed below is its own; any other paper of any note is not.
        other = best[1] if best[0][0] >= SHOWN else best[0]
        if other[0] > runner_up["share"]:
            runner_up = {"share": round(other[0], 3), "paper": other[1], "note": where}
        notes.append(
            {
                "note": where,
                "pairs": len(mine),
                "best": [{"share": round(s, 3), "paper": a, "title": titles[a]} for s, a in best],
                "caught": best[0][0] >= PARAPHRASE_SHARE,
            }
        )
    return {"cut": PARAPHRASE_SHARE, "papers": len(papers), "notes": notes, "best_second": runner_up}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--seeds", type=Path, default=SEEDS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = measure(args.corpus, args.seeds)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    notes = result["notes"]
    assert isinstance(notes, list)
    print(f"{len(notes)} notes against {result['papers']} papers, cut {result['cut']}")
    for note in notes:
        first, second = note["best"]
        if first["share"] >= SHOWN:
            caught = "caught" if note["caught"] else "below the cut"
            print(
                f"  {note['note']} ({note['pairs']} pairs): {first['share']:.3f} {first['paper']} "
                f"“{first['title']}” ({caught}); next {second['share']:.3f} {second['paper']}"
            )
    other = result["best_second"]
    print(f"best share of any other paper: {other['share']:.3f} ({other['paper']}, {other['note']})")


if __name__ == "__main__":
    main()
