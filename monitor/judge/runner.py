"""Judging what is pending: candidates without an assessment for the current cache key.

A pair is pending when its candidate row is for the paper's latest version, its claim is active, and no
assessment exists under its cache key: sha256 of (arxiv_id, version, claim text, judge, model, prompt
version). Changing the model or a prompt therefore re-judges everything once; nothing else does. The
claims of one paper are judged together in calls of `judge.claims_per_call`, at most `concurrency`
calls at a time. Each assessment is written in its own small transaction as soon as its call returns,
so a crash loses only calls in flight and a rerun finishes the rest without duplicating anything.

"Current" means the latest assessment per (arxiv_id, claim_id): writing one marks every older row of
that pair `is_current = False` (whatever its version, judge, model or prompt). History is never
overwritten; `force` adds a new generation of the same cache key.

A pair whose answer was refused or invalid in `judge.park_after_failures` passes is parked
(monitor/store/failures.py): it is not asked again, and is counted in the run and the digest, until
`force` or `retry_parked` (what `monitor retest` does).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import itertools
import json
import logging
import math
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from monitor.config import Settings
from monitor.errors import MonitorError
from monitor.judge.base import LABELS, ClaimText, Judge, Judgement, PaperText
from monitor.judge.exchanges import ExchangeRecorder
from monitor.judge.grounding import ground
from monitor.judge.prompts import JudgePrompts, load_prompts
from monitor.progress import progress_bar
from monitor.store.candidates import candidate_pairs
from monitor.store.db import Store
from monitor.store.failures import FailedPair, clear_failure, parked_keys, record_failure
from monitor.store.models import Assessment, Candidate, Claim, Paper
from monitor.store.runs import RunRecord

log = logging.getLogger(__name__)

# Rough size of one claim's answer, for estimates before anything is called.
COMPLETION_TOKENS_PER_CLAIM = 120
MAX_LOGGED_ERRORS = 20
# Units whose papers a judge with `prepare` (the embedded one) encodes together, well under its cache.
PREPARE_AHEAD = 64


def cache_key(
    arxiv_id: str, version: int, claim_text: str, judge: str, model: str, prompt_version: str
) -> str:
    """The identity of one judgement: the same inputs are never judged twice (unless forced)."""
    payload = json.dumps([arxiv_id, version, claim_text, judge, model, prompt_version], ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


def _text_hash(text: str) -> str:
    try:
        from monitor.claims.ids import text_hash
    except ImportError:  # the claims stage defines the canonical hash; plain sha256 until then
        return hashlib.sha256(text.encode()).hexdigest()
    return text_hash(text)


def estimate_tokens(text: str) -> int:
    """Tokens in `text` by the usual four-characters-a-token rule (no tokenizer download needed)."""
    return math.ceil(len(text) / 4)


@dataclass
class Pair:
    """One pending (paper version, claim) pair and its cache key."""

    claim: ClaimText
    cache_key: str
    claim_text_hash: str


@dataclass
class WorkUnit:
    """One call's worth of work: a paper and up to claims_per_call of its pending claims."""

    paper: PaperText
    pairs: list[Pair]
    estimated_tokens: int = 0

    @property
    def claims(self) -> list[ClaimText]:
        return [p.claim for p in self.pairs]


@dataclass
class JudgeSummary:
    """What a judge run did (or, for a dry run, would do) and what it cost."""

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
    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_estimate: float = 0.0
    budget_exhausted: bool = False
    judge_unavailable: bool = False  # the server refused us outright; the rest was not attempted
    unavailable_reason: str = ""  # why, for the caller's error message
    parked: int = 0  # pairs not asked because earlier runs failed on them too often
    newly_parked: int = 0  # pairs this run failed on once too often
    batches_submitted: int = 0  # --batch only
    batches_waiting: int = 0
    batches_collected: int = 0
    error_messages: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tokens"] = self.tokens
        data["cost_estimate"] = round(self.cost_estimate, 6)
        return data


def token_cost(settings: Settings, prompt_tokens: int, completion_tokens: int) -> float:
    """USD for these tokens at the configured per-token rates (the judge's and the LLM screen's)."""
    cfg = settings.judge
    return (
        prompt_tokens * cfg.price_input_per_million + completion_tokens * cfg.price_output_per_million
    ) / 1e6


def price(settings: Settings, judge: Judge, prompt_tokens: int, completion_tokens: int, batch: bool) -> float:
    """USD at the configured per-token rates; the Batch API costs half; the embedded model nothing."""
    if judge.name != "openai":
        return 0.0
    cost = token_cost(settings, prompt_tokens, completion_tokens)
    return cost / 2 if batch else cost


