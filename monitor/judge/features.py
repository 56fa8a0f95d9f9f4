"""The cues the embedded judge reads off a (claim, paper) pair, and the feature vector built from them.

Everything here is cheap arithmetic over sentence embeddings and word lists: which abstract sentence
best matches the claim, how closely, and whether it negates or reverses what the claim says. The word
lists are deliberately small and general (they must carry from biomedicine, where the model is
trained, to machine-learning papers, where it is used).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from monitor.judge.sentences import Sentence

_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d+(?:\.\d+)?")

NEGATIONS = frozenset(
    [
        "no",
        "not",
        "never",
        "none",
        "nor",
        "neither",
        "cannot",
        "without",
        "lack",
        "lacks",
        "lacking",
        "lacked",
        "absent",
        "absence",
        "fail",
        "fails",
        "failed",
        "unable",
        "unaffected",
        "unchanged",
        "insufficient",
    ]
)
# Prefixes of words that say a quantity or effect goes up, or down.
UP_STEMS = (
    "increas",
    "higher",
    "elevat",
    "enhanc",
    "promot",
    "induc",
    "activat",
    "upregulat",
    "up-regulat",
    "greater",
    "rais",
    "improv",
    "gain",
    "accelerat",
    "stimulat",
    "augment",
    "amplif",
    "boost",
    "more ",
    "exceed",
    "outperform",
    "expand",
    "strengthen",
    "rise",
    "rises",
    "rose",
)
DOWN_STEMS = (
    "decreas",
    "reduc",
    "lower",
    "inhibit",
    "suppress",
    "impair",
    "downregulat",
    "down-regulat",
    "attenuat",
    "declin",
    "loss",
    "diminish",
    "less",
    "fewer",
    "prevent",
    "block",
    "worse",
    "degrad",
    "shrink",
    "limit",
    "weaken",
    "collaps",
    "narrow",
    "compress",
    "hurt",
    "harm",
    "drop",
)
HEDGES = frozenset(
    [
        "may",
        "might",
        "could",
        "possibly",
        "possible",
        "suggest",
        "suggests",
        "suggested",
        "potential",
        "potentially",
    ]
)
CONTRASTS = ("however", "in contrast", "contrary", "unexpectedly", "surprisingly", "whereas", "but ")
NULL_RESULTS = (
    "no significant",
    "not significant",
    "no difference",
    "no effect",
    "no association",
    "not associated",
    "did not",
    "does not",
    "do not",
    "was not",
    "were not",
    "no evidence",
    "no change",
    "no increase",
    "no decrease",
    "no correlation",
    "not correlated",
    "similar",
    "comparable",
    "unaffected",
    "unchanged",
)
# Language that loosens a limitation without denying it: the RELAXES cue. Kept narrow: broad words
# ("prevent", "maintain", "improve") are everyday vocabulary in biomedical and ML abstracts alike.
MITIGATIONS = (
    "mitigat",
    "alleviat",
    "overcom",
    "remed",
    "counteract",
    "circumvent",
    "to address",
    "address this",
    "address the",
    "addresses the",
    "break",
    "unlock",
    "bottleneck",
    "partially",
    "partly",
    "only when",
    "only if",
    "under certain",
    "under specific",
    "expand",
    "relax",
    "loosen",
    "without sacrific",
)
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "and",
        "or",
        "with",
        "by",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "their",
        "there",
        "which",
        "who",
        "whom",
        "whose",
        "than",
        "then",
        "into",
        "onto",
        "over",
        "under",
        "between",
        "within",
        "via",
        "per",
        "each",
        "both",
        "can",
        "will",
        "would",
        "should",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "we",
        "our",
        "us",
        "they",
        "them",
        "also",
        "such",
        "more",
        "most",
        "less",
        "least",
    ]
)

FEATURE_NAMES: tuple[str, ...] = (
    "cos_best",
    "cos_second",
    "cos_title",
    "cos_abstract",
    "cos_peak",
    "overlap_abstract",
    "overlap_best",
    "claim_negated",
    "best_negated",
    "top_negated",
    "negation_mismatch",
    "direction_claim",
    "direction_mismatch",
    "direction_match",
    "hedge_best",
    "contrast_top",
    "null_top",
    "number_match",
    "claim_negated_only",
    "direction_mismatch_top",
    "cos_x_negation_mismatch",
    "cos_x_direction_mismatch",
    "cos_x_null_top",
    "cos_x_claim_negated",
    "mitigation",
    "claim_polar_word_absent",
    "cos_x_polar_word_absent",
)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


# Memoised: the same abstract and claim words are stemmed for every pair a paper takes part in.
@lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "ly", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


@lru_cache(maxsize=1024)
def content_stems(text: str) -> frozenset[str]:
    return frozenset({_stem(w) for w in words(text) if w not in STOPWORDS and len(w) > 2})


def is_negated(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("n't") for w in words(text))


def direction(text: str) -> int:
    """+1 when the text speaks of something going up, -1 down, 0 neither or both."""
    lowered = " " + text.lower() + " "
    up = sum(lowered.count(" " + stem) for stem in UP_STEMS)
    down = sum(lowered.count(" " + stem) for stem in DOWN_STEMS)
    return (up > down) - (down > up)


def polar_words(text: str) -> set[str]:
    """Negations and up/down words, stemmed: the words a contradicting claim swaps in."""
    out = set()
    for word in words(text):
        if word in NEGATIONS or word.endswith("n't") or word.startswith(UP_STEMS + DOWN_STEMS):
            out.add(_stem(word))
    return out


def _has_any(text: str, phrases: tuple[str, ...]) -> bool:
    lowered = " " + text.lower() + " "
    return any(phrase in lowered for phrase in phrases)


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\d+(?:\.\d+)?", text))


@dataclass
class Cues:
    """What the judge saw: the best-matching sentence and the signals that decided the label."""

    best_index: int
    cos_best: float
    cos_title: float
    claim_negated: bool
    best_negated: bool
    direction_claim: int
    direction_best: int
    null_top: bool
    hedge_best: bool
    mitigation: bool
    top_indices: list[int]
    mitigation_index: int  # the claim-closest sentence with mitigating language, -1 when none


def extract(
    claim_parts: list[str],
    claim_vecs: np.ndarray,
    sentences: list[Sentence],
    title_vec: np.ndarray,
    sentence_vecs: np.ndarray,
    abstract: str,
) -> tuple[np.ndarray, Cues]:
    """The feature vector (in FEATURE_NAMES order) and the cues behind it, for one claim and one paper.

    `claim_parts` is the whole claim followed by its sentences when it has several (`claim_vecs` holds
    their embeddings in the same order): a long claim matches a paper through its closest sentence, and
    the polarity cues are read from that part.
    """
    claim = claim_parts[0]
    if sentences:
        part_sims = sentence_vecs @ claim_vecs.T  # (sentences, parts)
        sims = part_sims.max(axis=1)
        order = np.argsort(-sims, kind="stable")
        best = int(order[0])
        claim = claim_parts[int(np.argmax(part_sims[best]))]
        cos_best = float(sims[best])
        cos_second = float(sims[order[1]]) if len(order) > 1 else cos_best
        centroid = sentence_vecs.mean(axis=0)
        norm = float(np.linalg.norm(centroid))
        cos_abstract = float((claim_vecs @ centroid).max() / norm) if norm > 0 else 0.0
        cos_peak = cos_best - float(sims.mean())
        top = [int(i) for i in order[:3]]
        best_text = sentences[best].text
    else:
        best, cos_best, cos_second, cos_abstract, cos_peak, top, best_text = 0, 0.0, 0.0, 0.0, 0.0, [], ""
    top_text = " ".join(sentences[i].text for i in top)
    cos_title = float((claim_vecs @ title_vec).max())

    claim_stems = content_stems(claim)
    overlap_abstract = len(claim_stems & content_stems(abstract)) / max(len(claim_stems), 1)
    overlap_best = len(claim_stems & content_stems(best_text)) / max(len(claim_stems), 1)

    claim_negated = is_negated(claim)
    best_negated = is_negated(best_text)
    top_negated = is_negated(top_text)
    dir_claim = direction(claim)
    dir_best = direction(best_text)
    dir_mismatch = dir_claim * dir_best < 0
    dir_match = dir_claim * dir_best > 0
    null_top = _has_any(top_text, NULL_RESULTS)
    hedge_best = bool(HEDGES & set(words(best_text)))
    contrast_top = _has_any(top_text, CONTRASTS)
    mitigation = _has_any(abstract, MITIGATIONS)
    mitigating = [int(i) for i in order if _has_any(sentences[int(i)].text, MITIGATIONS)] if sentences else []
    claim_numbers = _numbers(claim)
    number_match = bool(claim_numbers & _numbers(abstract))
    negation_mismatch = claim_negated != best_negated
    # A polarity word of the claim that the abstract never uses: typical of a claim that inverts it.
    abstract_stems = {_stem(w) for w in words(abstract)}
    polar_absent = bool(polar_words(claim) - abstract_stems)

    vector = np.array(
        [
            cos_best,
            cos_second,
            cos_title,
            cos_abstract,
            cos_peak,
            overlap_abstract,
            overlap_best,
            claim_negated,
            best_negated,
            top_negated,
            negation_mismatch,
            dir_claim,
            dir_mismatch,
            dir_match,
            hedge_best,
            contrast_top,
            null_top,
            number_match,
            claim_negated and not top_negated,
            dir_claim * direction(top_text) < 0,
            cos_best * negation_mismatch,
            cos_best * dir_mismatch,
            cos_best * null_top,
            cos_best * claim_negated,
            mitigation,
            polar_absent,
            cos_best * polar_absent,
        ],
        dtype=np.float64,
    )
    cues = Cues(
        best_index=best,
        cos_best=cos_best,
        cos_title=cos_title,
        claim_negated=claim_negated,
        best_negated=best_negated,
        direction_claim=dir_claim,
        direction_best=dir_best,
        null_top=null_top,
        hedge_best=hedge_best,
        mitigation=mitigation,
        top_indices=top,
        mitigation_index=mitigating[0] if mitigating else -1,
    )
    return vector, cues
