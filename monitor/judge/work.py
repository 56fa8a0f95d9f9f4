"""The judge's work: pending (paper version, claim) pairs, grouped into calls (monitor/llm/units.py),
and what a run did.

A pair is pending when its candidate row is for the paper's latest version, its claim is active, its
LLM screen (if any) kept it, and no assessment exists under its cache key (see `cache_key`). Parked
pairs are left out unless forced. The embedded judge, which only ranks papers for triage, reads a
large library's candidates only down to its triage cut (`triage_cut`): the pairs below it are not its
work, so they are neither pending nor failed for it; an LLM judge reads them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from itertools import chain
from typing import Any, ClassVar

from sqlalchemy import Row

from monitor.claims.ids import text_hash
from monitor.config import Settings
from monitor.judge.base import LABELS, Judge
from monitor.judge.prompts import JudgePrompts
from monitor.judge.second_look import SecondLookSummary
from monitor.judge_names import shown_judge, triage_only_judge
from monitor.llm.cost import cached_prefix, estimate_tokens
from monitor.llm.texts import ClaimText, PaperText
from monitor.llm.units import CallCounts, Pair, UnitPricing, WorkUnit, group_units
from monitor.store.assessments import judged_keys
from monitor.store.candidates import pairs_to_judge
from monitor.store.claims import active_totals
from monitor.store.db import Store
from monitor.store.failures import parked_keys
from monitor.store.runs import StageNotes

# Rough size of one claim's answer, for estimates before anything is called.
COMPLETION_TOKENS_PER_CLAIM = 120


def cache_key(
    arxiv_id: str, version: int, claim_text: str, judge: str, model: str, prompt_version: str
) -> str:
    """The identity of one judgement: the same inputs are never judged twice (unless forced)."""
    payload = json.dumps([arxiv_id, version, claim_text, judge, model, prompt_version], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass
class JudgeSummary(CallCounts):
    """What a judge run did (or, for a dry run, would do) and what it cost; recorded on the run as
    `judge` (StageCounts), with its tokens, error messages and `warnings`."""

    stage: ClassVar[str] = "judge"

    judge: str
    model: str
    prompt_version: str
    dry_run: bool = False
    pending: int = 0
    papers: int = 0
    judged: int = 0
    labels: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LABELS, 0))
    ungrounded: int = 0
    errors: int = 0
    skipped: int = 0  # written meanwhile by a concurrent run
    not_attempted: int = 0  # left pending because the token budget ran out
    failed_calls: int = 0
    cost_estimate: float = 0.0
    budget_exhausted: bool = False
    judge_unavailable: bool = False  # the server refused us outright; the rest was not attempted
    unavailable_reason: str = ""  # why, for the caller's error message
    parked: int = 0  # pairs not asked because earlier runs failed on them too often
    # The embedded judge's cut (candidates read per claim and week; None: all) and the pairs it left
    # unread below it: not failed, not pending for this judge; an LLM judge reads them.
    triage_cut: int | None = None
    below_cut: int = 0
    newly_parked: int = 0  # pairs this run failed on once too often
    error_messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # for the run's warnings, not its counts
    # The second readings this run gave (judge/second_look.py), recorded under their own name.
    second_look: SecondLookSummary | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["warnings"], data["second_look"]
        data["judge"] = shown_judge(self.judge)  # `self.judge` is the stored name (cache keys)
        data["tokens"] = self.tokens
        data["cost_estimate"] = round(self.cost_estimate, 6)
        return data

    def stage_counts(self) -> dict[str, Any]:
        return self.as_dict()

    def stage_notes(self) -> StageNotes:
        # A dry run's tokens are an estimate: nothing was spent.
        spent = 0 if self.dry_run else self.tokens
        within = [self.second_look] if self.second_look is not None else []
        return StageNotes(
            tokens=spent, warnings=list(self.warnings), errors=list(self.error_messages), within=within
        )


def triage_cut(settings: Settings, triage_only: bool, active_claims: int) -> int | None:
    """How many candidates per claim and ISO week a judge reads, by relevance score; None: all.

    Only a `triage_only` judge has a cut (`judge.embedded_top_k`), and only for a library of more than
    `judge.embedded_cut_above_claims` active claims: it ranks papers for triage and asserts no stance,
    so reading a thousand claims' every candidate is work no digest shows (docs/scale.md). A judge that
    reads stance has labels that count toward verdicts: it reads every candidate.
    """
    cfg = settings.judge
    if not triage_only or cfg.embedded_top_k is None:
        return None
    return cfg.embedded_top_k if active_claims > cfg.embedded_cut_above_claims else None


def store_triage_cut(store: Store, settings: Settings, judge_name: str) -> int | None:
    """`triage_cut` for the judge stored as `judge_name` and the store's library as it is now."""
    triage_only = triage_only_judge(judge_name)
    if not triage_only or settings.judge.embedded_top_k is None:
        return None
    with store.session() as session:
        return triage_cut(settings, triage_only, active_totals(session)["claims"])


