"""Figures for the embedded judge on data it was not trained on, with its operating point and speed.

    python bench/eval_judge.py [--shared ../shared] [--limit N] [--judge embedded|openai] [--json FILE]

Sets: the teacher set's `test` split (papers never trained on or calibrated on; 4-way), its first two
rounds and its third (searched) round apart,
eval/domain_dev.jsonl (4-way; its papers are never drawn into the teacher set), SciFact dev (3-way:
RELAXES counts as SUPPORTS), and the SciFact dev pairs whose abstract is not cited in train (SciFact's
negated claims reuse their original's abstract, so a judge that recognised abstracts would look
better on the others). For each: macro-F1 of the best-guess label, then the operating point: the
precision and recall of the labels the judge states, and the share it calls "related, stance
unclear". Speed is pairs per second over all sets, each pair a new abstract as in `monitor eval`.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from monitor.config import Settings
from monitor.judge.evaluate import EvalReport, as_three_way, evaluate, operating_point, read_pairs, score
from monitor.judge.factory import make_judge
from monitor.judge_names import shown_judge

ROOT = Path(__file__).resolve().parent.parent


def summary(name: str, report: EvalReport, three_way: bool) -> dict:
    predictions = report.predictions
    gold = [p.pair.label for p in predictions]
    guessed = [p.label for p in predictions]
    scores = score(gold, as_three_way(guessed)) if three_way else score(gold, guessed)
    if three_way:  # a stated RELAXES counts as SUPPORTS on a set without RELAXES
        for p in predictions:
            p.label = "SUPPORTS" if p.label == "RELAXES" else p.label
    point = operating_point(predictions)
    out = {
        "set": name,
        "n": len(predictions),
        "macro_f1": round(scores.macro_f1, 4),
        "abstain_share": round(point.abstain_share, 4),
        "stated": {
            label: {"precision": round(s.precision, 3), "recall": round(s.recall, 3), "support": s.support}
            for label, s in point.per_label.items()
            if s.support
        },
    }
    stated = ", ".join(f"{k} P {v['precision']:.2f} R {v['recall']:.2f}" for k, v in out["stated"].items())
    print(
        f"{name}: n={out['n']} macro-F1 {out['macro_f1']:.3f}; abstains {out['abstain_share']:.1%}; {stated}"
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--teacher", type=Path, default=ROOT / "training" / "teacher" / "pairs.jsonl")
    parser.add_argument("--judge", default="embedded")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    args = parser.parse_args()
    eval_dir = args.shared / "eval"

    started = time.perf_counter()
    judge = make_judge(Settings(), args.judge)
    print(f"judge {shown_judge(judge.name)} {judge.model}: loaded in {time.perf_counter() - started:.1f} s")

    teacher_test = [p for p in read_pairs(args.teacher) if p.extra.get("split") == "test"]
    # The third round (papers found by searching for each seed claim's bearing papers) is its own row:
    # harder than the others, and the shipped student was not trained on it.
    searched = [p for p in teacher_test if p.extra.get("bucket") == "queried"][: args.limit]
    earlier = [p for p in teacher_test if p.extra.get("bucket") != "queried"][: args.limit]
    sets = [
        ("teacher test split, rounds 1-2 (4-way)", earlier, False),
        ("teacher test split, searched round (4-way)", searched, False),
        ("domain_dev (4-way)", read_pairs(eval_dir / "domain_dev.jsonl", limit=args.limit), False),
        ("SciFact dev (3-way)", read_pairs(eval_dir / "scifact" / "pairs_dev.jsonl", limit=args.limit), True),
    ]
    train_abstracts = {p.abstract for p in read_pairs(eval_dir / "scifact" / "pairs_train.jsonl")}
    results, pairs, seconds = [], 0, 0.0
    for name, pair_list, three_way in sets:
        report = evaluate(judge, pair_list, name)
        pairs, seconds = pairs + len(pair_list), seconds + report.seconds
        if three_way:
            unseen = [p for p in report.predictions if p.pair.abstract not in train_abstracts]
            unseen_report = EvalReport(name, report.judge, judge.model, report.strict, None, unseen, 0.0)
            results.append(summary(name, report, True))
            results.append(summary("SciFact dev, abstracts not in train (3-way)", unseen_report, True))
        else:
            results.append(summary(name, report, False))
    rate = pairs / seconds if seconds else 0.0
    print(f"speed: {pairs} pairs in {seconds:.0f} s = {rate:.1f} pairs/s")
    if args.json:
        args.json.write_text(
            json.dumps({"judge": judge.model, "sets": results, "pairs_per_second": rate}, indent=1)
        )


if __name__ == "__main__":
    main()
