"""The embedded judge: a small cross-encoder distilled from an LLM teacher. No network, no key.

A cross-encoder reads the claim and the paper together, so it can tell a paper that bears on the
claim from one that merely shares its topic, which similarity features cannot. The model is the
first layers of all-MiniLM-L6-v2 with a four-way head, fine-tuned on the teacher set
(`training/teacher/`, labels by an LLM reading the project's own judge requests) and SciFact train
(`training/train_student.py`), exported to ONNX and quantised to int8, so it runs on onnxruntime
without PyTorch.

What the model reads: the claim, then the title and the abstract sentences that share the most
(IDF-weighted, stemmed) words with the claim, in their original order, up to `max_tokens`. Its
probabilities are calibrated per label on a slice of the teacher set it was not trained on. It
states a stance only where that slice measured precision >= `target_precision` at that confidence;
below, the pair is "related, stance unclear" (`Judgement.abstained`): kept for review, counted
toward no verdict.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from monitor.errors import ConfigError
from monitor.judge.base import LABELS, Judge, Judgement, Label
from monitor.judge.sentences import Sentence, split_sentences
from monitor.judge_names import EMBEDDED, stored_judge_name
from monitor.llm.texts import ClaimText, PaperText, Recorder
from monitor.text import words

if TYPE_CHECKING:
    import onnxruntime as ort

    from monitor.relevance.bm25 import Lexicon

# The model files keep their first name (and the judge its stored name and prompt version, part of
# every cache key): renaming them would re-judge every stored pair for nothing.
MODEL_DIR = "student"
_CLS, _SEP = "[CLS]", "[SEP]"
# Words that often carry a stance; named in rationales so a reader sees what the sentence turns on.
_CUES = re.compile(
    r"\b(?:not|no|fails?|failed|cannot|however|but|only|despite|although|unlike|contrary|"
    r"mitigat\w*|alleviat\w*|overcom\w*|reduc\w*|improv\w*|outperform\w*|degrad\w*|harm\w*|"
    r"collaps\w*|consistent\w*|confirm\w*|match\w*|limited|without|whereas|surpass\w*)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class EmbeddedConfig:
    """What `student.json` holds: how inputs are built and how outputs are calibrated and decided."""

    labels: tuple[str, ...]
    max_tokens: int
    claim_tokens: int
    temperature: float
    bias: tuple[float, ...]  # per-label offsets added to the scaled logits (vector-scaling calibration)
    thresholds: dict[str, float]  # per stance label: the confidence from which it is stated
    target_precision: float
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbeddedConfig:
        return cls(
            labels=tuple(data["labels"]),
            max_tokens=int(data["max_tokens"]),
            claim_tokens=int(data["claim_tokens"]),
            temperature=float(data["temperature"]),
            bias=tuple(float(b) for b in data["bias"]),
            thresholds={k: float(v) for k, v in data["thresholds"].items()},
            target_precision=float(data["target_precision"]),
            info=dict(data.get("info", {})),
        )

    def probabilities(self, logits: np.ndarray) -> np.ndarray:
        z = np.atleast_2d(logits) / self.temperature + np.asarray(self.bias)
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Decision:
    """The label a probability row gives, its confidence, and whether the stance is withheld."""

    label: Label
    confidence: float
    abstained: bool


def decide_stance(probs: np.ndarray, config: EmbeddedConfig) -> Decision:
    """State the most likely stance where its calibrated precision is high enough; else abstain.

    "Related" is 1 - P(UNRELATED): a pair more likely related than not, with no stance confident
    enough to state, is "related, stance unclear"; otherwise it is UNRELATED.
    """
    labels = config.labels
    unrelated = labels.index("UNRELATED")
    stance = max((i for i in range(len(labels)) if i != unrelated), key=lambda i: probs[i])
    label = labels[stance]
    if probs[stance] >= config.thresholds.get(label, 2.0) and probs[stance] >= probs[unrelated]:
        return Decision(_as_label(label), float(probs[stance]), False)
    if 1.0 - probs[unrelated] >= 0.5:
        return Decision(_as_label(label), float(probs[stance]), True)
    return Decision("UNRELATED", float(probs[unrelated]), False)


def _as_label(value: str) -> Label:
    if value not in LABELS:
        raise ValueError(f"unknown label {value!r}")
    return value  # type: ignore[return-value]


def sentence_overlap(lexicon: Lexicon, claim: str, sentences: Sequence[str]) -> list[tuple[float, list[str]]]:
    """Each sentence's IDF-weighted share of stemmed words with the claim, and the stems shared, rarest
    first: what the model's input and the digest's triage quote pick a sentence by."""
    from monitor.relevance.bm25 import tokenize

    tokens = tokenize([claim, *sentences])
    claim_words = set(tokens[0])
    out = []
    for sentence in tokens[1:]:
        shared = sorted(claim_words & set(sentence), key=lambda w: -lexicon.idf(w))
        out.append((sum(lexicon.idf(w) for w in shared), shared))
    return out


def surface_words(text: str, stems: Sequence[str]) -> list[str]:
    """The words of `text` as written whose stems are `stems` (in that order): stems are for machines,
    a reader is shown "failures", not "failur"."""
    from monitor.relevance.bm25 import tokenize

    # Each word once, as first written ("RLVR" stays "RLVR"); the stemmer lower-cases it itself.
    unique = list({w.lower(): w for w in reversed(words(text, lower=False))}.values())[::-1]
    written: dict[str, str] = {}
    for word, stemmed in zip(unique, tokenize(unique), strict=True):
        for stem in stemmed:
            written.setdefault(stem, word)
    return [written[s] for s in stems if s in written]


def quoted(words: Sequence[str]) -> str:
    """“a”, “b” and “c”."""
    marks = [f"“{w}”" for w in words]
    return marks[0] if len(marks) == 1 else ", ".join(marks[:-1]) + " and " + marks[-1]


class Encoded(NamedTuple):
    """One pair as the model reads it, and the abstract sentence it rests on."""

    ids: list[int]
    types: list[int]
    best: int  # index of the sentence sharing most with the claim; -1 for an empty abstract
    shared: list[str]  # the stemmed words that sentence shares with the claim, rarest first


class PairEncoder:
    """Turns (claim, title, abstract) into the token ids the model reads; shared with training."""

    def __init__(self, tokenizer_path: Path, max_tokens: int, claim_tokens: int) -> None:
        from tokenizers import Tokenizer

        from monitor.relevance.bm25 import load_lexicon

        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.max_tokens = max_tokens
        self.claim_tokens = claim_tokens
        self.lexicon = load_lexicon()
        self.cls_id = self.tokenizer.token_to_id(_CLS)
        self.sep_id = self.tokenizer.token_to_id(_SEP)

    def _ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def overlap(self, claim: str, sentences: Sequence[str]) -> list[tuple[float, list[str]]]:
        """Each sentence's IDF-weighted share of stemmed words with the claim, and the words shared."""
        return sentence_overlap(self.lexicon, claim, sentences)

    def encode(self, claim: str, title: str, sentences: Sequence[Sentence]) -> Encoded:
        """The token ids and types of the pair, and the sentence that shares most with the claim."""
        texts = [s.text for s in sentences]
        claim_ids, title_ids, *sentence_ids = self._ids([claim, title or " ", *texts])
        claim_ids = claim_ids[: self.claim_tokens]
        budget = self.max_tokens - len(claim_ids) - 3 - len(title_ids)
        overlaps = self.overlap(claim, texts) if texts else []
        scores = [score for score, _ in overlaps]
        # Best-overlapping sentences first (earlier first on ties), then shown in the abstract's order.
        order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))
        chosen: list[int] = []
        for index in order:
            if not chosen and len(sentence_ids[index]) > budget:
                # The best sentence always shows, cut to the budget when it is too long.
                sentence_ids[index] = sentence_ids[index][: max(0, budget)]
            if len(sentence_ids[index]) <= budget:
                chosen.append(index)
                budget -= len(sentence_ids[index])
        paper_ids = list(title_ids)
        for index in sorted(chosen):
            paper_ids.extend(sentence_ids[index])
        paper_ids = paper_ids[: self.max_tokens - len(claim_ids) - 3]
        ids = [self.cls_id, *claim_ids, self.sep_id, *paper_ids, self.sep_id]
        types = [0] * (len(claim_ids) + 2) + [1] * (len(paper_ids) + 1)
        return Encoded(ids, types, order[0], overlaps[order[0]][1]) if texts else Encoded(ids, types, -1, [])


