"""Agreement of two independent teacher passes over the same judge requests: Cohen's kappa.

    python bench/teacher_agreement.py --first training/teacher/pairs.jsonl \
        --second training/teacher/second_pass.jsonl

Both files are teacher-set JSONL (training/build_teacher_set.py output); pairs are matched on
(claim, arxiv_id). Prints the overall four-way kappa and, per label, the kappa of "this label or not".
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

LABELS = ("SUPPORTS", "RELAXES", "OVERTURNS", "UNRELATED")


def kappa(a: list[str], b: list[str]) -> float:
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    ca, cb = Counter(a), Counter(b)
    expected = sum(ca[k] * cb[k] for k in set(a) | set(b)) / (n * n)
    return (observed - expected) / (1 - expected) if expected < 1 else 1.0


def read(path: Path) -> dict[tuple[str, str], str]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(r["claim"], r["arxiv_id"]): r["label"] for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first", type=Path, required=True)
    parser.add_argument("--second", type=Path, required=True)
    args = parser.parse_args()
    first, second = read(args.first), read(args.second)
    keys = sorted(set(first) & set(second))
    a, b = [first[k] for k in keys], [second[k] for k in keys]
    agree = sum(x == y for x, y in zip(a, b, strict=True))
    print(f"{len(keys)} pairs answered by both passes; raw agreement {agree / len(keys):.3f}")
    print(f"four-way Cohen's kappa {kappa(a, b):.3f}")
    for label in LABELS:
        ia = [x == label for x in a]
        ib = [y == label for y in b]
        both = sum(x and y for x, y in zip(ia, ib, strict=True))
        # A label neither pass gave has no agreement to measure.
        value = f"{kappa([str(x) for x in ia], [str(y) for y in ib]):.3f}" if any(ia) or any(ib) else "n/a"
        print(f"  {label:<10} first {sum(ia):>4}  second {sum(ib):>4}  both {both:>4}  kappa {value}")
    confusion = Counter(zip(a, b, strict=True))
    print("disagreements (first -> second):", {f"{x}->{y}": n for (x, y), n in confusion.items() if x != y})


if __name__ == "__main__":
    main()
