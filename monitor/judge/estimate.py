"""What each relevance setting would send to an LLM: `monitor judge --dry-run`'s table of alternatives.

It lives with the judge, not in relevance, because it prices the judge's calls (imports go one way:
the judge reads relevance, never the reverse).

For the store's papers (each paper's latest version) and its active claims, every alternative is
scored the way `select_candidates` scores (learned per-claim cuts, the per-batch ceiling), and the
pairs it would select are grouped into calls (`group_units`) and priced with the judge's own
estimates (`estimate_judge_units`, `token_cost`) and, for the LLM screen, its prompts. Nothing is
written: no candidate, no mark, no cached embedding. Scores do not depend on the share, so each method
scores the papers once and every share is a different cut of the same matrix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from monitor.config import RelevanceSettings, Settings
from monitor.judge.prompts import load_prompts
from monitor.judge.work import estimate_judge_units
from monitor.llm.cost import token_cost
from monitor.llm.texts import ClaimText, PaperText
from monitor.llm.units import Pair, WorkUnit, group_units
from monitor.relevance.reference import claim_cuts
from monitor.relevance.scoring import PaperDoc, select_pairs
from monitor.relevance.screen import estimate_screen_units, load_screen_prompts
from monitor.relevance.select import batch_ceiling, load_claim_queries, make_scorer, paper_docs
from monitor.relevance.text import ClaimQuery
from monitor.store import Store
from monitor.store.claims import claim_date_texts
from monitor.store.papers import latest_versions

SHARES = (0.02, 0.05, 0.10, 0.20)


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
    cost: float  # USD at llm.price_input_per_million / price_output_per_million

    @property
    def label(self) -> str:
        return f"{self.method} {self.share:.0%}" + (" + LLM screen" if self.screen else "")

    def as_dict(self) -> dict[str, object]:
        return {"setting": self.label, **asdict(self), "cost": round(self.cost, 4)}


def _latest_papers(store: Store, days: int | None) -> list[PaperDoc]:
    """Each paper's latest version; with `days`, only papers published in the last `days` days before
    the newest one (a week's volume prices in seconds where the whole store would take minutes)."""
    with store.session() as session:
        return paper_docs(latest_versions(session, days))


def _chosen(
    scores: np.ndarray, cuts: np.ndarray, cfg: RelevanceSettings, share: float
) -> Iterator[tuple[int, list[int]]]:
    """(paper index, claim indices) of each paper with a selected pair, batch by batch as the stage cuts."""
    ceiling = batch_ceiling(cfg, share)
    for start in range(0, scores.shape[1], cfg.batch_size):
        part = scores[:, start : start + cfg.batch_size]
        pairs = select_pairs(part, cuts, np.ones(part.shape, dtype=bool), ceiling, cfg.min_score)
        by_paper: dict[int, list[int]] = {}
        for c, p, _ in pairs:
            by_paper.setdefault(start + p, []).append(c)
        yield from sorted(by_paper.items())


Chosen = list[tuple[int, list[int]]]


def _units(
    papers: Sequence[PaperDoc], claims: Sequence[ClaimText], chosen: Chosen, per_call: int
) -> list[WorkUnit]:
    """The calls of the chosen pairs: each paper's chosen claims, per_call at a time."""
    rows = (
        (
            PaperText(papers[p].arxiv_id, papers[p].version, papers[p].title, papers[p].abstract),
            Pair(claims[c]),
        )
        for p, chosen_claims in chosen
        for c in chosen_claims
    )
    return group_units(rows, per_call)


def _judge_cost(
    settings: Settings, papers: Sequence[PaperDoc], claims: Sequence[ClaimText], chosen: Chosen
) -> tuple[int, int, int]:
    """Calls, prompt and completion tokens of judging the chosen pairs (judge.claims_per_call a call)."""
    units = _units(papers, claims, chosen, settings.judge.claims_per_call)
    return len(units), *estimate_judge_units(units, load_prompts(settings.judge.prompts_dir))


def _screen_cost(
    settings: Settings, papers: Sequence[PaperDoc], claims: Sequence[ClaimText], chosen: Chosen
) -> tuple[int, int, int]:
    """Calls and tokens of screening the chosen pairs, relevance.screen_claims_per_call a call, as the
    screen's own estimate budgets them."""
    units = _units(papers, claims, chosen, settings.relevance.screen_claims_per_call)
    return len(units), *estimate_screen_units(units, load_screen_prompts(settings.judge.prompts_dir))


def _claim_texts(store: Store, queries: Sequence[ClaimQuery]) -> list[ClaimText]:
    with store.session() as session:
        dates = claim_date_texts(session)
    return [ClaimText(id=q.claim_id, text=q.text, date_text=dates.get(q.claim_id)) for q in queries]


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
        queries = load_claim_queries(session)
    if not papers or not queries:
        return []
    claims = _claim_texts(store, queries)
    rows: list[Alternative] = []
    for method in methods or list(dict.fromkeys((cfg.method, "bm25"))):
        plain = cfg.model_copy(update={"method": method})
        # The screen's first cut embeds titles behind its own gate, as select_candidates does.
        wide = plain.model_copy(update={"embed_gate": cfg.screen_embed_gate})
        scores = None
        for first, options in ((plain, [(s, False) for s in shares]), (wide, [(cfg.screen_share, True)])):
            scorer = make_scorer(store, settings, queries, first, keep_embeddings=False)
            if scores is None or first != plain:
                scores = np.concatenate(
                    [scorer.score(part) for part in _batches(papers, cfg.batch_size)], axis=1
                )
            for share, screen in options:
                chosen = list(_chosen(scores, claim_cuts(scorer, share, cfg.cut), first, share))
                cost = _screen_cost if screen else _judge_cost
                calls, prompt, completion = cost(settings, papers, claims, chosen)
                rows.append(
                    Alternative(
                        method=method,
                        share=share,
                        screen=screen,
                        in_force=(method, share, screen) == _in_force(cfg),
                        papers=len(chosen),
                        pairs=sum(len(c) for _, c in chosen),
                        calls=calls,
                        prompt_tokens=prompt,
                        completion_tokens=completion,
                        cost=token_cost(settings, prompt, completion),
                    )
                )
    return rows


def _batches(papers: Sequence[PaperDoc], size: int) -> list[Sequence[PaperDoc]]:
    return [papers[i : i + size] for i in range(0, len(papers), size)]


def _in_force(cfg: RelevanceSettings) -> tuple[str, float, bool]:
    screening = cfg.screen == "llm"
    return cfg.method, cfg.screen_share if screening else cfg.share, screening