def pending_units(
    store: Store,
    judge: Judge,
    force: bool = False,
    claim_ids: list[str] | None = None,
    since: dt.date | None = None,
    retry_parked: bool = False,
    summary: JudgeSummary | None = None,
    top_k: int | None = None,
) -> list[WorkUnit]:
    """The work a run would do, grouped by paper version and chunked by the judge's claims_per_call.

    Parked pairs are left out unless `force` or `retry_parked`; `summary.parked` counts them. With
    `top_k` (`triage_cut`), only each claim's `top_k` candidates of a week by relevance score.
    """
    with store.session() as session:
        rows = pairs_to_judge(session, claim_ids, since, top_k)
        first = next(rows, None)
        if first is None:
            return []
        done = (
            set() if force else judged_keys(session, judge.name, judge.model, judge.prompt_version, claim_ids)
        )
        parked = set() if force or retry_parked else parked_keys(session)
        return group_units(
            _pending(chain([first], rows), judge, done, parked, summary), judge.claims_per_call
        )


def _pending(
    rows: Iterable[Row[Any]], judge: Judge, done: set[str], parked: set[str], summary: JudgeSummary | None
) -> Iterator[tuple[PaperText, Pair]]:
    """The rows' pairs not judged under their cache key yet and not parked (`summary.parked` counts those).

    Rows come paper by paper: a paper's text is kept once, not once per claim (a large library's 400,000
    pending pairs held a gigabyte of abstracts), and each claim once.
    """
    paper: PaperText | None = None
    claims: dict[tuple[str, str, str | None], tuple[ClaimText, str]] = {}
    for arxiv_id, version, claim_id, text, date_text, published, title, abstract in rows:
        key = cache_key(arxiv_id, version, text, judge.name, judge.model, judge.prompt_version)
        if key in done:
            continue
        if key in parked:
            if summary is not None:
                summary.parked += 1
            continue
        if paper is None or (paper.arxiv_id, paper.version) != (arxiv_id, version):
            day = published.isoformat() if published else None
            paper = PaperText(arxiv_id, version, title or "", abstract or "", day)
        claim = claims.get((claim_id, text, date_text))
        if claim is None:
            claim = claims[claim_id, text, date_text] = (
                ClaimText(claim_id, text, date_text),
                text_hash(text),
            )
        yield paper, Pair(claim[0], key, claim[1])


def judge_pricing(prompts: JudgePrompts) -> UnitPricing:
    """A judge call's estimate: the system prompt's tokens, the user prompt's, a claim's answer per claim."""
    return UnitPricing(
        prompts.user,
        lambda claims: COMPLETION_TOKENS_PER_CLAIM * claims,
        fixed_tokens=estimate_tokens(prompts.system()),
    )


def estimate_judge_units(units: list[WorkUnit], prompts: JudgePrompts) -> tuple[int, int]:
    """Each unit's estimated tokens (its prompt and a claim's answer per claim); returns the totals."""
    return judge_pricing(prompts).estimate(units)


def judge_cached_tokens(calls: int, prompts: JudgePrompts) -> int:
    """Of `calls` judge calls' prompt tokens, those a provider serves from its prefix cache: the system
    prompt (the same for every call) from the second call on."""
    return max(0, calls - 1) * cached_prefix(estimate_tokens(prompts.system()))