def pending_units(
    store: Store,
    judge: Judge,
    force: bool = False,
    claim_ids: list[str] | None = None,
    since: dt.date | None = None,
    retry_parked: bool = False,
    summary: JudgeSummary | None = None,
) -> list[WorkUnit]:
    """The work a run would do, grouped by paper version and chunked by the judge's claims_per_call.

    Parked pairs are left out unless `force` or `retry_parked`; `summary.parked` counts them.
    """
    # Pairs an LLM screen has not kept (pending or dropped) are not the judge's.
    query = candidate_pairs(Claim.date_text, Paper.published)
    query = query.where(Candidate.screen.is_(None) | (Candidate.screen == "kept"))
    if claim_ids:
        query = query.where(Claim.id.in_(claim_ids))
    if since:
        query = query.where(Paper.published >= since)
    with store.session() as session:
        rows = session.execute(query).all()
        done: set[str] = set()
        if not force and rows:
            done_query = select(Assessment.cache_key).where(
                Assessment.judge == judge.name,
                Assessment.model == judge.model,
                Assessment.prompt_version == judge.prompt_version,
            )
            if claim_ids:
                done_query = done_query.where(Assessment.claim_id.in_(claim_ids))
            done = set(session.scalars(done_query))
        parked = parked_keys(session) if rows and not (force or retry_parked) else set()
    per_call = max(1, getattr(judge, "claims_per_call", 1))
    units: list[WorkUnit] = []
    current: WorkUnit | None = None
    for arxiv_id, version, claim_id, text, date_text, published, title, abstract in rows:
        key = cache_key(arxiv_id, version, text, judge.name, judge.model, judge.prompt_version)
        if key in done:
            continue
        if key in parked:
            if summary is not None:
                summary.parked += 1
            continue
        pair = Pair(ClaimText(id=claim_id, text=text, date_text=date_text), key, _text_hash(text))
        same_paper = current is not None and (current.paper.arxiv_id, current.paper.version) == (
            arxiv_id,
            version,
        )
        if not same_paper or len(current.pairs) >= per_call:  # type: ignore[union-attr]
            day = published.isoformat() if published else None
            current = WorkUnit(PaperText(arxiv_id, version, title or "", abstract or "", day), [])
            units.append(current)
        current.pairs.append(pair)  # type: ignore[union-attr]
    return units


def estimate_units(units: list[WorkUnit], prompts: JudgePrompts) -> None:
    system = estimate_tokens(prompts.system())
    for unit in units:
        user = estimate_tokens(prompts.user(unit.paper, unit.claims))
        unit.estimated_tokens = system + user + COMPLETION_TOKENS_PER_CLAIM * len(unit.pairs)


