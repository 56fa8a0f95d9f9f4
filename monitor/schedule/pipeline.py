"""`monitor run`: one pass of the whole pipeline under the run lock, recorded in `runs`.

claims -> fetch -> relevance -> judge -> verdicts -> report -> email. Every stage commits its own
work in small transactions and skips what is already done (fetch marks, relevance marks, assessment
cache keys, one digest per period, `sent_at`), so a run killed anywhere is finished by the next one
without losing or doubling anything. Between steps the pipeline checks the stop flag (SIGTERM/SIGINT)
and whether the lock is still ours.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from monitor.config import Settings
from monitor.errors import BudgetExhausted, JudgeError, LockHeld
from monitor.schedule.lock import RunLock, locked_run
from monitor.schedule.signals import Interrupted, StopFlag
from monitor.store.db import Store
from monitor.store.models import Digest, Run, utcnow
from monitor.store.runs import RunRecord, save_progress
from monitor.testhooks import pause_at

if TYPE_CHECKING:
    from monitor.judge.base import Judge
    from monitor.judge.runner import JudgeSummary
    from monitor.relevance import RelevanceSummary

log = logging.getLogger(__name__)

# An unsent digest older than this is not mailed by a later run (it would be news from long ago).
RESEND_WINDOW = dt.timedelta(days=14)


@dataclass
class RunOptions:
    """What `monitor run` was asked to do."""

    source: str = "api"  # api | rss | sample | a snapshot file
    fetch: bool = True
    report: bool = True
    email: bool | None = None  # None: as settings.report.email says
    judge: str | None = None  # local | openai; None: settings.judge.provider
    since: dt.date | None = None
    until: dt.date | None = None
    import_claims: bool = True
    command: str = "run"
    progress: bool = False  # bars on stderr for fetch, relevance and judge (a person at a terminal)


@dataclass
class RunOutcome:
    """What a run did: its row id, final status, per-stage counts and the digest it wrote."""

    run_id: int
    status: str
    counts: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0
    digest_id: int | None = None
    digest_paths: list[str] = field(default_factory=list)
    emailed: list[int] = field(default_factory=list)
    abandoned: list[int] = field(default_factory=list)
    seconds: float = 0.0


class Steps:
    """Runs named steps in order: pause hooks, stop checks and progress saves around each."""

    def __init__(self, store: Store, run: RunRecord, stop: StopFlag, lock: RunLock | None) -> None:
        self.store, self.run, self.stop, self.lock = store, run, stop, lock

    def __call__(self, name: str, work: Callable[[], Any]) -> Any:
        pause_at(f"{name}:before")
        started = time.monotonic()
        result = work()
        self.run.counts.setdefault("seconds", {})[name] = round(time.monotonic() - started, 2)
        save_progress(self.store, self.run)
        pause_at(f"{name}:after")
        self.check(name)
        return result

    def check(self, after: str) -> None:
        if self.lock is not None and self.lock.lost:
            raise LockHeld(f"the run lock was taken over by another run during {after}; stopping")
        self.stop.check(after)


def run_once(
    store: Store,
    settings: Settings,
    options: RunOptions | None = None,
    stop: StopFlag | None = None,
    lock: RunLock | None = None,
) -> RunOutcome:
    """One pipeline run. Takes the run lock unless `lock` (already held) is given (see `locked_run`).

    Raises LockHeld (75) when another run holds the lock, Interrupted (130) when stopped by a signal,
    BudgetExhausted (7) when the judge's token budget ran out (judged work is kept), and the stages'
    own MonitorErrors. The run row records counts, tokens, errors and timing whatever happens.
    """
    opts = options or RunOptions()
    stop = stop or StopFlag()
    started = time.monotonic()
    with locked_run(store, settings, opts.command, stop.event, lock) as (run, held, abandoned):
        outcome = RunOutcome(run_id=run.id, status="running", abandoned=abandoned)
        _pipeline(store, settings, opts, run, Steps(store, run, stop, held), outcome)
    outcome.counts, outcome.tokens = dict(run.counts), run.tokens
    with store.session() as s:
        outcome.status = s.get(Run, outcome.run_id).status  # type: ignore[union-attr]
    outcome.seconds = round(time.monotonic() - started, 2)
    return outcome


def _pipeline(
    store: Store, settings: Settings, opts: RunOptions, run: RunRecord, step: Steps, outcome: RunOutcome
) -> None:
    if opts.import_claims:
        step("claims", lambda: sync_claims(store, settings, run))
    if opts.fetch:
        step("fetch", lambda: _fetch(store, settings, opts, run))
    step("relevance", lambda: _relevance(store, settings, run, opts.progress))
    # On a spent token budget (BudgetExhausted) or a judge that answered nothing (JudgeError), what
    # was judged is kept and verdicts and the digest wait for a run that can finish judging, so a
    # digest is never frozen on half the evidence.
    step("judge", lambda: _judge(store, settings, opts.judge, run, opts.progress))
    step("verdicts", lambda: _verdicts(store, settings, run))
    if not opts.report:
        return
    digest = step("report", lambda: _report(store, settings, run))
    outcome.digest_id = digest.digest_id
    outcome.digest_paths = [str(p) for p in digest.paths.values()]
    email = settings.report.email if opts.email is None else opts.email
    if email:
        outcome.emailed = step("email", lambda: _email(store, settings, run))


# --- the steps ----------------------------------------------------------------------------------


def prepare_candidates(
    store: Store, settings: Settings, screen: bool = True, progress: bool = False
) -> RelevanceSummary:
    """Bring claims up to date with their files, then pick the pairs to judge (what `monitor judge` does
    before judging, so `fetch && judge && report` works on a fresh store). `screen=False` leaves new
    pairs pending before an LLM screen (a dry run calls nothing)."""
    from monitor.relevance import select_candidates

    sync_claims(store, settings, None)
    return select_candidates(store, settings, screen=screen, progress=progress)


def sync_claims(store: Store, settings: Settings, run: RunRecord | None) -> Any:
    """Import the claim files, or, when there are none, go on with the claims already stored."""
    from monitor.claims.importer import default_paths, import_claims

    # Claims may have been imported by hand (`monitor seeds import FILE`) with no seeds directory
    # configured; then run, retest and replay work with what the store holds.
    if not any(Path(p).exists() for p in default_paths(settings)):
        if run is not None:
            run.warnings.append("no seeds directory or claims file found; using the claims already stored")
        return None
    return import_claims(store, settings, run=run)


def _fetch(store: Store, settings: Settings, opts: RunOptions, run: RunRecord) -> Any:
    from monitor.sources.ingest import fetch

    window = {"since": opts.since, "until": opts.until}
    return fetch(store, settings, source=opts.source, run=run, progress=opts.progress, **window)


def _relevance(store: Store, settings: Settings, run: RunRecord, progress: bool) -> Any:
    from monitor.relevance import select_candidates

    return select_candidates(store, settings, run=run, progress=progress)


def _judge(store: Store, settings: Settings, provider: str | None, run: RunRecord, progress: bool) -> Any:
    from monitor.judge.factory import make_judge

    judge = make_judge(settings, provider)
    return judge_step(store, settings, judge, run, again="monitor run", progress=progress)


def judge_step(
    store: Store,
    settings: Settings,
    judge: Judge,
    run: RunRecord,
    again: str,
    spent: int = 0,
    **which: Any,
) -> JudgeSummary:
    """Judge what is pending under the one budget-and-stop policy of run, retest, replay and judge.

    Raises as `check_judged` says, or Interrupted (130) when a stop was asked for meanwhile; the
    caller then writes no verdicts or digest, and a rerun resumes where this one stopped.

    `spent`: tokens this run already spent judging (replay judges once per period, and the budget is
    the run's). `which` goes to `judge_pending` (force, claim_ids, since, progress).
    """
    from monitor.judge.runner import judge_pending

    budget = settings.judge.token_budget
    scoped = settings
    if budget is not None and spent:
        left = settings.judge.model_copy(update={"token_budget": max(0, budget - spent)})
        scoped = settings.model_copy(update={"judge": left})
    summary = judge_pending(store, scoped, judge=judge, run=run, **which)
    check_judged(summary, settings, again)
    if run.should_stop():  # SIGTERM/SIGINT: the judge started no further call; the rest stays pending
        raise Interrupted(f"stopped while judging; finished work is kept, run `{again}` again to go on")
    return summary


def check_judged(summary: JudgeSummary, settings: Settings, again: str) -> None:
    """Raise when judging did not finish: BudgetExhausted (7) for a spent token budget, JudgeError (6)
    when the judge answered none of the pairs it was asked. What was judged is kept either way; verdicts
    and digests must wait, so they are never computed on half the evidence (docs/operations.md).
    """
    if summary.budget_exhausted:
        raise BudgetExhausted(
            f"token budget {settings.judge.token_budget} reached: {summary.judged} pair(s) judged and kept, "
            f"{summary.not_attempted} left pending; run `{again}` again to go on"
        )
    if summary.judge_unavailable:  # e.g. nothing listens at base_url: stop before verdicts and digest
        raise JudgeError(summary.unavailable_reason)
    if summary.errors and not summary.judged:
        first = f"; first error: {summary.error_messages[0]}" if summary.error_messages else ""
        raise JudgeError(f"the judge answered none of {summary.errors} pair(s){first}")


def _verdicts(store: Store, settings: Settings, run: RunRecord) -> Any:
    from monitor.verdicts.rollup import compute_verdicts

    return compute_verdicts(store, settings, run=run)


def _report(store: Store, settings: Settings, run: RunRecord) -> Any:
    from monitor.report.digest import write_digest

    # Mail goes out in its own step (see _email), so a crash between writing and sending is caught up.
    return write_digest(store, settings, period=settings.report.period, run=run, email=False)


def _email(store: Store, settings: Settings, run: RunRecord) -> list[int]:
    """Send this run's digest and any recent one an earlier, killed run wrote but did not send."""
    from monitor.report.delivery import send_digest

    sent: list[int] = []
    for digest_id in pending_deliveries(store):
        if send_digest(store, settings, digest_id):
            sent.append(digest_id)
    run.counts["email"] = {"sent": sent}
    return sent


def pending_deliveries(store: Store) -> list[int]:
    """Digests written by `run` (or the daemon) in the last two weeks and never accepted by the mail server.

    Replayed digests are history, not news: they are never mailed.
    """
    since = utcnow() - RESEND_WINDOW
    with store.session() as s:
        rows = s.execute(
            select(Digest.id)
            .join(Run, Run.id == Digest.run_id)
            .where(
                Digest.sent_at.is_(None),
                Digest.created_at >= since,
                Run.command.in_(("run", "daemon:digest")),
            )
            .order_by(Digest.period_start, Digest.id)
        ).scalars()
        return list(rows)
