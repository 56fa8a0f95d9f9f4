"""Calls and tokens of many (paper, claim) pairs, counted from their prompts' parts instead of rendering
every call: what `monitor judge --dry-run` prices for millions of pairs in its table of alternatives.

A call's user prompt is a template rendered over one paper and some of its claims. When the template
renders the paper and each claim on their own (the shipped judge and screen templates do: tags around
the paper, a tag around each claim, the claims' ids joined in a list, their number in the heading), the
prompt's length in characters is a sum of parts: one for the number of claims, one for the paper, one
per claim. Each part is measured once by rendering against a reference paper and claim, so a paper's
abstract is rendered once however many calls carry it, and every call's tokens follow from its length
exactly as `UnitPricing.estimate` computes them from the rendered text: the same figures, not a sample.

A template of one's own need not add up like that (one that prints the first claim's text twice, say).
Every `count` renders a few of its calls in full and compares; on any difference it says so in the log
and renders every call from then on, which is slow but right.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from monitor.llm.texts import ClaimText, PaperText
from monitor.llm.units import Pair, UnitPricing, group_units

log = logging.getLogger(__name__)

# What the parts are measured against: any paper and claim would do, as each part is a difference.
REFERENCE_PAPER = PaperText("0000.00000", 1, "x", "x")
REFERENCE_CLAIM = ClaimText(id="x", text="x")
CHECKED_CALLS = 4  # calls of each `count` rendered in full to check the parts add up


@dataclass
class Priced:
    """What grouping some pairs into calls would send."""

    papers: int = 0  # papers with at least one pair
    pairs: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, a prefix the provider is expected to serve from its cache

    def __iadd__(self, other: Priced) -> Priced:
        self.papers += other.papers
        self.pairs += other.pairs
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        return self


class GroupedPricing:
    """Prices pairs of `papers` and `claims` (indices into them) grouped `per_call` claims a call, as
    `group_units` then `pricing.estimate` would; each part's length is kept for later counts."""

    def __init__(
        self,
        pricing: UnitPricing,
        papers: Sequence[PaperText],
        claims: Sequence[ClaimText],
        per_call: int,
        seed: int = 0,
    ) -> None:
        self.pricing, self.papers, self.claims = pricing, papers, claims
        self.per_call = max(1, per_call)
        self.additive = True  # False once a call rendered in full differed from its parts' sum
        self._rng = np.random.default_rng(seed)  # which calls are checked: the same on every run
        # A prompt of n reference claims; a paper's or a claim's part is its prompt with the reference
        # claim (paper) less that of the reference claim and paper alone.
        self._count_chars = np.array(
            [0] + [self._length(REFERENCE_PAPER, [REFERENCE_CLAIM] * n) for n in range(1, self.per_call + 1)],
            dtype=np.int64,
        )
        self._paper_chars = np.full(len(papers), -1, dtype=np.int64)  # -1: not measured yet
        self._claim_chars = np.full(len(claims), -1, dtype=np.int64)

    def count(self, paper_index: np.ndarray, claim_index: np.ndarray) -> Priced:
        """The calls and tokens of these pairs, in the order `group_units` would take them: paper by
        paper (a paper's pairs consecutive, papers distinct), each paper's claims `per_call` a call."""
        pairs = len(paper_index)
        if not pairs:
            return Priced()
        if not self.additive:
            return self._rendered(paper_index, claim_index)
        paper_starts = np.flatnonzero(np.r_[True, paper_index[1:] != paper_index[:-1]])
        run_lengths = np.diff(np.r_[paper_starts, pairs])
        within = np.arange(pairs) - np.repeat(paper_starts, run_lengths)  # a pair's place in its paper's run
        starts = np.flatnonzero(within % self.per_call == 0)  # each call's first pair
        sizes = np.diff(np.r_[starts, pairs])
        papers = paper_index[starts]
        chars = (
            self._count_chars[sizes]
            + self._parts(self._paper_chars, papers, self._paper_part)
            + np.add.reduceat(self._parts(self._claim_chars, claim_index, self._claim_part), starts)
        )
        if not self._adds_up(papers, claim_index, starts, sizes, chars):
            return self._rendered(paper_index, claim_index)
        answered = np.unique(sizes, return_counts=True)
        return Priced(
            papers=len(paper_starts),
            pairs=pairs,
            calls=len(starts),
            prompt_tokens=int(self.pricing.prompt_tokens(chars).sum()),
            completion_tokens=sum(
                self.pricing.answer(int(n)) * int(k) for n, k in zip(*answered, strict=True)
            ),
        )

    def _length(self, paper: PaperText, claims: list[ClaimText]) -> int:
        return len(self.pricing.user(paper, claims))

    def _paper_part(self, index: int) -> int:
        return self._length(self.papers[index], [REFERENCE_CLAIM]) - int(self._count_chars[1])

    def _claim_part(self, index: int) -> int:
        return self._length(REFERENCE_PAPER, [self.claims[index]]) - int(self._count_chars[1])

    @staticmethod
    def _parts(known: np.ndarray, index: np.ndarray, measure: Callable[[int], int]) -> np.ndarray:
        """`known[index]`, measuring (rendering) the parts not measured yet."""
        for i in np.unique(index[known[index] < 0]):
            known[i] = measure(int(i))
        return known[index]

    def _adds_up(
        self,
        papers: np.ndarray,
        claim_index: np.ndarray,
        starts: np.ndarray,
        sizes: np.ndarray,
        chars: np.ndarray,
    ) -> bool:
        """Render a few calls in full: does each have the length its parts add up to?"""
        for call in self._rng.choice(len(starts), size=min(CHECKED_CALLS, len(starts)), replace=False):
            first = int(starts[call])
            claims = [self.claims[int(c)] for c in claim_index[first : first + int(sizes[call])]]
            if self._length(self.papers[int(papers[call])], claims) != int(chars[call]):
                log.warning(
                    "the prompt templates do not add up by paper and claim: rendering every call to price it"
                )
                self.additive = False
                return False
        return True

    def _rendered(self, paper_index: np.ndarray, claim_index: np.ndarray) -> Priced:
        rows = (
            (self.papers[int(p)], Pair(self.claims[int(c)]))
            for p, c in zip(paper_index, claim_index, strict=True)
        )
        units = group_units(rows, self.per_call)
        prompt, completion = self.pricing.estimate(units)
        return Priced(
            papers=len({u.paper_key for u in units}),
            pairs=len(paper_index),
            calls=len(units),
            prompt_tokens=prompt,
            completion_tokens=completion,
        )
