"""The judge's work, grouped into calls (monitor/llm/units.py), and what a run did.

Which pairs are its work is store/pairs.py's one definition (`judge_rows`: pending or failed for this
judge, by its cache key; parked ones left out unless forced). A triage-only judge (the embedded one)
reads a large library's candidates only down to its triage cut (`triage_cut`): the pairs below it are
not its work, so they are neither pending nor failed for it; a judge that reads stance reads them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

from sqlalchemy.orm import Session

from monitor.claims.ids import text_hash
from monitor.config import Settings
from monitor.judge.base import LABELS, Judge
from monitor.judge.prompts import JudgePrompts
from monitor.judge.second_look import SecondLookEstimate, SecondLookSummary
from monitor.judge_names import shown_judge, triage_only_judge
from monitor.llm.cost import cached_prefix, estimate_tokens
from monitor.llm.texts import ClaimText, PaperText
from monitor.llm.units import CallCounts, Pair, UnitPricing, WorkUnit, group_units
from monitor.relevance.text import load_claims
from monitor.store.claims import active_totals
from monitor.store.db import Store
from monitor.store.pairs import PairScope, PairState, WorkRow, count_judge_work, judge_rows
from monitor.store.runs import StageNotes, last_judge

# One claim's answer, for estimates and budget reservations before anything is called: the mean of
# the kept first readings (94 tokens over 5,641 claims, training/teacher/issue30/judge_week_*.jsonl,
# held by tests/test_answer_lengths.py). A week's total is its thousands of answers' mean, so the mean,
# not a long answer, prices it; what one call may take is judge.max_output_tokens a claim.
COMPLETION_TOKENS_PER_CLAIM = 100


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
    # A dry run's: the second readings the pending pairs are expected to need (their price is part of
    # `cost_estimate`; their tokens are not in `prompt_tokens` and `completion_tokens`, the first readings').
    second_look_estimate: SecondLookEstimate | None = None
    # A dry run's: the second readings already waiting in the store, which a run asks too (priced into
    # `cost_estimate` likewise).
    second_looks_waiting: SecondLookEstimate | None = None
    # `monitor judge --batch`: the pairs this invocation sent to the Batch API (answered once collected).
    submitted: int = 0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        del data["warnings"], data["second_look"], data["second_look_estimate"], data["second_looks_waiting"]
        for name in ("second_look_estimate", "second_looks_waiting"):
            estimate = getattr(self, name)
            if estimate is not None:
                data[name] = estimate.as_dict()
        if self.second_look is not None:
            data["second_look"] = self.second_look.stage_counts()
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


def judge_cut(session: Session, settings: Settings, triage_only: bool) -> int | None:
    """`triage_cut` for a judge that is (or is not) `triage_only`, and the store's library as it is now."""
    if not triage_only or settings.judge.embedded_top_k is None:
        return None
    return triage_cut(settings, triage_only, active_totals(session)["claims"])


def ran_cut(session: Session, settings: Settings) -> int | None:
    """The cut of the judge that last judged this store: the one the newest judging run recorded (so the
    digest after `monitor run --judge embedded` counts what that run left below its cut, whatever the
    config names), else the configured one."""
    name = last_judge(session) or settings.judge_provider()
    return judge_cut(session, settings, triage_only_judge(name))


def count_unjudged(store: Store, settings: Settings, judge: Judge, until: dt.date) -> tuple[int, int]:
    """(pairs, papers) of papers published by `until` that are `judge`'s work (store/pairs.py
    `count_judge_work`, with its cut): left for `monitor judge` by a run that judged a period only."""
    with store.session() as session:
        scope = PairScope(until=until, top_k=judge_cut(session, settings, judge.triage_only))
        return count_judge_work(session, scope)


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
    """The work a run would do (store/pairs.py `judge_rows`), grouped by paper version and chunked by the
    judge's claims_per_call. Each pair's claim is the one relevance ranked its paper for (`load_claims`).

    Parked pairs are left out unless `force` or `retry_parked`; `summary.parked` counts them. With
    `top_k` (`triage_cut`), only each claim's `top_k` candidates of a week by relevance score.
    """
    scope = PairScope(since=since, claim_ids=claim_ids, top_k=top_k)
    with store.session() as session:
        claims = {c.id: c for c in load_claims(session, claim_ids or None)}  # no ids: all, as the scope
        rows = judge_rows(session, judge, scope, force=force, retry_parked=retry_parked)
        return group_units(_pending(rows, claims, summary), judge.claims_per_call)


def _pending(
    rows: Iterable[WorkRow], claims: dict[str, ClaimText], summary: JudgeSummary | None
) -> Iterator[tuple[PaperText, Pair]]:
    """The rows' pairs to ask, each with its claim of `claims` (by id), but those parked
    (`summary.parked` counts them).

    Rows come paper by paper: a paper's text is kept once, not once per claim (a large library's 400,000
    pending pairs held a gigabyte of abstracts); each claim is one object for all its pairs.
    """
    paper: PaperText | None = None
    for row in rows:
        if row.state is PairState.PARKED:
            if summary is not None:
                summary.parked += 1
            continue
        if paper is None or (paper.arxiv_id, paper.version) != (row.arxiv_id, row.version):
            day = row.published.isoformat() if row.published else None
            paper = PaperText(row.arxiv_id, row.version, row.title, row.abstract, day)
        claim = claims.get(row.claim_id)
        if claim is None or (claim.text, claim.date_text) != (row.claim_text, row.date_text):
            # Edited between the two reads (another process's import): the row's wording is the one
            # its cache key names, so it is the one asked about and recorded.
            claim = claims[row.claim_id] = _reworded(claim, row)
        yield paper, Pair(claim, row.key)


def _reworded(claim: ClaimText | None, row: WorkRow) -> ClaimText:
    """`claim` (or a bare one) with the wording and date of `row`."""
    base = claim or ClaimText(row.claim_id, row.claim_text)
    return replace(base, text=row.claim_text, date_text=row.date_text, text_hash=text_hash(row.claim_text))


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
