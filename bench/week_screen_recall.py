"""The LLM screen's recall on a real week, against careful readers who read every abstract for every claim.

    python bench/week_screen_recall.py KEEP_DIR READERS.jsonl [READERS.jsonl ...]

KEEP_DIR is what `bench/llm_path_week.py --week W --keep DIR` leaves (its store holds what the screen
kept: `candidates.screen`). Each readers' file has one line per (paper, claim) pair a reader found to bear
(`kind` "bears") or likely to bear ("likely"), with the reader's label and strength; readers never saw the
screen's answers. Printed: the pairs the readers found, how many the screen kept, by kind and by strength,
the pairs it missed, and the share of all the week's pairs it kept.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections import Counter
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("keep", type=Path)
    parser.add_argument("readers", type=Path, nargs="+")
    args = parser.parse_args()
    db = sqlite3.connect(args.keep / "monitor.db")
    states = Counter(state for (state,) in db.execute("SELECT screen FROM candidates"))
    kept = {(a, c) for a, c in db.execute("SELECT arxiv_id, claim_id FROM candidates WHERE screen = 'kept'")}
    lines = [line for path in args.readers for line in path.read_text().splitlines() if line.strip()]
    found = [json.loads(line) for line in lines]
    out: dict[str, object] = {"pairs": sum(states.values()), "screen": dict(states), "kept_share": None}
    if states:
        out["kept_share"] = round(len(kept) / sum(states.values()), 4)
    for kind in ("bears", "likely"):
        rows = [r for r in found if r["kind"] == kind]
        hit = [r for r in rows if (r["arxiv_id"], r["claim_id"]) in kept]
        by_strength = {
            s: f"{sum(1 for r in hit if r['strength'] == s)}/{sum(1 for r in rows if r['strength'] == s)}"
            for s in ("direct", "indirect", "weak")
        }
        out[kind] = {
            "found": len(rows),
            "kept": len(hit),
            "recall": round(len(hit) / len(rows), 3) if rows else None,
            "by_strength": by_strength,
            "missed": [
                f"{r['arxiv_id']} {r['claim_id']} {r['label']} {r['strength']}"
                for r in rows
                if (r["arxiv_id"], r["claim_id"]) not in kept
            ],
        }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
