"""The judge interface: one small class every provider implements.

A provider sees a paper (untrusted text) and one or more claims and returns one `Judgement` per claim.
It does not touch the store: caching, evidence grounding, persistence and budgets live in the runner.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Label = Literal["SUPPORTS", "RELAXES", "OVERTURNS", "UNRELATED"]
LABELS: tuple[Label, ...] = ("SUPPORTS", "RELAXES", "OVERTURNS", "UNRELATED")


@dataclass(frozen=True)
class PaperText:
    """The parts of a paper version a judge may read."""

    arxiv_id: str
    version: int
    title: str
    abstract: str
    published: str | None = None  # ISO date the paper appeared, shown to LLM judges beside the claim's date


@dataclass(frozen=True)
class ClaimText:
    """A claim as the judge sees it: its stable id, its text and the date it was made."""

    id: str
    text: str
    date_text: str | None = None


@dataclass
class Judgement:
    """A provider's answer for one (paper, claim) pair, before grounding."""

    claim_id: str
    label: Label
    confidence: float
    rationale: str
    evidence: str
    exchange_id: int | None = None
    # The embedded judge's "related, stance unclear": the label is its best guess, withheld from
    # verdicts and kept for review, because its measured precision at this confidence is too low.
    abstained: bool = False


@dataclass
class Exchange:
    """One request to a model and its outcome, handed to the recorder for the llm_exchanges table."""

    provider: str
    model: str
    prompt_version: str
    request: dict[str, Any]
    response: str | None = None
    response_format: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# The recorder stores an Exchange and returns its row id (or None when nothing is stored).
Recorder = Callable[[Exchange], int | None]


class Judge(abc.ABC):
    """A stance judge. `name`, `model` and `prompt_version` are part of every assessment's cache key."""

    name: str
    model: str
    prompt_version: str
    # How many claims of one paper the provider prefers to see in one call.
    claims_per_call: int = 1

    @abc.abstractmethod
    def judge(
        self, paper: PaperText, claims: list[ClaimText], recorder: Recorder | None = None
    ) -> list[Judgement]:
        """Label each claim against the paper. Raises JudgeError when no valid answer can be had."""
