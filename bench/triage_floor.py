"""The digest's triage floor, measured: from which score of the embedded model a paper it ranks close
to a claim is worth listing.

    nice python bench/triage_floor.py [--target 0.667] [--json]

An offline digest lists, per claim, the papers the embedded model flags (it states a stance, or keeps
the pair as "related, stance unclear"), ranked by the score stored on the assessment: its calibrated
confidence in the stance it leans to. This runs the shipped model on labelled pairs it was not trained
on: the teacher set's `calib` and `test` splits (training/teacher/pairs.jsonl, the seeds' own claims,
not the synthetic variants) and ../shared/eval/domain_dev.jsonl, leaving out every paper listed in
../shared/eval/heldout_papers.txt. A flagged pair is an *entry*; it *bears* when its label is not
UNRELATED. For each floor it prints, per set and pooled, how many entries at or above the floor bear on
their claim (with a 95% Wilson interval), and how many below it do. The floor is the lowest at which
the pooled share reaches `--target` (default two in three); the digest's `TRIAGE_FLOOR`
(monitor/report/views.py) is compared with it. docs/digest_trust.md keeps the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TEACHER = REPO / "training" / "teacher" / "pairs.jsonl"
DEV = SHARED / "eval" / "domain_dev.jsonl"
HELDOUT = SHARED / "eval" / "heldout_papers.txt"
FLOORS = [round(0.20 + 0.05 * k, 2) for k in range(13)]  # 0.20 .. 0.80


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _heldout() -> set[str]:
    lines = HELDOUT.read_text(encoding="utf-8").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def pairs() -> list[dict]:
    """The labelled pairs the model never trained on, each tagged with its set."""
    held = _heldout()
    teacher = [
        {**r, "set": r["split"]}
        for r in _jsonl(TEACHER)
        if r["split"] in ("calib", "test") and r.get("source") == "seed" and r.get("arxiv_id") not in held
    ]
    dev = [{**r, "set": "domain_dev"} for r in _jsonl(DEV) if r.get("arxiv_id") not in held]
    return teacher + dev


def score(rows: list[dict]) -> list[dict]:
    """The embedded judge's decision on each pair, as it would store it."""
    from monitor.judge.embedded import EmbeddedJudge, decide_stance
    from monitor.llm.texts import ClaimText, PaperText

    judge = EmbeddedJudge()
    out = []
    for r in rows:
        paper = PaperText(arxiv_id=r.get("arxiv_id", ""), version=1, title=r["title"], abstract=r["abstract"])
        probs, _ = judge.probabilities(paper, [ClaimText(id="c", text=r["claim"])])
        decision = decide_stance(probs[0], judge.config)
        out.append(
            {
                "set": r["set"],
                "bears": r["label"] != "UNRELATED",
                "entry": decision.label != "UNRELATED",
                "score": decision.confidence,
            }
        )
    return out


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return 0.0, 0.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def table(scored: list[dict]) -> list[dict]:
    entries = [r for r in scored if r["entry"]]
    sets = sorted({r["set"] for r in scored})
    rows = []
    for floor in FLOORS:
        above = [r for r in entries if r["score"] >= floor]
        below = [r for r in entries if r["score"] < floor]
        row = {
            "floor": floor,
            "above": len(above),
            "above_bear": sum(r["bears"] for r in above),
            "below": len(below),
            "below_bear": sum(r["bears"] for r in below),
            "per_set": {
                s: [sum(r["bears"] for r in above if r["set"] == s), sum(r["set"] == s for r in above)]
                for s in sets
            },
        }
        row["share"] = row["above_bear"] / row["above"] if row["above"] else 0.0
        row["interval"] = wilson(row["above_bear"], row["above"])
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", type=float, default=2 / 3, help="share of entries that must bear")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    from monitor.report.views import TRIAGE_FLOOR, TRIAGE_FLOOR_MEASURED

    scored = score(pairs())
    rows = table(scored)
    chosen = next((r for r in rows if r["above"] and r["share"] >= args.target), None)
    result = {
        "pairs": len(scored),
        "bearing": sum(r["bears"] for r in scored),
        "entries": sum(r["entry"] for r in scored),
        "per_set_pairs": {s: sum(r["set"] == s for r in scored) for s in sorted({r["set"] for r in scored})},
        "target": args.target,
        "floor": chosen["floor"] if chosen else None,
        "shipped_floor": TRIAGE_FLOOR,
        "shipped_measured": list(TRIAGE_FLOOR_MEASURED),
        "rows": rows,
    }
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(
        f"{result['pairs']} labelled pairs ({result['per_set_pairs']}), {result['bearing']} bear on their "
        f"claim; the embedded model flags {result['entries']}"
    )
    print("floor  entries  bear   share  95% interval   below: bear/entries   per set (bear/entries)")
    for r in rows:
        low, high = r["interval"]
        sets = ", ".join(f"{s} {b}/{n}" for s, (b, n) in r["per_set"].items())
        print(
            f"{r['floor']:.2f}   {r['above']:6d}  {r['above_bear']:4d}   {r['share']:.2f}   "
            f"[{low:.2f}, {high:.2f}]     {r['below_bear']:3d}/{r['below']:<3d}              {sets}"
        )
    if chosen is None:
        print(f"no floor reaches a share of {args.target:.2f}")
        return
    print(
        f"lowest floor with a share >= {args.target:.2f}: {chosen['floor']:.2f} "
        f"({chosen['above_bear']} of {chosen['above']}); shipped TRIAGE_FLOOR {TRIAGE_FLOOR:.2f} "
        f"({TRIAGE_FLOOR_MEASURED[0]} of {TRIAGE_FLOOR_MEASURED[1]})"
        + ("" if math.isclose(chosen["floor"], TRIAGE_FLOOR) else ": DIFFERS, remeasure and update it")
    )


if __name__ == "__main__":
    main()
