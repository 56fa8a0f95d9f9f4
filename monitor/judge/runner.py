"""Judging what is pending: candidates without an assessment for the current cache key.

A pair is pending for a judge when its candidate row is for the paper's latest version, its claim is
active, and no assessment exists under its cache key: sha256 of (arxiv_id, version, claim text, judge,
model, prompt version) (store/pairs.py, the one definition of a pair's state). Changing the model or
a prompt therefore re-judges everything once; nothing else does. The claims of one paper are judged
together in calls of `judge.claims_per_call`, at most `concurrency` calls at a time. Each assessment
is written in its own small transaction as soon as its call returns, so a crash loses only calls in
flight and a rerun finishes the rest without duplicating anything.

"Current" means the latest assessment per (arxiv_id, claim_id): writing one marks every older row of
that pair `is_current = False` (whatever its version, judge, model or prompt). History is never
overwritten; `force` adds a new generation of the same cache key.

A pair whose answer was refused or invalid in `judge.park_after_failures` passes is parked
(monitor/store/failures.py): it is not asked again, and is counted in the run and the digest, until
`force` or `retry_parked` (what `monitor retest` does).
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections import deque
from collections.abc import Callable

from monitor.config import Settings
from monitor.judge.base import Judge
from monitor.judge.prompts import load_prompts
from monitor.judge.second_look import (
    SecondLookSummary,
    by_batch,
    expected_second_looks,
    second_look_pending,
    second_look_policy,
    waiting_second_looks,
)
from monitor.judge.work import (
    JudgeSummary,
    estimate_judge_units,
    judge_cached_tokens,
    judge_cut,
    pending_units,
)
from monitor.judge.writer import AssessmentWriter
from monitor.llm.cost import token_cost
from monitor.llm.engine import TokenBudget, run_live
from monitor.llm.recorder import ExchangeRecorder
from monitor.llm.units import WorkUnit
from monitor.progress import progress_bar
from monitor.store.db import Store
from monitor.store.pairs import PairScope, pair_tally
from monitor.store.runs import partial_on_failure

# Units whose papers a judge's `prepare` (the embedded one) encodes together, well under its cache.
PREPARE_AHEAD = 64


def price(
    settings: Settings, judge: Judge, prompt_tokens: int, completion_tokens: int, batch: bool, cached: int = 0
) -> float:
    """USD at the configured per-token rates (cached prompt tokens at theirs); the Batch API costs half;
    a judge not billed nothing."""
    return token_cost(settings, prompt_tokens, completion_tokens, batch, cached) if judge.billed else 0.0


def judge_pending(
    store: Store,
    settings: Settings,
    judge: Judge | None = None,
    run_id: int | None = None,
    should_stop: Callable[[], bool] | None = None,
    force: bool = False,
    claim_ids: list[str] | None = None,
    since: dt.date | None = None,
    dry_run: bool = False,
    progress: bool = False,
    retry_parked: bool = False,
    budget: TokenBudget | None = None,
    batch: bool | None = None,
) -> JudgeSummary:
    """Judge every pending pair (see module docstring); returns what was done and what it cost.

    When what is left of `budget` (the run's; default all of `llm.token_budget`) would be exceeded, no
    further call is started, what was judged is kept, and the summary says `budget_exhausted` (the
    caller decides whether that is an error); the second looks get what the first readings left.
    Assessments and exchanges are stored under `run_id`; no call starts once `should_stop()` (the run's
    stop flag or lost lock) says so. A failure carries the summary so far (`partial_on_failure`).
    A dry run prices at Batch API rates with `batch` (None: as `llm.batch` says).
    """
    budget = budget or TokenBudget.of(settings.llm)
    if judge is None:
        from monitor.judge.factory import make_judge

        judge = make_judge(settings)
    summary = JudgeSummary(
        judge=judge.name, model=judge.model, prompt_version=judge.prompt_version, dry_run=dry_run
    )
    with store.session() as session:
        summary.triage_cut = judge_cut(session, settings, judge.triage_only)
    units = pending_units(
        store,
        judge,
        force=force,
        claim_ids=claim_ids,
        since=since,
        retry_parked=retry_parked,
        summary=summary,
        top_k=summary.triage_cut,
    )
    if summary.triage_cut is not None:
        scope = PairScope(since=since, claim_ids=claim_ids, top_k=summary.triage_cut)
        with store.session() as session:
            summary.below_cut = pair_tally(session, scope).below_cut
    summary.pending = sum(len(u.pairs) for u in units)
    summary.papers = len({(u.paper.arxiv_id, u.paper.version) for u in units})
    estimated = estimate_judge_units(units, judge.prompts or load_prompts(settings.judge.prompts_dir))
    if dry_run:
        at_batch = settings.llm.batch if batch is None else batch
        return _dry_run(estimated, units, store, settings, judge, summary, budget, at_batch, claim_ids)

    recorder = ExchangeRecorder(store, run_id)
    writer = assessment_writer(store, settings, judge, summary, force, run_id)
    with partial_on_failure(summary):
        try:
            _run_units(units, judge, settings, recorder, writer, progress, should_stop, budget)
        finally:
            count_usage(summary, recorder, settings, judge, batch=False)
            summary.warnings.extend(_notes(judge, settings, summary, writer, budget))
        if writer.second_look is not None and not summary.budget_exhausted and not summary.judge_unavailable:
            run_second_looks(store, settings, summary, run_id, should_stop, claim_ids, budget)
    return summary


def run_second_looks(
    store: Store,
    settings: Settings,
    summary: JudgeSummary,
    run_id: int | None,
    should_stop: Callable[[], bool] | None,
    claim_ids: list[str] | None,
    budget: TokenBudget,
) -> None:
    """The second readings pending (this run's and any a stopped run left), asked live whether the first
    readings came live or by batch (judge/batch.py), within what the first readings left of the budget
    (`summary.tokens`, counted before); a spent budget or an unreachable server ends judging as the
    first reading's would."""
    left = budget.after(summary.tokens)
    looked = second_look_pending(store, settings, run_id, should_stop, claim_ids, budget=left)
    take_second_looks(summary, looked)


def take_second_looks(summary: JudgeSummary, looked: SecondLookSummary) -> None:
    """A pass of second looks, live or by batch, into the judge's summary: its cost, and why it stopped,
    read as the first readings' faults are (a spent budget: 7; anything but a stop request: 6)."""
    summary.second_look = looked
    summary.cost_estimate += looked.cost
    if looked.stopped and looked.stopped.startswith("token budget"):
        summary.budget_exhausted = True
        summary.warnings.append(f"second look: {looked.stopped}; {looked.pending_left} pair(s) wait for it")
    elif looked.stopped and looked.stopped != "stop requested":
        summary.judge_unavailable, summary.unavailable_reason = True, f"second look: {looked.stopped}"


def assessment_writer(
    store: Store, settings: Settings, judge: Judge, summary: JudgeSummary, force: bool, run_id: int | None
) -> AssessmentWriter:
    """The writer of a run's first readings, whether they come live or by batch (judge/batch.py): the
    same parking (`judge.park_after_failures`) and the same second-look policy for both."""
    park = settings.judge.park_after_failures
    return AssessmentWriter(store, judge, summary, force, run_id, park, second_look_policy(settings, judge))


def _dry_run(
    estimated: tuple[int, int],
    units: list[WorkUnit],
    store: Store,
    settings: Settings,
    judge: Judge,
    summary: JudgeSummary,
    budget: TokenBudget,
    batch: bool,
    claim_ids: list[str] | None,
) -> JudgeSummary:
    """What judging would take: calls, the estimated (prompt, completion) tokens, and their price
    (at Batch API rates with `batch`: what `monitor judge` would do with llm.batch set), then the second
    looks the pending pairs are expected to need (`second_look_estimate`) and those already waiting
    (`second_looks_waiting`, of `claim_ids`), as a run would ask them (by batch where `by_batch` says so,
    else live), from the same token budget, their price in `cost_estimate`."""
    summary.calls = len(units)
    summary.prompt_tokens, summary.completion_tokens = estimated
    if judge.prompts is not None and judge.billed:
        summary.cached_tokens = judge_cached_tokens(len(units), judge.prompts)
    summary.cost_estimate = price(
        settings, judge, summary.prompt_tokens, summary.completion_tokens, batch, summary.cached_tokens
    )
    second_tokens = 0
    if second_look_policy(settings, judge) is not None:
        pairs = [(unit.paper, claim) for unit in units for claim in unit.claims]
        looks = expected_second_looks(settings, summary.pending, pairs, by_batch(settings, batch))
        summary.second_look_estimate = looks
        waiting = waiting_second_looks(store, settings, claim_ids, by_batch(settings, batch))
        summary.second_looks_waiting = waiting
        summary.cost_estimate += looks.cost + waiting.cost if judge.billed else 0.0
        second_tokens = looks.tokens + waiting.tokens
    summary.budget_exhausted = budget.exceeded(summary.tokens + second_tokens)
    return summary


def _notes(
    judge: Judge, settings: Settings, summary: JudgeSummary, writer: AssessmentWriter, budget: TokenBudget
) -> list[str]:
    """The run's warnings: the judge's own, newly parked pairs, a spent budget."""
    notes = judge.drain_warnings() + parked_notes(settings, summary, writer)
    if summary.budget_exhausted:
        notes.append(
            f"judge: token budget {budget.limit} reached; {summary.not_attempted} pair(s) left pending"
        )
    return notes


def parked_notes(settings: Settings, summary: JudgeSummary, writer: AssessmentWriter) -> list[str]:
    """The warning for the pairs this run parked (live or by batch), if it parked any."""
    if not summary.newly_parked:
        return []
    return [
        f"judge: {summary.newly_parked} pair(s) parked after failing "
        f"{settings.judge.park_after_failures} run(s); not asked again until `--force` or "
        f"`monitor retest`. First: {writer.parked_messages[0]}"
    ]


def count_usage(
    summary: JudgeSummary,
    recorder: ExchangeRecorder,
    settings: Settings,
    judge: Judge,
    batch: bool,
) -> None:
    """Copy the recorder's call and token counts into the summary and price them."""
    summary.take_counts(recorder)
    summary.failed_calls = recorder.failed_calls
    summary.cost_estimate = price(
        settings, judge, recorder.prompt_tokens, recorder.completion_tokens, batch, recorder.cached_tokens
    )


def _run_units(
    units: list[WorkUnit],
    judge: Judge,
    settings: Settings,
    recorder: ExchangeRecorder,
    writer: AssessmentWriter,
    progress: bool,
    should_stop: Callable[[], bool] | None,
    budget: TokenBudget,
) -> None:
    summary = writer.summary
    prepared: set[tuple[str, int]] = set()

    def before(unit: WorkUnit, queue: deque[WorkUnit]) -> None:
        nonlocal prepared
        if unit.paper_key not in prepared:
            # Encode the next papers together (the embedded judge batches their sentences).
            upcoming = itertools.islice(itertools.chain([unit], queue), PREPARE_AHEAD)
            ahead = {u.paper_key: u.paper for u in upcoming}
            judge.prepare(list(ahead.values()))
            prepared = set(ahead)

    with progress_bar("judge", summary.pending, "pairs", progress) as advance:
        end = run_live(
            units,
            lambda unit: (judge.judge(unit.paper, unit.claims, recorder), None),
            writer,
            budget=budget,
            recorder=recorder,
            workers=min(settings.llm.concurrency, judge.max_concurrency),
            name="judge",
            should_stop=should_stop,
            before=before,
            advance=advance,
        )
    summary.budget_exhausted = end.budget_exhausted
    summary.judge_unavailable, summary.unavailable_reason = bool(end.fatal), end.fatal
    summary.not_attempted = sum(len(u.pairs) for u in end.left)