class AssessmentWriter:
    """Writes one unit's judgements, each in its own transaction, and counts the outcome."""

    def __init__(
        self,
        store: Store,
        judge: Judge,
        summary: JudgeSummary,
        force: bool,
        run_id: int | None,
        park_after: int = 0,
    ):
        self.store, self.judge, self.summary, self.force, self.run_id = store, judge, summary, force, run_id
        self.park_after = park_after
        self.parked_messages: list[str] = []

    def write(self, unit: WorkUnit, judgements: list[Judgement]) -> None:
        by_claim = {j.claim_id: j for j in judgements}
        for pair in unit.pairs:
            judgement = by_claim.get(pair.claim.id)
            if judgement is None or judgement.label not in LABELS:
                got = "no answer" if judgement is None else f"label {judgement.label!r}"
                message = f"{unit.paper.arxiv_id}v{unit.paper.version} claim {pair.claim.id}: {got}"
                self.error(message, 1)
                self.pair_failed(unit.paper, pair, message)
                continue
            self._write_one(unit.paper, pair, judgement)

    def error(self, message: str, pairs: int) -> None:
        self.summary.errors += pairs
        if len(self.summary.error_messages) < MAX_LOGGED_ERRORS:
            self.summary.error_messages.append(message)
        log.warning("judge: %s", message)

    def pair_failed(self, paper: PaperText, pair: Pair, message: str) -> None:
        """Count a failure that is the pair's own (not the server's); park it when it has had enough."""
        failed = FailedPair(
            pair.cache_key,
            paper.arxiv_id,
            paper.version,
            pair.claim.id,
            self.judge.name,
            self.judge.model,
            self.judge.prompt_version,
        )
        if record_failure(self.store, failed, message, self.run_id, self.park_after):
            self.summary.newly_parked += 1
            if len(self.parked_messages) < MAX_LOGGED_ERRORS:
                self.parked_messages.append(f"claim {pair.claim.id}: {message}")

    def _write_one(self, paper: PaperText, pair: Pair, judgement: Judgement) -> None:
        grounding = ground(judgement, paper, pair.claim.text)
        try:
            with self.store.session() as session:
                generation = 0
                if self.force:
                    latest = session.scalar(
                        select(func.max(Assessment.generation)).where(Assessment.cache_key == pair.cache_key)
                    )
                    generation = 0 if latest is None else latest + 1
                elif session.scalar(
                    select(Assessment.id).where(Assessment.cache_key == pair.cache_key).limit(1)
                ):
                    self.summary.skipped += 1
                    return
                row = Assessment(
                    cache_key=pair.cache_key,
                    generation=generation,
                    arxiv_id=paper.arxiv_id,
                    version=paper.version,
                    claim_id=pair.claim.id,
                    claim_text_hash=pair.claim_text_hash,
                    judge=self.judge.name,
                    model=self.judge.model,
                    prompt_version=self.judge.prompt_version,
                    label=judgement.label,
                    confidence=min(1.0, max(0.0, grounding.confidence)),
                    rationale=judgement.rationale,
                    evidence=judgement.evidence,
                    grounded=grounding.grounded,
                    abstained=judgement.abstained,
                    is_current=True,
                    exchange_id=judgement.exchange_id,
                    run_id=self.run_id,
                )
                session.add(row)
                session.flush()
                clear_failure(session, pair.cache_key)  # answered at last: no longer failing or parked
                session.execute(
                    update(Assessment)
                    .where(
                        Assessment.arxiv_id == paper.arxiv_id,
                        Assessment.claim_id == pair.claim.id,
                        Assessment.id != row.id,
                        Assessment.is_current.is_(True),
                    )
                    .values(is_current=False)
                )
        except IntegrityError:
            # A concurrent run wrote this (cache_key, generation) first: its row stands.
            self.summary.skipped += 1
            return
        self.summary.judged += 1
        self.summary.labels[judgement.label] += 1
        self.summary.ungrounded += 0 if grounding.grounded else 1


def judge_pending(
    store: Store,
    settings: Settings,
    judge: Judge | None = None,
    run: RunRecord | None = None,
    force: bool = False,
    claim_ids: list[str] | None = None,
    since: dt.date | None = None,
    dry_run: bool = False,
    progress: bool = False,
    retry_parked: bool = False,
) -> JudgeSummary:
    """Judge every pending pair (see module docstring); returns what was done and what it cost.

    When `settings.judge.token_budget` would be exceeded, no further call is started, what was judged
    is kept, and the summary says `budget_exhausted` (the caller decides whether that is an error).
    """
    if judge is None:
        from monitor.judge.factory import make_judge

        judge = make_judge(settings)
    summary = JudgeSummary(
        judge=judge.name, model=judge.model, prompt_version=judge.prompt_version, dry_run=dry_run
    )
    units = pending_units(
        store,
        judge,
        force=force,
        claim_ids=claim_ids,
        since=since,
        retry_parked=retry_parked,
        summary=summary,
    )
    summary.pending = sum(len(u.pairs) for u in units)
    summary.papers = len({(u.paper.arxiv_id, u.paper.version) for u in units})
    prompts = getattr(judge, "prompts", None)
    estimate_units(
        units, prompts if isinstance(prompts, JudgePrompts) else load_prompts(settings.judge.prompts_dir)
    )

    if dry_run:
        summary.calls = len(units)
        summary.completion_tokens = sum(COMPLETION_TOKENS_PER_CLAIM * len(u.pairs) for u in units)
        summary.prompt_tokens = sum(u.estimated_tokens for u in units) - summary.completion_tokens
        # A dry run prices what `monitor judge` would do, which is a batch when judge.batch is set.
        summary.cost_estimate = price(
            settings, judge, summary.prompt_tokens, summary.completion_tokens, settings.judge.batch
        )
        budget = settings.judge.token_budget
        summary.budget_exhausted = budget is not None and summary.tokens > budget
        if run is not None:
            run.add("judge", summary.as_dict())
        return summary

    recorder = ExchangeRecorder(store, run.id if run else None)
    writer = AssessmentWriter(
        store, judge, summary, force, run.id if run else None, settings.judge.park_after_failures
    )
    try:
        stop = run.should_stop if run else None
        _run_units(units, judge, settings, recorder, writer, summary, progress, stop)
    finally:
        settle(summary, recorder, settings, judge, run, batch=False)
        drain: Callable[[], list[str]] | None = getattr(judge, "drain_warnings", None)
        notes = drain() if drain is not None else []
        if summary.newly_parked:
            notes.append(
                f"judge: {summary.newly_parked} pair(s) parked after failing "
                f"{settings.judge.park_after_failures} run(s); not asked again until `--force` or "
                f"`monitor retest`. First: {writer.parked_messages[0]}"
            )
        if run is not None:
            run.warnings.extend(notes)
        if run is not None and summary.budget_exhausted:
            run.warnings.append(
                f"judge: token budget {settings.judge.token_budget} reached; "
                f"{summary.not_attempted} pair(s) left pending"
            )
    return summary


