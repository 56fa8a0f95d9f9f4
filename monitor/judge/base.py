"""The judge interface: one small class every provider implements.

A provider sees a paper (untrusted text) and one or more claims and returns one `Judgement` per claim.
It does not touch the store: caching, evidence grounding, persistence and budgets live in the runner.
What a judge reads (PaperText, ClaimText) and records (Exchange) are the LLM layer's (monitor/llm/texts.py).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from monitor.llm.texts import ClaimText, PaperText, Recorder

if TYPE_CHECKING:
    from monitor.judge.prompts import JudgePrompts

Label = Literal["SUPPORTS", "RELAXES", "OVERTURNS", "UNRELATED"]
LABELS: tuple[Label, ...] = ("SUPPORTS", "RELAXES", "OVERTURNS", "UNRELATED")
# How much a finding can carry (prompts/judge_system.j2): the claim's own quantity in its setting, a
# neighbouring setting or proxy, or a design that cannot carry much; "none" for UNRELATED.
Strength = Literal["direct", "indirect", "weak", "none"]
STRENGTHS: tuple[Strength, ...] = ("direct", "indirect", "weak", "none")


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
    # direct | indirect | weak | none (LLM judges); "" where a judge does not say (the embedded one)
    strength: str = ""


class Judge(abc.ABC):
    """A stance judge. `name`, `model` and `prompt_version` are part of every assessment's cache key."""

    name: str
    model: str
    prompt_version: str
    # Capabilities, declared here and overridden by a provider that has them (the runner never probes).
    claims_per_call: int = 1  # claims of one paper the provider prefers to see in one call
    max_concurrency: int = 1  # calls the runner may have in flight at once
    supports_batch: bool = False  # can take `monitor judge --batch` (the OpenAI Batch API)
    billed: bool = False  # its tokens cost money at the judge's configured rates
    # Its labels get a second, closer reading before they count (judge/second_look.py): an LLM's do; the
    # embedded judge's stances wait for a curator instead.
    second_look: bool = False
    # Its stances are triage: they rank papers close to a claim, wait for a curator before they move a
    # verdict, and a large library's candidates are read only down to a cut (judge/work.py
    # `triage_cut`). Code that has only a stored row asks `monitor.judge_names.triage_only_judge`.
    triage_only: bool = False
    prompts: JudgePrompts | None = None  # its templates, when it renders any (token estimates use them)

    def prepare(self, papers: list[PaperText]) -> None:
        """A hint that these papers are judged next, so a provider can encode them together."""
        del papers  # most providers have nothing to prepare

    def drain_warnings(self) -> list[str]:
        """What the run should be told about the provider (a lowered concurrency), once each."""
        return []

    @abc.abstractmethod
    def judge(
        self, paper: PaperText, claims: list[ClaimText], recorder: Recorder | None = None
    ) -> list[Judgement]:
        """Label each claim against the paper. Raises JudgeError when no valid answer can be had."""
