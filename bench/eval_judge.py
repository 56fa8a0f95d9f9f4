"""Figures for the embedded judge: SciFact dev (all pairs, and only pairs whose abstract is not cited in
train), the domain dev set (4-way), OVERTURNS precision above the calibrated threshold, and speed.

    python bench/eval_judge.py [--shared ../shared] [--limit N]

SciFact's negated claims reuse their original's abstract with the opposite label, so a judge that
could recognise abstracts would look better on dev pairs whose abstract also occurs in train; the
"unseen abstracts" line shows the score without that help.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from monitor.judge.evaluate import EvalReport, as_three_way, evaluate, read_pairs, score
from monitor.judge.local import LocalJudge

ROOT = Path(__file__).resolve().parent.parent


def line(name: str, report_or_scores: EvalReport, pairs_per_second: float | None = None) -> None:
    s = report_or_scores.strict
    parts = [f"{name}: n={s.n}", f"macro-F1 {s.macro_f1:.3f}"]
    if report_or_scores.three_way is not None:
        parts.append(f"3-way macro-F1 {report_or_scores.three_way.macro_f1:.3f}")
    overturns = s.per_class.get("OVERTURNS")
    if overturns:
        parts.append(f"OVERTURNS P {overturns.precision:.3f} R {overturns.recall:.3f}")
    if pairs_per_second:
        parts.append(f"{pairs_per_second:.1f} pairs/s")
    print("; ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    eval_dir = args.shared / "eval"

    started = time.perf_counter()
    judge = LocalJudge()
    print(
        f"judge {judge.model}: loaded in {time.perf_counter() - started:.1f}s; "
        f"OVERTURNS threshold {judge.overturn_threshold}"
    )

    dev = read_pairs(eval_dir / "scifact" / "pairs_dev.jsonl", limit=args.limit)
    report = evaluate(judge, dev, "pairs_dev.jsonl")
    line("SciFact dev", report, report.strict.n / report.seconds)
    print("  confusion (gold -> predicted):", report.strict.confusion)

    train_abstracts = {p.abstract for p in read_pairs(eval_dir / "scifact" / "pairs_train.jsonl")}
    unseen = [p for p in report.predictions if p.pair.abstract not in train_abstracts]
    gold = [p.pair.label for p in unseen]
    strict = score(gold, [p.label for p in unseen])
    three = score(gold, as_three_way(p.label for p in unseen))
    overturns = three.per_class.get("OVERTURNS")
    print(
        f"SciFact dev, abstracts not in train: n={strict.n}; 3-way macro-F1 {three.macro_f1:.3f}; "
        f"strict {strict.macro_f1:.3f}; OVERTURNS P {overturns.precision if overturns else 0:.3f}; "
        f"labels {dict(sorted({g: gold.count(g) for g in set(gold)}.items()))}"
    )

    sure = [
        p for p in report.predictions if p.label == "OVERTURNS" and p.confidence >= judge.overturn_threshold
    ]
    right = sum(p.pair.label == "OVERTURNS" for p in sure)
    print(f"SciFact dev OVERTURNS at confidence >= {judge.overturn_threshold}: {right}/{len(sure)} correct")

    domain = read_pairs(eval_dir / "domain_dev.jsonl", limit=args.limit)
    domain_report = evaluate(judge, domain, "domain_dev.jsonl")
    line("domain dev (4-way strict)", domain_report)
    print("  confusion (gold -> predicted):", domain_report.strict.confusion)


if __name__ == "__main__":
    main()
