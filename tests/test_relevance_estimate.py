"""monitor.judge.estimate: what each relevance setting would cost an LLM, computed without writing."""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator

import numpy as np
import pytest
from sqlalchemy import func, select

from monitor.judge.estimate import alternatives
from monitor.judge.prompts import load_prompts
from monitor.judge.work import COMPLETION_TOKENS_PER_CLAIM, estimate_judge_units, judge_pricing
from monitor.llm.grouped import GroupedPricing
from monitor.llm.prompts import DEFAULT_PROMPTS_DIR
from monitor.llm.texts import ClaimText, PaperText
from monitor.llm.units import Pair, group_units
from monitor.relevance import select_candidates
from monitor.relevance.reference import claim_cuts
from monitor.relevance.scoring import select_pairs
from monitor.relevance.screen import ScreenPricing, claim_groups, load_screen_prompts, screen_units
from monitor.relevance.select import batch_ceiling, make_scorer
from monitor.relevance.text import load_claims, papers_of
from monitor.store import Store, open_store
from monitor.store.models import Candidate, Embedding, RelevanceMark
from monitor.store.papers import latest_versions
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
        ("hybrid", 0.02, False), ("hybrid", 0.5, False), ("hybrid", 1.0, False), ("all", 1.0, True),
        ("bm25", 0.02, False), ("bm25", 0.5, False), ("bm25", 1.0, False),
    ]  # fmt: skip
    assert [r.in_force for r in rows] == [True] + [False] * 6
    # The LLM screen of every claim reads every pair: 62 papers, four a call, both claims in each.
    every = rows[3]
    assert (every.label, every.papers, every.pairs, every.calls) == ("LLM screen of every claim", 62, 124, 16)
    judged = [r for r in rows if not r.screen]
    for method in ("hybrid", "bm25"):
        pairs = [r.pairs for r in judged if r.method == method]
        assert pairs == sorted(pairs) and pairs[0] >= 1  # a wider cut never selects fewer pairs
    for r in rows:
        assert r.papers <= r.pairs
        assert r.calls >= r.papers if not r.screen else r.calls * 4 >= r.papers  # the screen: 4 papers a call
        if not r.screen:
            assert r.calls == r.pairs  # one claim a call here
            assert r.completion_tokens == COMPLETION_TOKENS_PER_CLAIM * r.pairs
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


# Claims and papers whose prompts vary in length: accents, math, a tag and a zero-width space in the
# text (the `untrusted` filter rewrites them), titles and abstracts of different sizes.
CLAIMS = [
    SPARSITY,
    CALIBRATION,
    "Speech recognition benchmarks overstate accuracy on accented speech (naïve test sets)",
    "Protein folding models generalise poorly to orphan proteins </claim> with few homologues",
    "Weather prediction with learned models beats numerical models beyond ten days",
    "Robot grasping policies trained in simulation transfer to real hardware without fine-tuning",
    "Music generation models memorise their training data at scale",
]


def _world(store) -> None:
    for text in CLAIMS:
        add_claim(store, text)
    odd = [
        (
            "Sparse RL updates: a reéxamination",
            "Only a small subnetwork (≈5%) of parameters changes under RL.",
        ),
        ("Calibration after RLHF", "Binary rewards hurt calibration; we restore it <paper> with a new loss."),
        (
            "Accented speech\u200b recognition",
            "Benchmarks of speech recognition on accented speech are naïve.",
        ),
    ]
    add_papers(store, [RELEVANT, UNRELATED, *odd] + [filler(i) for i in range(40)])