def settle(
    summary: JudgeSummary,
    recorder: ExchangeRecorder,
    settings: Settings,
    judge: Judge,
    run: RunRecord | None,
    batch: bool,
) -> None:
    """Copy the recorder's call and token counts into the summary, price them, and add them to the run."""
    summary.calls = recorder.calls
    summary.failed_calls = recorder.failed_calls
    summary.prompt_tokens = recorder.prompt_tokens
    summary.completion_tokens = recorder.completion_tokens
    summary.cost_estimate = price(settings, judge, recorder.prompt_tokens, recorder.completion_tokens, batch)
    if run is not None:
        run.tokens += recorder.tokens
        run.add("judge", summary.as_dict())
        run.errors.extend(summary.error_messages)


def _paper_id(unit: WorkUnit) -> tuple[str, int]:
    return unit.paper.arxiv_id, unit.paper.version


def _run_units(
    units: list[WorkUnit],
    judge: Judge,
    settings: Settings,
    recorder: ExchangeRecorder,
    writer: AssessmentWriter,
    summary: JudgeSummary,
    progress: bool,
    should_stop: Callable[[], bool] | None = None,  # SIGTERM/SIGINT: start no further call
) -> None:
    from monitor.testhooks import pause_at

    budget = settings.judge.token_budget
    # A judge opts in to parallel calls with `max_concurrency` (the HTTP one does); others run one at a time.
    workers = max(1, min(settings.judge.concurrency, getattr(judge, "max_concurrency", 1)))
    queue = deque(units)
    prepare: Callable[[list[PaperText]], None] | None = getattr(judge, "prepare", None)
    prepared: set[tuple[str, int]] = set()
    in_flight: dict[Future[list[Judgement]], WorkUnit] = {}
    reserved = 0
    with contextlib.ExitStack() as stack:
        advance = stack.enter_context(progress_bar("judge", summary.pending, "pairs", progress))
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge"))
        # On an interrupt, queued calls are dropped; calls in flight finish but are not written.
        stack.callback(pool.shutdown, wait=True, cancel_futures=True)
        while queue or in_flight:
            stopping = should_stop is not None and should_stop()
            stopping = stopping or summary.judge_unavailable
            while queue and len(in_flight) < workers and not summary.budget_exhausted and not stopping:
                unit = queue[0]
                if budget is not None and recorder.tokens + reserved + unit.estimated_tokens > budget:
                    if not in_flight:
                        summary.budget_exhausted = True  # nothing running and the next call does not fit
                    break  # else wait: finished calls tell us what they really cost
                queue.popleft()
                if prepare is not None and _paper_id(unit) not in prepared:
                    # Encode the next papers together (the embedded judge batches their sentences).
                    upcoming = itertools.islice(itertools.chain([unit], queue), PREPARE_AHEAD)
                    ahead = {_paper_id(u): u.paper for u in upcoming}
                    prepare(list(ahead.values()))
                    prepared = set(ahead)
                reserved += unit.estimated_tokens
                in_flight[pool.submit(judge.judge, unit.paper, unit.claims, recorder)] = unit
            if not in_flight:
                break
            finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in finished:
                unit = in_flight.pop(future)
                reserved -= unit.estimated_tokens
                try:
                    judgements = future.result()
                except MonitorError as exc:
                    writer.error(str(exc), len(unit.pairs))
                    if getattr(exc, "pair_fault", False):
                        for pair in unit.pairs:
                            writer.pair_failed(unit.paper, pair, str(exc))
                    # A bad key, an unknown model or a server that is not there fails every call alike:
                    # stop instead of repeating it.
                    if getattr(exc, "fatal", False) and not summary.judge_unavailable:
                        summary.judge_unavailable, summary.unavailable_reason = True, str(exc)
                else:
                    writer.write(unit, judgements)
                    pause_at("judge:after_first_batch")  # test-only crash point; a no-op otherwise
                advance(len(unit.pairs))
        summary.not_attempted = sum(len(u.pairs) for u in queue)
