"""The embedded judge: no network, no key. The default provider when no LLM is configured.

For each claim it finds the abstract sentence closest in meaning (MiniLM embeddings, see
monitor.embeddings), reads negation, direction and null-result cues off it (monitor.judge.features),
and a small multinomial logistic regression trained on SciFact (bench/train_local_judge.py) turns
those into calibrated probabilities of SUPPORTS / OVERTURNS / UNRELATED. RELAXES, absent from
SciFact, comes from limitation-mitigating language in the sentences that bear on the claim.

The evidence is always the best-matching sentence, verbatim. Offline OVERTURNS precision is modest, so
`overturn_threshold` (calibrated in training) says how confident an OVERTURNS must be before the
verdicts stage may act on it without review.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from monitor.config import Settings
from monitor.embeddings import Embedder, get_embedder
from monitor.errors import ConfigError
from monitor.judge.base import ClaimText, Judge, Judgement, Label, PaperText, Recorder
from monitor.judge.features import FEATURE_NAMES, Cues, extract, words
from monitor.judge.sentences import Sentence, split_sentences

WEIGHTS_FILE = "local_judge.json"
PROMPT_VERSION = "features-v1"
_PAPER_CACHE_SIZE = 256
_CLAIM_CACHE_SIZE = 4096  # texts (claims and their sentences); a library holds hundreds


@dataclass
class LocalModel:
    """The trained weights and decision settings, as stored in monitor/data/local_judge.json."""

    classes: list[str]
    feature_names: list[str]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # (classes, features)
    intercept: np.ndarray  # (classes,)
    temperature: float = 1.0
    # argmax of probability times weight picks the label; the weights trade precision for recall.
    decision_weights: dict[str, float] = field(default_factory=dict)
    overturn_threshold: float = 1.0
    relaxes_min_related: float = 1.0  # 1.0 disables RELAXES
    relaxes_confidence: float = 0.5
    # Claims longer than SciFact's (research-library claims run to several sentences) match related
    # papers with lower similarity; their UNRELATED weight is tuned on the domain dev set.
    long_claim_words: int = 1_000_000
    long_claim_unrelated_weight: float = 1.0
    embedding_model: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def untrained(cls, classes: list[str]) -> LocalModel:
        """A model with zero weights: uniform probabilities, for computing features before training."""
        n = len(FEATURE_NAMES)
        return cls(
            classes=list(classes),
            feature_names=list(FEATURE_NAMES),
            mean=np.zeros(n),
            scale=np.ones(n),
            coef=np.zeros((len(classes), n)),
            intercept=np.zeros(len(classes)),
        )

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        """Calibrated class probabilities, one row per feature row."""
        z = (np.atleast_2d(features) - self.mean) / self.scale
        logits = (z @ self.coef.T + self.intercept) / self.temperature
        logits -= logits.max(axis=1, keepdims=True)
        expd = np.exp(logits)
        return expd / expd.sum(axis=1, keepdims=True)

    def adjusted(self, probs: np.ndarray, claim_words: list[int]) -> np.ndarray:
        """Probabilities under the decision priors: each class's probability times its decision weight,
        renormalised (a prior shift, so the result is still a probability). Their argmax is the label."""
        weights = np.tile([self.decision_weights.get(c, 1.0) for c in self.classes], (len(probs), 1))
        unrelated = self.classes.index("UNRELATED")
        for row, n in enumerate(claim_words):
            if n >= self.long_claim_words:
                weights[row, unrelated] *= self.long_claim_unrelated_weight
        shifted = probs * weights
        return shifted / shifted.sum(axis=1, keepdims=True)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": 1,
            "classes": self.classes,
            "feature_names": self.feature_names,
            "mean": _rounded(self.mean),
            "scale": _rounded(self.scale),
            "coef": [_rounded(row) for row in self.coef],
            "intercept": _rounded(self.intercept),
            "temperature": self.temperature,
            "decision_weights": self.decision_weights,
            "overturn_threshold": self.overturn_threshold,
            "relaxes_min_related": self.relaxes_min_related,
            "relaxes_confidence": self.relaxes_confidence,
            "long_claim_words": self.long_claim_words,
            "long_claim_unrelated_weight": self.long_claim_unrelated_weight,
            "embedding_model": self.embedding_model,
            "info": self.info,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LocalModel:
        return cls(
            classes=list(data["classes"]),
            feature_names=list(data["feature_names"]),
            mean=np.asarray(data["mean"], dtype=np.float64),
            scale=np.asarray(data["scale"], dtype=np.float64),
            coef=np.asarray(data["coef"], dtype=np.float64),
            intercept=np.asarray(data["intercept"], dtype=np.float64),
            temperature=float(data.get("temperature", 1.0)),
            decision_weights={k: float(v) for k, v in data.get("decision_weights", {}).items()},
            overturn_threshold=float(data.get("overturn_threshold", 1.0)),
            relaxes_min_related=float(data.get("relaxes_min_related", 1.0)),
            relaxes_confidence=float(data.get("relaxes_confidence", 0.5)),
            long_claim_words=int(data.get("long_claim_words", 1_000_000)),
            long_claim_unrelated_weight=float(data.get("long_claim_unrelated_weight", 1.0)),
            embedding_model=str(data.get("embedding_model", "")),
            info=dict(data.get("info", {})),
        )

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")


def _rounded(values: np.ndarray) -> list[float]:
    return [round(float(v), 6) for v in values]


def load_model(path: Path | None = None) -> tuple[LocalModel, str]:
    """The model and a short hash of its file (part of the judge's cache key)."""
    try:
        raw = (
            path.read_bytes()
            if path
            else resources.files("monitor").joinpath("data", WEIGHTS_FILE).read_bytes()
        )
        model = LocalModel.from_dict(json.loads(raw))
    except (OSError, ValueError, KeyError) as exc:
        where = path or f"monitor/data/{WEIGHTS_FILE}"
        raise ConfigError(
            f"{where}: local judge weights unreadable ({exc}); rebuild with bench/train_local_judge.py"
        ) from None
    if tuple(model.feature_names) != FEATURE_NAMES:
        raise ConfigError(
            "local judge weights were trained on other features; run bench/train_local_judge.py"
        )
    return model, hashlib.sha256(raw).hexdigest()[:10]


@dataclass
class PaperEncoding:
    """A paper's sentences and their embeddings, computed once per paper."""

    sentences: list[Sentence]
    sentence_vecs: np.ndarray
    title_vec: np.ndarray


@dataclass
class PairFeatures:
    """The features and cues of one (claim, paper) pair, with what they were computed from."""

    vector: np.ndarray
    cues: Cues
    paper: PaperEncoding


class LocalJudge(Judge):
    """Embedding-and-cues stance judge; deterministic, offline, a few dozen pairs a second."""

    name = "local"
    prompt_version = PROMPT_VERSION
    # All of a paper's claims in one call: its sentences are matched against every claim at once.
    claims_per_call = 256

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        model: LocalModel | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        # Settings are accepted for the factory's uniform call; the embedded model has nothing to configure.
        del settings
        if model is None:
            self.weights, digest = load_model()
        else:
            self.weights, digest = (
                model,
                hashlib.sha256(json.dumps(model.to_dict()).encode()).hexdigest()[:10],
            )
        self.embedder = embedder or get_embedder()
        self.model = f"{self.embedder.name}+logreg-{digest}"
        self._papers: OrderedDict[str, PaperEncoding] = OrderedDict()
        self._claims: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def overturn_threshold(self) -> float:
        """Confidence above which an offline OVERTURNS reached precision >= 0.8 in cross-validation."""
        return self.weights.overturn_threshold

    def encode_paper(self, title: str, abstract: str) -> PaperEncoding:
        key = _paper_key(title, abstract)
        with self._lock:
            cached = self._papers.get(key)
            if cached is not None:
                self._papers.move_to_end(key)
                return cached
        return self._encode_papers({key: (title, abstract)})[key]

    def prepare(self, papers: list[PaperText]) -> None:
        """Encode several papers' sentences in one embedding call ahead of judging them.

        Batches of 32 sentences across papers run about twice as fast as one paper's nine or so, and
        a text's embedding does not depend on what it is batched with, so judgements are unchanged.
        """
        wanted: dict[str, tuple[str, str]] = {}
        with self._lock:
            for paper in papers[:_PAPER_CACHE_SIZE]:
                key = _paper_key(paper.title, paper.abstract)
                if key not in self._papers:
                    wanted[key] = (paper.title, paper.abstract)
        if wanted:
            self._encode_papers(wanted)

    def _encode_papers(self, papers: dict[str, tuple[str, str]]) -> dict[str, PaperEncoding]:
        split = {key: split_sentences(abstract) for key, (_, abstract) in papers.items()}
        texts: list[str] = []
        for key, (title, _) in papers.items():
            texts.extend([title or " ", *(s.text for s in split[key])])
        vecs = self.embedder.embed(texts)
        out: dict[str, PaperEncoding] = {}
        offset = 0
        for key, sentences in split.items():
            block, offset = vecs[offset : offset + 1 + len(sentences)], offset + 1 + len(sentences)
            out[key] = PaperEncoding(sentences, block[1:], block[0])
        with self._lock:
            for key, encoding in out.items():
                self._papers[key] = encoding
                self._papers.move_to_end(key)
            while len(self._papers) > _PAPER_CACHE_SIZE:
                self._papers.popitem(last=False)
        return out

    def claim_vectors(self, texts: list[str]) -> np.ndarray:
        """Embeddings of claim texts and their sentences; a claim recurs across many papers, so each
        text is embedded once per process."""
        with self._lock:
            known = {t: self._claims[t] for t in texts if t in self._claims}
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            known.update(zip(missing, self.embedder.embed(missing), strict=True))
            with self._lock:
                for text in missing:
                    self._claims[text] = known[text]
                while len(self._claims) > _CLAIM_CACHE_SIZE:
                    self._claims.popitem(last=False)
        if not texts:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.stack([known[t] for t in texts])

    def features(self, paper: PaperText, claims: list[ClaimText]) -> list[PairFeatures]:
        encoding = self.encode_paper(paper.title, paper.abstract)
        parts = [claim_parts(c.text) for c in claims]
        vecs = self.claim_vectors([text for claim in parts for text in claim])
        out, offset = [], 0
        for claim in parts:
            claim_vecs, offset = vecs[offset : offset + len(claim)], offset + len(claim)
            vector, cues = extract(
                claim,
                claim_vecs,
                encoding.sentences,
                encoding.title_vec,
                encoding.sentence_vecs,
                paper.abstract,
            )
            out.append(PairFeatures(vector, cues, encoding))
        return out

    def judge(
        self, paper: PaperText, claims: list[ClaimText], recorder: Recorder | None = None
    ) -> list[Judgement]:
        if not claims:
            return []
        pairs = self.features(paper, claims)
        raw = self.weights.probabilities(np.stack([p.vector for p in pairs]))
        probs = self.weights.adjusted(raw, [len(words(c.text)) for c in claims])
        chosen = np.argmax(probs, axis=1)
        return [
            self._judgement(claim, pair, row, int(pick))
            for claim, pair, row, pick in zip(claims, pairs, probs, chosen, strict=True)
        ]

    def _judgement(self, claim: ClaimText, pair: PairFeatures, probs: np.ndarray, pick: int) -> Judgement:
        classes = self.weights.classes
        label: str = classes[pick]
        confidence = float(probs[pick])
        related = 1.0 - float(probs[classes.index("UNRELATED")])
        cues = pair.cues
        if (
            label in ("SUPPORTS", "OVERTURNS")
            and cues.mitigation
            and related >= self.weights.relaxes_min_related
        ):
            label = "RELAXES"
            confidence = self.weights.relaxes_confidence
        sentences = pair.paper.sentences
        # A RELAXES is shown by the sentence that loosens the claim, when one carries the cue.
        index = cues.best_index
        if label == "RELAXES" and cues.mitigation_index >= 0:
            index = cues.mitigation_index
        evidence = sentences[index].text if sentences else ""
        return Judgement(
            claim_id=claim.id,
            label=_as_label(label),
            confidence=round(confidence, 4),
            rationale=rationale(_as_label(label), cues),
            evidence=evidence,
        )


def _paper_key(title: str, abstract: str) -> str:
    return hashlib.sha256(f"{title}\0{abstract}".encode()).hexdigest()


def claim_parts(text: str) -> list[str]:
    """The claim, then its sentences when it has more than one."""
    sentences = [s.text for s in split_sentences(text)]
    return [text, *sentences] if len(sentences) > 1 else [text]


def _as_label(value: str) -> Label:
    if value not in ("SUPPORTS", "RELAXES", "OVERTURNS", "UNRELATED"):
        raise ValueError(f"unknown label {value!r}")
    return value  # type: ignore[return-value]


_DIRECTION = {1: "an increase", -1: "a decrease", 0: "no direction"}


def rationale(label: Label, cues: Cues) -> str:
    """One templated sentence naming the cues that carried the decision."""
    head = f"best-matching sentence (cos {cues.cos_best:.2f}, title cos {cues.cos_title:.2f})"
    if label == "UNRELATED":
        return f"{head} is not close enough to the claim to bear on it"
    if label == "RELAXES":
        return f"{head} bears on the claim and the paper offers a way to mitigate or narrow it"
    polarity = []
    if cues.claim_negated != cues.best_negated:
        polarity.append("one of claim and sentence is negated, the other is not")
    if cues.direction_claim * cues.direction_best < 0:
        claim_dir, best_dir = _DIRECTION[cues.direction_claim], _DIRECTION[cues.direction_best]
        polarity.append(f"the claim states {claim_dir}, the sentence {best_dir}")
    if cues.null_top:
        polarity.append("the closest sentences report a null result")
    if label == "OVERTURNS":
        reason = "; ".join(polarity) or "its wording departs from the claim"
        return f"{head} contradicts the claim: {reason}"
    if cues.direction_claim * cues.direction_best > 0:
        return f"{head} states the same direction as the claim"
    if polarity:
        return f"{head} agrees with the claim on balance despite cues ({'; '.join(polarity)})"
    return f"{head} agrees with the claim in polarity"
