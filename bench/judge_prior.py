"""How much of the embedded judge's domain score is its prior, and what moving the prior would cost.

    python bench/judge_prior.py [--shared ../shared] [--teacher training/teacher/pairs.jsonl]

The student's probabilities are calibrated on pairs like the ones it judges at run time, where about
one seed-claim pair in six bears on its claim. A labelled domain set such as eval/domain_dev.jsonl is
two thirds bearing pairs, so a judge that is right for run time calls many of them UNRELATED. This
separates the two causes of a low domain score:

- relatedness AUC: how well P(related) = 1 - P(UNRELATED) ranks bearing pairs above the others, which
  no decision rule changes;
- macro-F1 of the best guess with the UNRELATED logit shifted by `s` (0 is the shipped rule), and with
  the probabilities re-weighted to the set's own label mix (an oracle: a judge is never told this);
- for each shift, what it would do at run time: on the teacher set's held-out seed-claim pairs drawn at
  ranks 1-40 and 250-800 of the claim's relevance ranking (buckets `top` and `cut`; today's cut is near
  rank 440; never trained on), the share of pairs it would flag as bearing (stated or "related, stance
  unclear", i.e. for a curator's review) and how many of those the teacher found bearing.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

from monitor.judge.embedded import EmbeddedJudge, decide_stance
from monitor.judge.evaluate import LabelledPair, read_pairs, score
from monitor.llm.texts import ClaimText, PaperText

ROOT = Path(__file__).resolve().parent.parent
SHIFTS = (0.0, -0.5, -1.0, -1.5, -2.0, -2.5, -3.0)


def probabilities(judge: EmbeddedJudge, pairs: list[LabelledPair]) -> np.ndarray:
    rows = []
    for pair in pairs:
        paper = PaperText(pair.extra.get("arxiv_id", "x"), 1, pair.title, pair.abstract)
        probs, _ = judge.probabilities(paper, [ClaimText("c", pair.claim)])
        rows.append(probs[0])
    return np.array(rows)


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Probability that a random positive outranks a random negative (ties count half)."""
    pos, neg = scores[positive], scores[~positive]
    wins = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(wins / (len(pos) * len(neg)))


def guesses(judge: EmbeddedJudge, probs: np.ndarray, log_weights: np.ndarray) -> list[str]:
    shifted = probs * np.exp(log_weights)
    shifted /= shifted.sum(axis=1, keepdims=True)
    return [decide_stance(row, judge.config).label for row in shifted]


def unrelated_shift(judge: EmbeddedJudge, shift: float) -> np.ndarray:
    weights = np.zeros(len(judge.config.labels))
    weights[judge.config.labels.index("UNRELATED")] = shift
    return weights


def oracle_weights(judge: EmbeddedJudge, gold: list[str], calib_mix: Counter[str]) -> np.ndarray:
    """log(set share / calibration share) per label: the prior this set would need."""
    mix = Counter(gold)
    return np.array(
        [
            np.log((mix[k] + 0.5) / len(gold)) - np.log((calib_mix[k] + 0.5) / sum(calib_mix.values()))
            for k in judge.config.labels
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--teacher", type=Path, default=ROOT / "training" / "teacher" / "pairs.jsonl")
    args = parser.parse_args()

    judge = EmbeddedJudge()
    everything = read_pairs(args.teacher)
    teacher = [p for p in everything if p.extra.get("source") == "seed"]
    # The slice the shipped calibration was fitted on: train_student.py leaves the searched round out.
    calib_mix = Counter(
        p.label for p in everything if p.extra.get("split") == "calib" and p.extra.get("bucket") != "queried"
    )
    sets = {
        "domain_dev": read_pairs(args.shared / "eval" / "domain_dev.jsonl"),
        "teacher test, seed claims": [p for p in teacher if p.extra.get("split") == "test"],
    }
    # Pairs as the relevance stage passes them: drawn by rank, not picked by a model or a search.
    runtime = [
        p
        for p in teacher
        if p.extra.get("split") in ("test", "calib") and p.extra.get("bucket") in ("top", "cut")
    ]

    for name, pairs in sets.items():
        gold = [p.label for p in pairs]
        probs = probabilities(judge, pairs)
        related = np.array([g != "UNRELATED" for g in gold])
        print(f"\n{name}: n={len(pairs)} {dict(Counter(gold))}")
        print(f"  relatedness AUC {auc(1 - probs[:, -1], related):.3f}")
        for shift in SHIFTS:
            f1 = score(gold, guesses(judge, probs, unrelated_shift(judge, shift))).macro_f1
            print(f"  UNRELATED logit {shift:+.1f}: macro-F1 {f1:.3f}")
        oracle = score(gold, guesses(judge, probs, oracle_weights(judge, gold, calib_mix))).macro_f1
        print(f"  re-weighted to this set's own label mix (oracle): macro-F1 {oracle:.3f}")

    gold = np.array([p.label != "UNRELATED" for p in runtime])
    probs = probabilities(judge, runtime)
    print(
        f"\nrun-time-like pairs (teacher calib+test, seed claims, ranks 1-40 and 250-800): n={len(runtime)}, "
        f"{gold.mean():.1%} bearing"
    )
    for shift in SHIFTS:
        flagged = np.array([g != "UNRELATED" for g in guesses(judge, probs, unrelated_shift(judge, shift))])
        precision = gold[flagged].mean() if flagged.any() else 0.0
        print(
            f"  UNRELATED logit {shift:+.1f}: flags {flagged.mean():.1%} of pairs, {precision:.0%} of them "
            f"bearing, finds {(flagged & gold).sum() / gold.sum():.0%} of the bearing pairs"
        )


if __name__ == "__main__":
    main()
