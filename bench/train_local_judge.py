"""Rebuild the embedded judge's weights (monitor/data/local_judge.json) from SciFact's training pairs.

    python bench/train_local_judge.py [--pairs ../shared/eval/scifact/pairs_train.jsonl]
                                      [--relaxes-dev ../shared/eval/domain_dev.jsonl] [--out FILE]

Only the training pairs teach the three SciFact labels. Cross-validation (5 folds grouped by abstract,
because SciFact's negated claims reuse their original's abstract with the opposite label) chooses the
regularisation, fits a temperature so the probabilities are calibrated, tunes per-class decision
weights for macro-F1, and finds the OVERTURNS confidence above which precision reaches 0.8.
RELAXES does not occur in SciFact: its threshold, and the UNRELATED weight for claims longer than
SciFact's, are tuned on the domain dev set (--relaxes-dev).

Needs scikit-learn (`pip install -e ".[train]"`); the judge itself needs only numpy at run time.
Embeddings are cached in --cache (default /tmp/local_judge_embeddings.npz) to make reruns quick.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from monitor.embeddings import Embedder, get_embedder
from monitor.judge.base import ClaimText, PaperText
from monitor.judge.evaluate import Pair, read_pairs, score
from monitor.judge.features import FEATURE_NAMES, words
from monitor.judge.local import LocalJudge, LocalModel

CLASSES = ["SUPPORTS", "OVERTURNS", "UNRELATED"]
ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SHARED = ROOT.parent / "shared" / "eval"
TARGET_OVERTURN_PRECISION = 0.8
MIN_OVERTURN_PRECISION = 0.5


class CachingEmbedder(Embedder):
    """The real embedder with a text -> vector cache persisted between runs of this script."""

    def __init__(self, inner: Embedder, path: Path) -> None:  # noqa: D107 - no super().__init__: wraps
        self.inner, self.path = inner, path
        self.name, self.dim = inner.name, inner.dim
        self.cache: dict[str, np.ndarray] = {}
        if path.exists():
            data = np.load(path)
            if str(data["model"]) == inner.name:
                self.cache = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    def embed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        keys = [hashlib.sha1(t.encode()).hexdigest() for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in self.cache}.items())
        if missing:
            vecs = self.inner.embed([t for _, t in missing], batch_size)
            self.cache.update({k: v for (k, _), v in zip(missing, vecs, strict=True)})
        return np.stack([self.cache[k] for k in keys]) if keys else np.zeros((0, self.dim), np.float32)

    def save(self) -> None:
        keys = sorted(self.cache)
        np.savez(
            self.path, model=self.name, keys=np.array(keys), vectors=np.stack([self.cache[k] for k in keys])
        )


def featurize(judge: LocalJudge, pairs: list[Pair], label: str) -> np.ndarray:
    rows = []
    for i, pair in enumerate(pairs):
        paper = PaperText(f"pair-{pair.line}", 1, pair.title, pair.abstract)
        rows.append(judge.features(paper, [ClaimText(f"line-{pair.line}", pair.claim)])[0].vector)
        if (i + 1) % 200 == 0:
            print(f"  {label}: {i + 1}/{len(pairs)} pairs", file=sys.stderr)
    return np.stack(rows)


def standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    return mean, scale


def fit(x: np.ndarray, y: np.ndarray, c: float) -> LogisticRegression:
    mean, scale = standardise(x)
    clf = LogisticRegression(C=c, max_iter=2000)
    clf.fit((x - mean) / scale, y)
    clf.mean_, clf.scale_ = mean, scale  # type: ignore[attr-defined]
    return clf


def out_of_fold_logits(x: np.ndarray, y: np.ndarray, groups: np.ndarray, c: float) -> np.ndarray:
    logits = np.zeros((len(y), len(CLASSES)))
    for train, test in GroupKFold(n_splits=5).split(x, y, groups):
        clf = fit(x[train], y[train], c)
        logits[test] = clf.decision_function((x[test] - clf.mean_) / clf.scale_)
    return logits


def softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = logits / temperature
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def nll(probs: np.ndarray, y: np.ndarray) -> float:
    return float(-np.log(np.clip(probs[np.arange(len(y)), y], 1e-12, None)).mean())


def tune_decision_weights(probs: np.ndarray, y: np.ndarray) -> tuple[dict[str, float], float]:
    """Per-class multipliers (UNRELATED fixed at 1) that maximise out-of-fold macro-F1 while predicted
    OVERTURNS stay at least MIN_OVERTURN_PRECISION precise (a false OVERTURNS costs a curator most)."""
    grid = np.round(np.arange(0.5, 4.01, 0.1), 2)
    best = (-1.0, 1.0, 1.0)
    gold = [CLASSES[i] for i in y]
    for ws, wo in itertools.product(grid, grid):
        pred = np.argmax(probs * np.array([ws, wo, 1.0]), axis=1)
        scores = score(gold, [CLASSES[i] for i in pred])
        if scores.per_class["OVERTURNS"].precision < MIN_OVERTURN_PRECISION:
            continue
        if scores.macro_f1 > best[0] + 1e-9:
            best = (scores.macro_f1, float(ws), float(wo))
    return {"SUPPORTS": best[1], "OVERTURNS": best[2], "UNRELATED": 1.0}, best[0]


def overturn_threshold(probs: np.ndarray, pred: np.ndarray, y: np.ndarray) -> tuple[float, float, int]:
    """Lowest confidence at which predicted OVERTURNS reach the target precision (at least 10 of them).

    Falls back to the confidence with the best reachable precision. Returns (threshold, precision, n).
    """
    o = CLASSES.index("OVERTURNS")
    mask = pred == o
    conf, correct = probs[mask, o], (y[mask] == o)
    order = np.argsort(-conf)
    conf, correct = conf[order], correct[order]
    best = (1.0, 0.0, 0)
    for k in range(10, len(conf) + 1):
        precision = float(correct[:k].mean())
        if precision >= TARGET_OVERTURN_PRECISION:
            best = (float(conf[k - 1]), precision, k)  # keep lowering while precision holds
        elif best[2] == 0 and precision > best[1]:
            best = (float(conf[k - 1]), precision, -k)
    threshold, precision, k = best
    return round(threshold, 4), round(precision, 4), abs(k)


def tune_domain(judge: LocalJudge, pairs: list[Pair]) -> dict[str, float]:
    """Tune the two domain settings on the domain dev set by strict 4-way macro-F1: the UNRELATED weight
    for claims longer than SciFact's, and the min P(related) at which mitigation cues make RELAXES.

    Near-ties (within 0.01) go to the setting closest to the SciFact-trained model (larger weight,
    stricter RELAXES), as 44 pairs cannot tell them apart."""
    gold = [p.label for p in pairs]
    model = judge.weights
    features = [
        judge.features(PaperText("d", 1, p.title, p.abstract), [ClaimText("c", p.claim)])[0] for p in pairs
    ]
    results = []
    for weight, related in itertools.product(
        np.round(np.arange(0.05, 1.01, 0.05), 2), np.arange(0, 1.01, 0.05)
    ):
        model.long_claim_unrelated_weight, model.relaxes_min_related = float(weight), float(round(related, 2))
        predicted = [
            judge._judgement(ClaimText("c", p.claim), f, *_decide(model, f.vector, p.claim)).label
            for p, f in zip(pairs, features, strict=True)
        ]
        scores = score(gold, predicted)
        relaxes = scores.per_class.get("RELAXES")
        tp = scores.confusion.get("RELAXES", {}).get("RELAXES", 0)
        n_pred = sum(row.get("RELAXES", 0) for row in scores.confusion.values())
        results.append((scores.macro_f1, float(weight), round(float(related), 2), tp, n_pred, relaxes))
    best_f1 = max(r[0] for r in results)
    f1, weight, related, tp, n_pred, _ = max(
        (r for r in results if r[0] >= best_f1 - 0.01), key=lambda r: (r[1], r[2])
    )
    print(
        f"  domain: long-claim UNRELATED weight {weight}, RELAXES min related {related}: "
        f"4-way macro-F1 {f1:.3f} (best {best_f1:.3f}); RELAXES {tp}/{n_pred} correct",
        file=sys.stderr,
    )
    return {
        "long_claim_unrelated_weight": weight,
        "relaxes_min_related": related,
        "macro_f1": f1,
        # What a RELAXES is worth: its precision on the dev set, with add-one smoothing.
        "relaxes_confidence": (tp + 1) / (n_pred + 2),
    }


def _decide(model: LocalModel, vector: np.ndarray, claim: str) -> tuple[np.ndarray, int]:
    probs = model.adjusted(model.probabilities(vector), [len(words(claim))])[0]
    return probs, int(np.argmax(probs))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=Path, default=DEFAULT_SHARED / "scifact" / "pairs_train.jsonl")
    parser.add_argument("--relaxes-dev", type=Path, default=DEFAULT_SHARED / "domain_dev.jsonl")
    parser.add_argument("--out", type=Path, default=ROOT / "monitor" / "data" / "local_judge.json")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/local_judge_embeddings.npz"))
    args = parser.parse_args()

    embedder = CachingEmbedder(get_embedder(), args.cache)
    judge = LocalJudge(model=LocalModel.untrained(CLASSES), embedder=embedder)
    train = read_pairs(args.pairs)
    if any(p.label == "RELAXES" for p in train):
        raise SystemExit("training pairs must not contain RELAXES (SciFact has none)")
    print(f"featurising {len(train)} training pairs", file=sys.stderr)
    x = featurize(judge, train, "train")
    embedder.save()
    y = np.array([CLASSES.index(p.label) for p in train])
    groups = np.array([hashlib.sha1(p.abstract.encode()).hexdigest() for p in train])

    best_c, best_loss, best_logits = 1.0, float("inf"), None
    for c in (0.01, 0.03, 0.1, 0.3, 1.0, 3.0):
        logits = out_of_fold_logits(x, y, groups, c)
        loss = nll(softmax(logits, 1.0), y)
        print(f"  C={c}: out-of-fold log-loss {loss:.4f}", file=sys.stderr)
        if loss < best_loss:
            best_c, best_loss, best_logits = c, loss, logits
    assert best_logits is not None
    temperature = min(np.arange(0.5, 2.01, 0.05), key=lambda t: nll(softmax(best_logits, t), y))
    probs = softmax(best_logits, float(temperature))
    weights, cv_f1 = tune_decision_weights(probs, y)
    shifted = probs * np.array([weights[c] for c in CLASSES])
    shifted /= shifted.sum(axis=1, keepdims=True)  # what the judge reports as confidence
    threshold, precision, n_above = overturn_threshold(shifted, np.argmax(shifted, axis=1), y)
    print(f"C={best_c} T={temperature:.2f} weights={weights} cv macro-F1 {cv_f1:.4f}", file=sys.stderr)
    print(f"OVERTURNS threshold {threshold} (cv precision {precision}, {n_above} pairs)", file=sys.stderr)

    final = fit(x, y, best_c)
    claim_lengths = [len(words(p.claim)) for p in train]
    model = LocalModel(
        classes=[CLASSES[i] for i in final.classes_],
        feature_names=list(FEATURE_NAMES),
        mean=final.mean_,
        scale=final.scale_,
        coef=final.coef_,
        intercept=final.intercept_,
        temperature=round(float(temperature), 3),
        decision_weights=weights,
        overturn_threshold=threshold,
        # Longer than 95% of the training claims: outside what SciFact taught the model.
        long_claim_words=int(np.percentile(claim_lengths, 95)) + 1,
        embedding_model=embedder.name,
        info={
            "trained_on": args.pairs.name,
            "train_sha256": hashlib.sha256(args.pairs.read_bytes()).hexdigest(),
            "n_train": len(train),
            "C": best_c,
            "cv_macro_f1": round(cv_f1, 4),
            "cv_log_loss": round(nll(probs, y), 4),
            "cv_overturn_precision_at_threshold": precision,
            "cv_overturns_at_threshold": n_above,
        },
    )
    judge.weights = model
    if args.relaxes_dev.exists():
        tuned = tune_domain(judge, read_pairs(args.relaxes_dev))
        model.long_claim_unrelated_weight = tuned["long_claim_unrelated_weight"]
        model.relaxes_min_related = tuned["relaxes_min_related"]
        model.relaxes_confidence = round(tuned["relaxes_confidence"], 4)
        model.info.update(
            domain_tuned_on=args.relaxes_dev.name, domain_dev_macro_f1=round(tuned["macro_f1"], 4)
        )
        embedder.save()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    model.save(args.out)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
