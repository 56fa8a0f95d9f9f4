"""What each relevance setting would send to an LLM: `monitor judge --dry-run`'s table of alternatives.

It lives with the judge, not in relevance, because it prices the judge's calls (imports go one way:
the judge reads relevance, never the reverse).

For the store's papers (each paper's latest version) and its active claims, every alternative is
scored the way `select_candidates` scores (learned per-claim cuts, the per-batch ceiling), and the
pairs it would select are grouped into calls and priced as the judge's own estimates price them
(`estimate_judge_units`, `token_cost`) and, for the LLM screen, its prompts. Nothing is written: no
candidate, no mark, no cached embedding.

A week of a large library is millions of pairs, so nothing is kept per pair or rendered per call.
The papers are read batch by batch, as the stage reads them: each batch is tokenised and scored by
BM25 once for every alternative (the scorers share their queries), scored by each method and gate once
for every share, and each share's pairs are only counted (a paper's calls never span two batches).
Each paper's and claim's title vector is embedded at most once for all scorers, and each scorer
scores the reference sample once for all its shares. Prompts are priced from their parts
(monitor/llm/grouped.py): each abstract is rendered once, and the figures are those of rendering
every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from monitor.config import RelevanceSettings, Settings
from monitor.judge.prompts import load_prompts
from monitor.judge.second_look import LookRate, by_batch, expected_second_looks, priced_sample
from monitor.judge.work import COMPLETION_TOKENS_PER_CLAIM, judge_pricing
from monitor.llm.cost import cached_prefix, estimate_tokens, token_cost
from monitor.llm.grouped import GroupedPricing, Priced
from monitor.llm.texts import ClaimText, PaperText
from monitor.llm.units import WorkUnit, grouped_prompt_tokens
from monitor.relevance.bm25 import tokenize
from monitor.relevance.reference import share_cuts
from monitor.relevance.scoring import RelevanceScorer, selection
from monitor.relevance.screen import ScreenCounter, load_screen_prompts
from monitor.relevance.select import batch_ceiling, make_scorer
from monitor.relevance.text import load_claims, paper_text, papers_of
from monitor.store import Store
from monitor.store.papers import latest_versions

SHARES = (0.02, 0.05, 0.10, 0.20)


@dataclass(frozen=True)
class ShippedKeep:
    """What the LLM screen keeps of the pairs it reads (`share`), until a store has screened enough of
    its own (`SCREEN_TALLY_MIN` answers), how many kept pairs a judge call carries (`per_call`: a
    paper's kept claims share its call, four a call), and the second looks they need (`looks`: the
    share of them read again, and how many a call carries)."""

    share: float
    per_call: float
    looks: LookRate


# Measured on a random 200 papers of the sample's last week, a whole real week of cs.CL/cs.LG/cs.AI,
# the teacher screening, judging and looking again (docs/relevance.md): with the second reading
# (relevance.screen_recheck) 122 of 7,000 pairs kept, in 46 judge calls, 55 second looks in 29 calls; of
# them the first reading's 74, in 38 calls, 48 second looks (its extra pairs are mostly plainly
# UNRELATED), their calls not counted: priced as one look a call, an upper bound.
SHIPPED_KEEP = {
    True: ShippedKeep(0.0174, 2.65, LookRate(55 / 122, 55 / 29)),
    False: ShippedKeep(0.0106, 1.95, LookRate(48 / 74, 1.0)),
}
SCREEN_TALLY_MIN = 2000


def shipped_keep(settings: Settings) -> ShippedKeep:
    return SHIPPED_KEEP[settings.relevance.screen_recheck]


@dataclass(frozen=True)
class AfterScreen:
    """What judging the pairs the screen is expected to keep would cost (a dry run's estimate)."""

    keep_share: float
    measured: bool  # the keep share is this store's own, not the shipped figure
    pairs: int
    judge_calls: int
    second_looks: int
    second_look_calls: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    judge_cost: float  # the first readings: at Batch API rates with `batch`
    second_look_cost: float  # the second readings: at Batch API rates when they go by batch too
    batch: bool = False
    second_look_batch: bool = False  # the second readings go by batch (`judge.second_look_batch`)

    @property
    def cost(self) -> float:
        return self.judge_cost + self.second_look_cost

    def as_dict(self) -> dict[str, object]:
        money = {name: round(getattr(self, name), 4) for name in ("judge_cost", "second_look_cost", "cost")}
        return {**asdict(self), **money}


def after_screen(
    store: Store, settings: Settings, units: Sequence[WorkUnit], batch: bool | None = None
) -> AfterScreen:
    """Judging (and second looks for) the share of the pairs waiting for the screen (`units`, as
    `pending_screen_units` gives them) the screen is expected to keep (this store's own share once it has
    screened enough, else the shipped one), priced from prompts rendered for a sample of those pairs; the
    first readings at Batch API rates with `batch` (None: as `llm.batch` says)."""
    from monitor.store.candidates import screen_tally

    with store.session() as session:
        kept, dropped = screen_tally(session)
    measured = kept + dropped >= SCREEN_TALLY_MIN
    share = kept / (kept + dropped) if measured else shipped_keep(settings).share
    sample = [(s.paper, p.claim) for u in units for s in u.sections for p in s.pairs]
    return price_kept(settings, len(sample), share, sample, measured, batch)


def price_kept(
    settings: Settings,
    screen_pairs: int,
    share: float,
    sample: Sequence[tuple[PaperText, ClaimText]],
    measured: bool = False,
    batch: bool | None = None,
    looks: LookRate | None = None,
) -> AfterScreen:
    """`after_screen` from its parts: judging `share` of `screen_pairs`, `shipped_keep`'s pairs a call,
    and the second looks `judge.second_look` gives them (`expected_second_looks`, at `shipped_keep`'s
    rate of them, or `looks`), priced from the prompts of (up to SAMPLED_PAIRS of) `sample`'s
    pairs, cached system prompts counted. With `batch` (None: as `llm.batch` says) the first readings are
    at Batch API rates, and the second looks too where they go by batch (`judge.second_look_batch`,
    judge/batch.py)."""
    pairs = round(screen_pairs * share)
    prompts = load_prompts(settings.judge.prompts_dir)
    sample = priced_sample(sample)
    batch = settings.llm.batch if batch is None else batch
    if not sample or not pairs:
        nothing = (0, 0, 0, 0, 0, 0, 0.0, 0.0)  # calls, looks, their calls, tokens, costs
        return AfterScreen(share, measured, pairs, *nothing, batch, by_batch(settings, batch))
    shipped = shipped_keep(settings)
    second = expected_second_looks(settings, pairs, sample, by_batch(settings, batch), looks or shipped.looks)
    system = estimate_tokens(prompts.system())
    # A call: the system prompt, the paper once and its claims.
    one = sum(estimate_tokens(prompts.user(paper, [claim])) for paper, claim in sample) / len(sample)
    two = sum(estimate_tokens(prompts.user(paper, [claim, claim])) for paper, claim in sample) / len(sample)
    per_call = min(shipped.per_call, settings.judge.claims_per_call)
    calls, judge_prompt = grouped_prompt_tokens(pairs, per_call, system + one, system + two)
    judge_cached = max(0, calls - 1) * cached_prefix(system)
    judge_completion = pairs * COMPLETION_TOKENS_PER_CLAIM
    return AfterScreen(
        share,
        measured,
        pairs,
        calls,
        second.looks,
        second.calls,
        judge_prompt + second.prompt_tokens,
        judge_cached + second.cached_tokens,
        judge_completion + second.completion_tokens,
        judge_cost=token_cost(settings, judge_prompt, judge_completion, batch, judge_cached),
        second_look_cost=second.cost,
        batch=batch,
        second_look_batch=second.batch,
    )


@dataclass(frozen=True)
class Alternative:
    """One relevance setting and what its LLM calls would cost over the papers counted."""

    method: str
    share: float
    screen: bool  # an LLM screen's calls over this first cut (judging what it keeps comes on top)
    in_force: bool  # the setting the next run uses
    papers: int  # papers with at least one selected pair
    pairs: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float  # USD at the [llm] rates (cached prompt tokens at theirs)
    cached_tokens: int = 0

    @property
    def label(self) -> str:
        if self.screen and self.share >= 1.0:
            return "LLM screen of every claim"
        return f"{self.method} {self.share:.0%}" + (" + LLM screen" if self.screen else "")

    def as_dict(self) -> dict[str, object]:
        return {"setting": self.label, **asdict(self), "cost": round(self.cost, 4)}


def _latest_papers(store: Store, days: int | None) -> list[PaperText]:
    """Each paper's latest version; with `days`, only papers published in the last `days` days before
    the newest one (a week's volume prices in seconds where the whole store would take minutes)."""
    with store.session() as session:
        return papers_of(latest_versions(session, days))


@dataclass
class _Cut:
    """One alternative being counted: a share of one scorer's scores, judged or screened."""

    method: str
    share: float
    screen: bool
    cfg: RelevanceSettings  # the scorer's settings: its ceiling and min_score
    cuts: np.ndarray
    priced: Priced = field(default_factory=Priced)

    def add(self, scores: np.ndarray, start: int, pricing: GroupedPricing | ScreenCounter) -> None:
        """Count the pairs this cut selects in one batch of papers (the first at `start`)."""
        every = self.screen and self.share >= 1.0  # the screen with no first cut: every pair
        chosen = selection(
            scores,
            np.full(len(self.cuts), -np.inf) if every else self.cuts,
            np.ones(scores.shape, dtype=bool),
            1.0 if every else batch_ceiling(self.cfg, self.share),
            -np.inf if every else self.cfg.min_score,
        )
        if isinstance(pricing, ScreenCounter):
            self.priced += pricing.count(chosen, start)
            return
        papers, claims = np.nonzero(chosen.T)  # paper by paper, each paper's claims in order
        self.priced += pricing.count(papers + start, claims)


@dataclass
class _Scorer:
    scorer: RelevanceScorer
    cuts: list[_Cut]


def alternatives(
    store: Store,
    settings: Settings,
    shares: Sequence[float] = SHARES,
    methods: Sequence[str] | None = None,
    days: int | None = None,
) -> list[Alternative]:
    """The LLM cost of each (method, share) and of the LLM screen over the store's papers and active claims.

    `methods` defaults to the method in force and plain BM25 (which needs no embedding model); `days`
    limits the papers to those published in the last `days` days of the store.
    """
    cfg = settings.relevance_in_force()
    papers = _latest_papers(store, days)
    with store.session() as session:
        claims = load_claims(session)
    if not papers or not claims:
        return []
    # The papers and claims scored are the ones priced, as the judge's and the screen's prompts read them.
    pricing = judge_pricing(load_prompts(settings.judge.prompts_dir))
    judged = GroupedPricing(pricing, papers, claims, settings.judge.claims_per_call)
    screened = ScreenCounter(
        load_screen_prompts(settings.judge.prompts_dir),
        papers,
        claims,
        cfg.screen_claims_per_call,
        cfg.screen_papers_per_call,
    )
    scorers = _scorers(store, settings, cfg, claims, shares, methods)
    for start in range(0, len(papers), cfg.batch_size):
        part = papers[start : start + cfg.batch_size]
        tokens = tokenize([paper_text(p.title, p.abstract) for p in part])
        lexical: dict[tuple[str, ...], np.ndarray] = {}  # BM25 by queries: the same for every scorer here
        for each in scorers:
            words = tuple(each.scorer.queries)
            if words not in lexical:
                lexical[words] = each.scorer.lexical(tokens)
            scores = each.scorer.score(part, lexical=lexical[words])
            for cut in each.cuts:
                cut.add(scores, start, screened if cut.screen else judged)
    for each in scorers:  # the screen's last, shorter calls of each group
        for cut in each.cuts:
            if cut.screen:
                cut.priced += screened.flush()
    return [
        Alternative(
            method=cut.method,
            share=cut.share,
            screen=cut.screen,
            in_force=(cut.method, cut.share, cut.screen) == _in_force(cfg),
            papers=cut.priced.papers,
            pairs=cut.priced.pairs,
            calls=cut.priced.calls,
            prompt_tokens=cut.priced.prompt_tokens,
            completion_tokens=cut.priced.completion_tokens,
            cost=token_cost(
                settings,
                cut.priced.prompt_tokens,
                cut.priced.completion_tokens,
                cached_tokens=cut.priced.cached_tokens,
            ),
            cached_tokens=cut.priced.cached_tokens,
        )
        for each in scorers
        for cut in each.cuts
    ]


def _scorers(
    store: Store,
    settings: Settings,
    cfg: RelevanceSettings,
    claims: Sequence[ClaimText],
    shares: Sequence[float],
    methods: Sequence[str] | None,
) -> list[_Scorer]:
    """Per method, its scorer with each share's cuts, then the screen's wider first cut (its own gate,
    as select_candidates embeds titles behind it)."""
    seen: dict[str, np.ndarray] = {}  # title vectors: embedded (or read from the store) once for all
    scorers: list[_Scorer] = []
    every = cfg.screen_share >= 1.0  # the screen reads every pair: no first cut, any scorer's batch will do
    names = list(methods or dict.fromkeys((cfg.method, "bm25")))
    for method in names:
        plain = cfg.model_copy(update={"method": method})
        wide = plain.model_copy(update={"embed_gate": cfg.screen_embed_gate})
        passes = [(plain, [(s, False) for s in shares])]
        if not every:
            passes.append((wide, [(cfg.screen_share, True)]))
        for first, options in passes:
            scorer = make_scorer(store, settings, claims, first, keep_embeddings=False, seen=seen)
            learned = share_cuts(scorer, [share for share, _ in options], cfg.cut)
            cuts = [_Cut(method, share, screen, first, learned[share]) for share, screen in options]
            scorers.append(_Scorer(scorer, cuts))
    if every:  # counted once, on the first scorer's batches: its cut is no cut
        first_cfg = cfg.model_copy(update={"method": names[0]})
        scorers[0].cuts.append(_Cut("all", 1.0, True, first_cfg, np.zeros(len(claims), np.float32)))
    return scorers


def _in_force(cfg: RelevanceSettings) -> tuple[str, float, bool]:
    screening = cfg.screen == "llm"
    return cfg.method, cfg.screen_share if screening else cfg.share, screening
