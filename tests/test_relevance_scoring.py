"""Scoring without a store: BM25 with frozen statistics, cuts and caps."""

from __future__ import annotations

import math

import numpy as np
import pytest

from monitor.config import RelevanceSettings
from monitor.errors import ConfigError
from monitor.llm.texts import ClaimText, PaperText
from monitor.relevance.bm25 import BM25Scorer, Lexicon, load_lexicon, tokenize
from monitor.relevance.scoring import RelevanceScorer, select_pairs

CLAIM = ClaimText(
    id="c-1",
    text="RL updates only 5-30% of parameters",
    text_hash="h",
    title="Does reinforcement learning update only a small fraction of parameters?",
    questions=("What breaks when you apply reinforcement learning after supervised fine-tuning?",),
    topics=("sparsity",),
)


def doc(i: int, title: str, abstract: str) -> PaperText:
    return PaperText(f"2601.{i:05d}", 1, title, abstract, row_id=i)


def test_tokenize_stems_and_drops_stop_words() -> None:
    assert tokenize(["The updates of the parameters", ""]) == [["updat", "paramet"], []]


def test_query_text_uses_the_context_asked_for() -> None:
    assert CLAIM.query_text(["title"]) == f"{CLAIM.title} {CLAIM.text}"
    full = CLAIM.query_text(["title", "questions", "topics"])
    assert full.endswith("supervised fine-tuning? sparsity") and CLAIM.text in full
    assert CLAIM.query_text([]) == CLAIM.text


def test_bm25_score_does_not_depend_on_the_batch() -> None:
    scorer = BM25Scorer(load_lexicon())
    query = tokenize(["reinforcement learning parameter updates"])
    target = tokenize(["Reinforcement learning updates few parameters of a language model."])[0]
    others = tokenize([f"Speech recognition benchmark {i} with parameters" for i in range(50)])
    alone = scorer.score(query, [target])[0, 0]
    crowded = scorer.score(query, others + [target])[0, -1]
    assert alone > 0 and alone == pytest.approx(crowded)


def test_rare_words_weigh_more_than_common_ones() -> None:
    lexicon = load_lexicon()
    assert lexicon.n_docs == 22120
    assert tokenize(["model sparsity"]) == [["model", "sparsiti"]]
    assert lexicon.idf("sparsiti") > lexicon.idf("model")
    assert math.isclose(lexicon.idf("never-seen-token"), math.log(1 + (lexicon.n_docs - 0.5) / 1.5))


def test_lexicon_round_trip_and_bad_file(tmp_path) -> None:
    lexicon = Lexicon.build(tokenize(["alpha beta", "beta gamma", "beta"]))
    assert lexicon.df == {"alpha": 1, "beta": 3, "gamma": 1} and lexicon.n_docs == 3
    path = tmp_path / "lex.jsonl.gz"
    lexicon.save(path)
    assert Lexicon.load(path) == lexicon
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(ConfigError, match="bad.jsonl.gz"):
        Lexicon.load(bad)


def test_bm25_scorer_normalises_to_unit_range() -> None:
    scorer = RelevanceScorer(RelevanceSettings(method="bm25"), [CLAIM])
    scores = scorer.score(
        [
            doc(
                1,
                "Reinforcement learning updates small subnetworks",
                "Reinforcement learning fine-tuning updates only a small fraction of parameters, 5-30%.",
            ),
            doc(2, "Traffic forecasting", "A graph network predicts road speed."),
        ]
    )
    assert scores.shape == (1, 2)
    assert 0 < scores[0, 0] <= 1 and scores[0, 1] == 0


def test_repeated_query_words_count_once() -> None:
    # The note title and line questions repeat the line's words; repeats must not outweigh the claim's own.
    once = ClaimText("c-1", "reinforcement learning sparse parameter updates", text_hash="h1")
    repeated = ClaimText(
        "c-2",
        "reinforcement learning sparse parameter updates",
        text_hash="h2",
        title="Reinforcement learning",
        questions=("Why does reinforcement learning work?",),
    )
    scorer = RelevanceScorer(
        RelevanceSettings(method="bm25", query_context=["title", "questions"]), [once, repeated]
    )
    papers = [
        doc(1, "Reinforcement learning for robots", "We train robots with reinforcement learning."),
        doc(2, "Sparse parameter updates", "Fine-tuning touches few parameters."),
    ]
    scores = scorer.score(papers)
    # Same words, each counted once: the question's extra "work" only dilutes, identically for both papers.
    ratio = scores[1] / scores[0]
    assert scores[0, 0] > 0 and scores[0, 1] > 0
    assert ratio[0] == pytest.approx(ratio[1], rel=1e-5)


def test_hybrid_needs_embeddings() -> None:
    with pytest.raises(ValueError):
        RelevanceScorer(RelevanceSettings(method="hybrid"), [CLAIM])


def test_select_pairs_respects_cuts_caps_and_marks() -> None:
    scores = np.array([[0.9, 0.1, 0.5, 0.7, 0.0], [0.2, 0.2, 0.2, 0.2, 0.2]], dtype=np.float32)
    cuts = np.array([0.5, 0.0], dtype=np.float32)
    eligible = np.ones_like(scores, dtype=bool)
    eligible[0, 0] = False  # already scanned for claim 0
    pairs = select_pairs(scores, cuts, eligible, max_share=0.4, min_score=0.0)
    # Claim 0: 0.7 and 0.5 reach its cut (0.9 was scanned before); claim 1: capped at 2 of 5.
    assert [(c, p) for c, p, _ in pairs if c == 0] == [(0, 2), (0, 3)]
    assert len([p for c, p, _ in pairs if c == 1]) == 2
    assert select_pairs(scores, cuts, eligible, 1.0, min_score=0.95) == []


def test_learned_cuts_are_bounded_and_unchanged_by_eviction() -> None:
    """A long-lived process (the daemon) keeps the cuts of at most LEARNED_CUT_SETS_KEPT claim sets; a
    subset of a set's claims reads its cuts, and an evicted set is learned again to the same values."""
    from monitor.relevance import reference

    def scorer(*texts: str) -> RelevanceScorer:
        claims = [ClaimText(f"c{i}", text, text_hash=f"h{i}") for i, text in enumerate(texts)]
        return RelevanceScorer(RelevanceSettings(method="bm25"), claims)

    reference._learned.cache_clear()
    texts = ("sparse attention scales", "reward models overfit", "tokenizers leak")
    first = reference.claim_cuts(scorer(*texts), 0.02)
    assert len(first) == 3 and reference._learned.cache_info().misses == 1
    # The same claims again, another scorer object: read, and a subset is the set's own rows.
    assert reference.claim_cuts(scorer(*texts), 0.02, claims=[2, 0]).tolist() == first[[2, 0]].tolist()
    assert reference._learned.cache_info().hits == 1
    for n in range(reference.LEARNED_CUT_SETS_KEPT):  # as many other claim sets: the first is evicted
        reference.claim_cuts(scorer(f"claim number {n} on retrieval"), 0.02)
    assert reference._learned.cache_info().currsize == reference.LEARNED_CUT_SETS_KEPT
    again = reference.claim_cuts(scorer(*texts), 0.02)
    assert again.tolist() == first.tolist()
    assert reference._learned.cache_info().misses == 2 + reference.LEARNED_CUT_SETS_KEPT