def pad_batch(rows: Sequence[tuple[list[int], list[int]]]) -> dict[str, np.ndarray]:
    """Right-padded int64 arrays for the ONNX model."""
    width = max(len(ids) for ids, _ in rows)
    ids = np.zeros((len(rows), width), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, (i, t) in enumerate(rows):
        ids[row, : len(i)] = i
        types[row, : len(t)] = t
        mask[row, : len(i)] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _shipped_dir() -> Path:
    return Path(str(resources.files("monitor").joinpath("data", MODEL_DIR)))


def load_config(directory: Path | None = None) -> tuple[EmbeddedConfig, Path, str]:
    """The config, the ONNX file, and a short hash of both (part of the judge's cache key)."""
    directory = directory or _shipped_dir()
    model_path = directory / "model.onnx"
    try:
        raw = (directory / "student.json").read_bytes()
        config = EmbeddedConfig.from_dict(json.loads(raw))
        digest = hashlib.sha256(raw + model_path.read_bytes()).hexdigest()[:10]
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(
            f"{directory}: embedded judge model unreadable ({exc}); rebuild it with training/train_student.py"
        ) from None
    return config, model_path, digest


@dataclass(frozen=True)
class Coverage:
    """Of held-out pairs of real claims drawn by relevance rank (as the judge meets them at run time),
    how many bear on their claim (by the teacher), how many the judge flags (states a stance or keeps
    for review), and how many of those bear. Measured when the model was built (`coverage.json`)."""

    n: int
    bearing: int
    flagged: int
    found: int


def measured_coverage(directory: Path | None = None) -> Coverage | None:
    """The shipped model's coverage figures; None for a model built without them."""
    path = (directory or _shipped_dir()) / "coverage.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))["test_ranked"]
        return Coverage(int(raw["n"]), int(raw["bearing"]), int(raw["flagged"]), int(raw["found"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


class EmbeddedJudge(Judge):
    """The distilled cross-encoder; deterministic and offline."""

    name = stored_judge_name(EMBEDDED)  # stored on its assessments and part of their cache keys
    prompt_version = "student-v1"
    # All of a paper's claims in one call: the abstract is split once for them.
    claims_per_call = 64
    # It ranks papers for triage: its stances wait for a curator, and a large library's candidates are
    # read only down to its cut (`judge.embedded_top_k`).
    triage_only = True

    def __init__(self, settings: object | None = None, *, directory: Path | None = None) -> None:
        del settings  # the embedded model has nothing to configure
        from monitor.embeddings import model_files

        self.config, self.model_path, digest = load_config(directory)
        self.model = f"minilm-student-int8-{digest}"
        self.encoder = PairEncoder(model_files()[1], self.config.max_tokens, self.config.claim_tokens)

    @functools.cached_property
    def session(self) -> ort.InferenceSession:
        """Loaded on first use: a dry run or a run with nothing pending needs only the cache key."""
        from monitor.embeddings import cpu_session

        return cpu_session(self.model_path)

    def probabilities(self, paper: PaperText, claims: Sequence[ClaimText]) -> tuple[np.ndarray, list[int]]:
        """Calibrated probabilities (claims x labels) and each claim's best-overlapping sentence."""
        _, probs, encoded = self._run(paper, claims)
        return probs, [e.best for e in encoded]

    def _run(
        self, paper: PaperText, claims: Sequence[ClaimText]
    ) -> tuple[list[Sentence], np.ndarray, list[Encoded]]:
        sentences = split_sentences(paper.abstract)
        encoded = [self.encoder.encode(c.text, paper.title, sentences) for c in claims]
        # One pair a run: int8 dynamic quantisation scales activations over the whole batch, so a
        # batched pair's answer would depend on its neighbours; measured on a 6,000-paper week
        # (bench/week_speed.py), batches of 8 changed 11-16 of 2,223 labels and saved no CPU.
        logits = np.concatenate(
            [self.session.run(["logits"], pad_batch([(e.ids, e.types)]))[0] for e in encoded]
        )
        return sentences, self.config.probabilities(logits), encoded

    def judge(
        self, paper: PaperText, claims: list[ClaimText], recorder: Recorder | None = None
    ) -> list[Judgement]:
        if not claims:
            return []
        sentences, probs, encoded = self._run(paper, claims)
        out = []
        for claim, row, pair in zip(claims, probs, encoded, strict=True):
            decision = decide_stance(row, self.config)
            sentence = sentences[pair.best].text if pair.best >= 0 else ""
            evidence = sentence if decision.label != "UNRELATED" else ""
            out.append(
                Judgement(
                    claim_id=claim.id,
                    label=decision.label,
                    confidence=round(decision.confidence, 4),
                    rationale=self.rationale(sentences, pair, row, decision),
                    evidence=evidence,
                    abstained=decision.abstained,
                )
            )
        return out

    def rationale(
        self, sentences: Sequence[Sentence], pair: Encoded, probs: np.ndarray, decision: Decision
    ) -> str:
        """In plain words: which sentence the call rests on, the words it shares with the claim, and
        the stance the model reads, if any (no stems, no probabilities, no thresholds)."""
        del probs  # the numbers are the assessment's confidence, not prose
        if pair.best < 0:
            where = "The abstract has no sentence to compare with the claim"
        else:
            text = sentences[pair.best].text
            shared = surface_words(text, pair.shared[:4])
            where = f"Sentence {pair.best + 1} of {len(sentences)} comes closest to the claim"
            if shared:
                where += f", sharing the word{'s' if len(shared) > 1 else ''} {quoted(shared)}"
            else:
                where += "; it shares no key word with it"
            cues = sorted({m.group(0).lower() for m in _CUES.finditer(text)})
            if cues and decision.label != "UNRELATED":
                where += f"; it has words that often carry a stance: {quoted(cues[:4])}"
        verb = {"SUPPORTS": "supporting", "RELAXES": "relaxing", "OVERTURNS": "contradicting"}
        if decision.label == "UNRELATED":
            return f"{where}. The model finds no bearing on the claim."
        if decision.abstained:
            never = self.config.thresholds.get(decision.label, 2.0) > 1.0
            why = (
                "a label it never states: on held-out pairs it was not right often enough at any confidence"
                if never
                else "but not confidently enough to state it"
            )
            return (
                f"{where}. The model relates the paper to the claim without a stance it can state: it "
                f"leans towards {verb[decision.label]} the claim, {why}. For a curator to read."
            )
        return f"{where}. The model reads the paper as {verb[decision.label]} the claim."