def _priced_in_full(store, settings, shares) -> list[tuple[object, ...]]:
    """Each alternative computed the plain way: whole score matrices, every selected pair listed by
    `select_pairs`, grouped with `group_units`, every call rendered and estimated."""
    cfg = settings.relevance_in_force()
    with store.session() as s:
        papers = papers_of(latest_versions(s, None))
        claims = load_claims(s)
    size = cfg.batch_size
    rows = []
    for method in (cfg.method, "bm25"):
        plain = cfg.model_copy(update={"method": method})
        for first, options in ((plain, [(s, False) for s in shares]),):
            scorer = make_scorer(store, settings, claims, first, keep_embeddings=False)
            scores = np.concatenate(
                [scorer.score(papers[i : i + size]) for i in range(0, len(papers), size)], 1
            )
            for share, screen in options:
                cuts = claim_cuts(scorer, share)
                pairs: list[tuple[int, int]] = []
                for i in range(0, len(papers), size):
                    part = scores[:, i : i + size]
                    chosen = select_pairs(
                        part,
                        cuts,
                        np.ones(part.shape, dtype=bool),
                        batch_ceiling(first, share),
                        first.min_score,
                    )
                    pairs += sorted((i + p, c) for c, p, _ in chosen)
                units = group_units(
                    ((papers[p], Pair(claims[c])) for p, c in pairs), settings.judge.claims_per_call
                )
                prompt, completion = estimate_judge_units(units, load_prompts())
                papers_hit = len({p for p, _ in pairs})
                rows.append((method, share, screen, papers_hit, len(pairs), len(units), prompt, completion))
        if method == cfg.method:
            # The LLM screen of every claim (relevance.screen_share = 1): every pair, in claim groups,
            # several papers a call (screen.py's own units), after the first scorer's rows.
            pending = {(p.arxiv_id, p.version): {c.id for c in claims} for p in papers}
            groups = claim_groups(claims, cfg.screen_claims_per_call)
            by_key = {(p.arxiv_id, p.version): p for p in papers}
            units = screen_units(pending, by_key, groups, cfg.screen_papers_per_call)
            prompt, completion, _ = ScreenPricing(load_screen_prompts()).estimate(units)
            every = ("all", 1.0, True, len(papers), len(papers) * len(claims), len(units), prompt, completion)
            rows.append(every)
    return rows


@pytest.fixture
def sqlite_store(sqlite_url: str) -> Iterator[Store]:
    s = open_store(sqlite_url)
    yield s
    s.close()


def test_alternatives_count_what_rendering_every_call_counts(sqlite_store: Store, caplog) -> None:
    """The table prices calls from each paper's and claim's share of a prompt, batch by batch, without
    listing a pair or rendering a call: its figures are those of the plain computation, to the token.
    (SQLite only: the store is only read, and embedding the reference sample's titles takes seconds.)"""
    store = sqlite_store
    _world(store)
    settings = settings_for(method="hybrid", max_share=0.3, batch_size=9)
    settings.judge.claims_per_call = 3
    settings.relevance.screen_claims_per_call = 2
    shares = (0.05, 0.3, 1.0)

    rows = alternatives(store, settings, shares=shares)

    got = [
        (r.method, r.share, r.screen, r.papers, r.pairs, r.calls, r.prompt_tokens, r.completion_tokens)
        for r in rows
    ]
    assert got == _priced_in_full(store, settings, shares)
    assert "do not add up" not in caplog.text  # counted from parts, not by the fallback that renders all
    assert any(r.calls < r.pairs for r in rows)  # some calls carry several claims
    assert len({r.pairs for r in rows}) > 3  # the alternatives differ


def test_grouped_pricing_equals_rendering_and_falls_back_when_a_template_does_not_add_up(
    tmp_path, caplog
) -> None:
    """Pairs priced from parts cost what rendering each call costs; a template of one's own that
    mixes a call's claims (the first claim's text in the heading) is caught and rendered call by call."""
    rng = np.random.default_rng(7)
    papers = [PaperText(f"2601.{i:05d}", 1, *filler(i)) for i in range(30)]
    papers[3] = PaperText(
        "2601.00003", 2, "Naïve ≈ bounds", "An abstract with </abstract> and a\u200bzero-width space."
    )
    claims = [ClaimText(f"c-{i}", text, "~2025" if i % 2 else None) for i, text in enumerate(CLAIMS)]
    # Paper by paper, 2 to 7 claims each, in a shuffled order.
    pairs = [(p, int(c)) for p in range(30) for c in rng.permutation(len(claims))[: rng.integers(2, 8)]]
    paper_index = np.array([p for p, _ in pairs])
    claim_index = np.array([c for _, c in pairs])

    mixed = tmp_path / "prompts"
    shutil.copytree(DEFAULT_PROMPTS_DIR, mixed)
    user = mixed / "judge_user.j2"
    user.write_text("First: {{ claims[0].text }}\n" + user.read_text())

    for folder in (None, mixed):
        pricing = judge_pricing(load_prompts(folder))
        units = group_units(((papers[p], Pair(claims[c])) for p, c in pairs), 3)
        expected = (len(units), *pricing.estimate(units))
        grouped = GroupedPricing(pricing, papers, claims, per_call=3)
        priced = grouped.count(paper_index, claim_index)
        assert (priced.calls, priced.prompt_tokens, priced.completion_tokens) == expected
        assert (priced.papers, priced.pairs) == (30, len(pairs))
        assert grouped.additive == (folder is None)
    assert "do not add up" in caplog.text
