"""The LLM work of any stage, in units: one call each, over one or more paper versions and claims.

The judge sends a paper with several of its claims in one call (they share the abstract's tokens):
`group_units` is the one place its pairs become calls. The relevance screen sends a group of claims
(the call's stable prefix) and several papers after it: its units hold one section per paper
(monitor/relevance/screen.py). `CallCounts` is what every stage's summary counts of its calls, tokens
and batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from monitor.llm.cost import chars_tokens
from monitor.llm.texts import ClaimText, PaperText


@dataclass
class Pair:
    """One pending (paper version, claim) pair: its claim and the stage's reference to it.

    `ref` is opaque to the engine: what a batch row records of the pair (so an open batch is known to
    carry it) and what the stage's writer finds it again by. Each stage says what it is: the judge's
    assessment cache key, the screen's "<arxiv_id>v<version>/<claim id>" (relevance/screen.py
    `pair_ref`), the second look's assessment id. What an assessment keeps of the claim's wording is
    the claim's own `text_hash`."""

    claim: ClaimText
    ref: str = ""


@dataclass
class Section:
    """One paper version of a call and its pending pairs."""

    paper: PaperText
    pairs: list[Pair]

    @property
    def paper_key(self) -> tuple[str, int]:
        return self.paper.arxiv_id, self.paper.version

    @property
    def label(self) -> str:
        return f"{self.paper.arxiv_id}v{self.paper.version}"


@dataclass
class WorkUnit:
    """One call's worth of work: a paper version and up to a call's number of its pending pairs (the
    judge's), or several papers, each a `Section`, asked about the same claims (the screen's)."""

    sections: list[Section]
    estimated_tokens: int = 0
    cached_tokens: int = 0  # of estimated_tokens, a prompt prefix the provider is expected to have cached

    @classmethod
    def of(cls, paper: PaperText, pairs: list[Pair]) -> WorkUnit:
        return cls([Section(paper, pairs)])

    @property
    def paper(self) -> PaperText:
        """The unit's paper: the first, and for the judge's units the only one."""
        return self.sections[0].paper

    @property
    def pairs(self) -> list[Pair]:
        """Every pair of the call, paper by paper."""
        return [pair for section in self.sections for pair in section.pairs]

    @property
    def claims(self) -> list[ClaimText]:
        """The claims the call asks about: the first section's (every section of a screen unit asks
        about the same claims)."""
        return [p.claim for p in self.sections[0].pairs]

    @property
    def papers(self) -> list[PaperText]:
        return [s.paper for s in self.sections]

    @property
    def paper_key(self) -> tuple[str, int]:
        return self.sections[0].paper_key

    @property
    def label(self) -> str:
        more = len(self.sections) - 1
        return self.sections[0].label + (f"+{more}" if more else "")


def group_units(rows: Iterable[tuple[PaperText, Pair]], per_call: int) -> list[WorkUnit]:
    """Consecutive pairs of one paper version in units of at most `per_call` (rows come paper by paper)."""
    per_call = max(1, per_call)
    units: list[WorkUnit] = []
    for paper, pair in rows:
        last = units[-1] if units else None
        if last is None or last.paper_key != (paper.arxiv_id, paper.version) or len(last.pairs) >= per_call:
            last = WorkUnit.of(paper, [])
            units.append(last)
        last.sections[0].pairs.append(pair)
    return units


def estimate_units(
    units: Iterable[WorkUnit], prompt: Callable[[WorkUnit], int], answer: Callable[[int], int]
) -> tuple[int, int]:
    """Set each unit's estimated tokens, its `prompt` tokens plus `answer(claims)`; returns the
    (prompt, completion) totals: what the token budget reserves and a dry run prices."""
    prompt_total = completion_total = 0
    for unit in units:
        asked, answered = prompt(unit), answer(len(unit.pairs))
        unit.estimated_tokens = asked + answered
        prompt_total, completion_total = prompt_total + asked, completion_total + answered
    return prompt_total, completion_total


def grouped_prompt_tokens(pairs: int, per_call: float, one: float, two: float) -> tuple[int, int]:
    """Calls and prompt tokens of `pairs` grouped about `per_call` a call, from the mean prompt of a call
    carrying one pair (`one`) and of one carrying two (`two`): each call pays the first, each further
    pair what a second adds. A dry run's figure for calls it has rendered only a sample of."""
    calls = max(1, round(pairs / per_call))
    return calls, round(calls * one + (pairs - calls) * (two - one))


@dataclass(frozen=True)
class UnitPricing:
    """How a stage estimates a call before making it: a prompt of `fixed_tokens` plus the tokens of
    `fixed_chars` characters and the text of `user(paper, claims)`, and `answer(claims)` completion
    tokens. `estimate` prices units by rendering each; `monitor/llm/grouped.py` counts the same
    figures from a prompt's parts."""

    user: Callable[[PaperText, list[ClaimText]], str]
    answer: Callable[[int], int]
    fixed_tokens: int = 0
    fixed_chars: int = 0

    def prompt_tokens(self, user_chars: Any) -> Any:
        """The prompt tokens of a call whose `user` text has `user_chars` characters (or an array of them)."""
        return self.fixed_tokens + chars_tokens(self.fixed_chars + user_chars)

    def estimate(self, units: Iterable[WorkUnit]) -> tuple[int, int]:
        """Set each unit's estimated tokens; returns the (prompt, completion) totals (`estimate_units`)."""
        return estimate_units(
            units, lambda u: self.prompt_tokens(len(self.user(u.paper, u.claims))), self.answer
        )


@dataclass(kw_only=True)
class CallCounts:
    """What a stage's run made of calls: requests, tokens, and Batch API batches."""

    calls: int = 0  # requests made, retries and corrective turns included
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, served from the provider's prefix cache (a cheaper rate)
    batches_submitted: int = 0  # Batch API only
    batches_waiting: int = 0
    batches_collected: int = 0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def take_counts(self, recorder: Any) -> None:
        """Copy an ExchangeRecorder's call and token counts (what the stage's calls really cost)."""
        self.calls = recorder.calls
        self.prompt_tokens, self.completion_tokens = recorder.prompt_tokens, recorder.completion_tokens
        self.cached_tokens = recorder.cached_tokens
