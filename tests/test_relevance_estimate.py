"""monitor.judge.estimate: what each relevance setting would cost an LLM, computed without writing."""

from __future__ import annotations

import math

from sqlalchemy import func, select

from monitor.judge.estimate import alternatives
from monitor.relevance import select_candidates
from monitor.store.models import Candidate, Embedding, RelevanceMark
from tests.test_relevance import (
    CALIBRATION,
    RELEVANT,
    SPARSITY,
    UNRELATED,
    add_claim,
    add_papers,
    filler,
    settings_for,
)


def counts(store) -> tuple[int, int, int]:
    with store.session() as s:
        return tuple(
            s.scalar(select(func.count()).select_from(m)) or 0 for m in (Candidate, RelevanceMark, Embedding)
        )


def test_alternatives_price_each_share_and_write_nothing(store) -> None:
    add_claim(
        store, SPARSITY, title="Does reinforcement learning update only a small fraction of parameters?"
    )
    add_claim(store, CALIBRATION)
    add_papers(store, [RELEVANT, UNRELATED] + [filler(i) for i in range(60)])
    settings = settings_for(method="hybrid", max_share=1.0)
    settings.judge.claims_per_call = 1
    before = counts(store)

    rows = alternatives(store, settings, shares=(0.02, 0.5, 1.0))

    assert counts(store) == before  # no candidate, no mark, no cached embedding
    assert [(r.method, r.share, r.screen) for r in rows] == [
        ("hybrid", 0.02, False), ("hybrid", 0.5, False), ("hybrid", 1.0, False), ("hybrid", 0.2, True),
        ("bm25", 0.02, False), ("bm25", 0.5, False), ("bm25", 1.0, False), ("bm25", 0.2, True),
    ]  # fmt: skip
    assert [r.in_force for r in rows] == [True] + [False] * 7
    judged = [r for r in rows if not r.screen]
    for method in ("hybrid", "bm25"):
        pairs = [r.pairs for r in judged if r.method == method]
        assert pairs == sorted(pairs) and pairs[0] >= 1  # a wider cut never selects fewer pairs
    for r in rows:
        assert r.papers <= r.pairs and r.calls >= r.papers
        if not r.screen:
            assert r.calls == r.pairs  # one claim a call here
            assert r.completion_tokens == 120 * r.pairs
        expected = (r.prompt_tokens * 0.15 + r.completion_tokens * 0.60) / 1e6
        assert math.isclose(r.cost, expected)
    # The estimate of the setting in force counts the pairs the stage then selects.
    summary = select_candidates(store, settings)
    assert summary.candidates_added == rows[0].pairs


def test_claims_per_call_groups_a_papers_pairs(store) -> None:
    add_claim(store, SPARSITY)
    add_claim(store, CALIBRATION)
    add_papers(store, [RELEVANT, UNRELATED, filler(1)])
    settings = settings_for(min_score=-1.0, max_share=1.0)
    settings.judge.claims_per_call = 4
    (row,) = alternatives(store, settings, shares=(1.0,), methods=("bm25",))[:1]
    assert (row.papers, row.pairs, row.calls) == (3, 6, 3)  # every pair, two claims a call
    assert alternatives(store, settings, shares=(1.0,), methods=("bm25",))[0] == row  # deterministic
