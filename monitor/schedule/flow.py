"""The flow: every stage a command can run, declared once, in order, and the job each stage gets.

claims -> fetch -> relevance -> screen -> judge (with the second look) -> verdicts -> outcomes -> ask
-> report -> deliver

A command is a selection of these stages and a scope: `monitor run` takes them all (pipeline.py),
`replay` fetch to report once per period (replay.py), `retest` claims to verdicts for some claims
(retest.py), `report` outcomes to deliver for one period (reporting.py), `judge` claims to judge
(judging.py). The command builds one `Job` (the store, the settings, the run, the stop signal, the
scope, the judge and the token budget) and a `Flow` runs the stages it names, in the declared order,
each as one of `Steps`: its test pause points (`<stage>:before`, `<stage>:after`), a record of what
it returned on the run, a progress save, and then once the checks that end a run early: a lost run
lock (75), the stage's own policy (a spent budget 7, a judge or screen that answered nothing 6) and
a stop request (130). What a stage did before it failed is recorded too (`partial_on_failure`).

Every stage commits its own work in small transactions and skips what is already done (fetch marks,
relevance marks, assessment cache keys, one digest per period, `sent_at`, webhook posts), so a run
killed anywhere is finished by the next one without losing or doubling anything. On a spent token
budget or a judge that answered nothing, what was judged is kept and the later stages wait for a run
that can finish judging, so a digest is never written on half the evidence.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor.config import Settings
from monitor.errors import BudgetExhausted, JudgeError, LockHeld
from monitor.llm.engine import TokenBudget
from monitor.schedule.lock import RunLock
from monitor.schedule.signals import StopFlag
from monitor.store.db import Store
from monitor.store.runs import RunRecord, StageCounts, StageNotes, partial_results, save_progress
from monitor.testhooks import pause_at

if TYPE_CHECKING:
    from monitor.judge.base import Judge
    from monitor.judge.work import JudgeSummary
    from monitor.relevance.screen import ScreenSummary
    from monitor.report.period import Period

Show = Callable[[str, Any], None]  # a stage's name and its result, as soon as it is ready


class Steps:
    """Runs named steps: pause hooks around each, its result recorded on the run (StageCounts,
    StageNotes) or what it carried on failing, a progress save, then the checks (`check`).

    `run` is None where a command records no run (the relevance part of `monitor judge`).
    """

    def __init__(
        self, store: Store, run: RunRecord | None, stop: StopFlag, lock: RunLock | None = None
    ) -> None:
        self.store, self.run, self.stop, self.lock = store, run, stop, lock

    def __call__(
        self,
        name: str,
        work: Callable[[], Any],
        shown: Callable[[Any], None] | None = None,
        policy: Callable[[Any], None] | None = None,
    ) -> Any:
        """Run `work`; `shown` gets its result before the checks, so what finished is printed, and
        `policy` (the stage's own check of its result) runs between the lock and the stop checks."""
        pause_at(f"{name}:before")
        started = time.monotonic()
        try:
            result = work()
        except BaseException as exc:
            for partial in partial_results(exc):  # what the stage did before it failed
                if self.run is not None:
                    self.run.record(partial)
            raise
        if self.run is not None:
            if isinstance(result, StageCounts | StageNotes):  # a stage returns its counts; recorded here
                self.run.record(result)
            self.run.counts.setdefault("seconds", {})[name] = round(time.monotonic() - started, 2)
            save_progress(self.store, self.run)
        if shown is not None:
            shown(result)
        pause_at(f"{name}:after")
        self.check(name, lambda: policy(result) if policy is not None else None)
        return result

    def check(self, after: str, policy: Callable[[], None] | None = None) -> None:
        """LockHeld (75) when another run took the lock over (read now: a run suspended past the
        staleness limit learns it before more work), then `policy`, then Interrupted (130) on a stop."""
        if self.lock is not None and not self.lock.holds():
            raise LockHeld(
                f"the run lock was taken over by another run during {after}; stopped, finished work is kept"
            )
        if policy is not None:
            policy()
        self.stop.check(after)


@dataclass
class Scope:
    """Which claims, papers and period the stages work on: what the commands differ in, besides which
    stages they take."""

    claim_ids: list[str] | None = None  # None: every active claim
    since: dt.date | None = None  # screen and judge only the pairs of papers published from this day
    period: Period | None = None  # the digest's: verdicts settle its dates, outcomes..report write it
    as_of: dt.date | None = None  # verdicts as of this day (None: today)
    force: bool = False  # judge again what is cached
    retry_parked: bool = False  # ask the pairs parked after failing again


@dataclass
class Fetch:
    """What the fetch stage reads: a source (api | rss | sample | a snapshot file) and a window."""

    source: str = "api"
    since: dt.date | None = None
    until: dt.date | None = None


@dataclass
class Delivery:
    """Where the deliver stage sends: mail, the webhooks; the digest just written only (else every
    recent one not yet delivered), and again what went out before with `force`."""

    email: bool = False
    notify: bool = False
    this_digest: bool = False
    force: bool = False


@dataclass
class Job:
    """What every stage of one command gets, built once by the command: the store and the settings
    (read, never rewritten), the run the stages' rows name and its stop signal, the scope, the judge
    (made on first need, once: loading the embedded model takes a while) and the run's token budget."""

    store: Store
    settings: Settings
    run: RunRecord | None
    again: str  # the command that goes on after a stop or a spent budget
    should_stop: Callable[[], bool]
    budget: TokenBudget  # the run's: the judge stage spends from it, and the second look what it leaves
    scope: Scope = field(default_factory=Scope)
    provider: str | None = None  # local | openai; None: settings.judge.provider
    judge: Judge | None = None
    progress: bool = False
    fetch: Fetch = field(default_factory=Fetch)
    delivery: Delivery = field(default_factory=Delivery)
    formats: list[str] | None = None  # the digest's formats (None: as configured)

    @property
    def run_id(self) -> int | None:
        return self.run.id if self.run is not None else None

    def judge_in_use(self) -> Judge:
        if self.judge is None:
            from monitor.judge.factory import make_judge

            self.judge = make_judge(self.settings, self.provider)
        return self.judge


def make_job(
    store: Store,
    settings: Settings,
    run: RunRecord | None,
    stop: StopFlag,
    again: str,
    lock: RunLock | None = None,
    **given: Any,
) -> Job:
    """A job with the whole of `llm.token_budget` and the run's stop signal (its stop flag or a lost
    lock), or, for a part a command does not record, the flag's and the lock's."""

    def should_stop() -> bool:
        if run is not None:
            return run.should_stop()
        return stop.requested or (lock is not None and lock.lost)

    return Job(store, settings, run, again, should_stop, TokenBudget.of(settings.llm), **given)


# --- the stages -----------------------------------------------------------------------------------
# Each takes the job and what the stages before it returned in this flow, and returns what it did.


def sync_claims(job: Job, _done: dict[str, Any]) -> Any:
    """Import the claim files, or, when there are none, go on with the claims already stored (and say
    so in the run's warnings): claims imported by hand (`monitor seeds import FILE`) with no seeds
    directory configured are what run, retest and replay work with."""
    from monitor.claims.importer import default_paths, import_claims

    if not any(Path(p).exists() for p in default_paths(job.settings)):
        return StageNotes(
            warnings=["no seeds directory or claims file found; using the claims already stored"]
        )
    return import_claims(job.store, job.settings)


def fetch(job: Job, _done: dict[str, Any]) -> Any:
    from monitor.sources.ingest import fetch as fetch_source

    order = job.fetch
    window = {"since": order.since, "until": order.until, "progress": job.progress}
    return fetch_source(job.store, job.settings, source=order.source, **window)


def relevance(job: Job, _done: dict[str, Any]) -> Any:
    """The candidate pairs of the scope's claims; the LLM screen is the next stage."""
    from monitor.relevance import select_candidates

    claims = job.scope.claim_ids
    return select_candidates(
        job.store, job.settings, job.run_id, job.should_stop, claims, screen=False, progress=job.progress
    )


def screen(job: Job, _done: dict[str, Any]) -> ScreenSummary | None:
    """The LLM screen over the pending pairs (None without relevance.screen = "llm")."""
    from monitor.relevance import screen_candidates

    scope = job.scope
    return screen_candidates(
        job.store, job.settings, job.run_id, job.should_stop, scope.claim_ids, scope.since
    )


def check_screened(job: Job, screened: ScreenSummary | None) -> None:
    """Raise when the LLM screen did not finish, as `check_judged` does for the judge: BudgetExhausted (7)
    for a spent budget, JudgeError (6) for a server that refused or answered none of its calls. The
    pairs it did not answer stay pending, and verdicts and digests wait: a screen that failed must never
    read as "no paper bears on a claim"."""
    if screened is None:
        return
    if screened.stopped and screened.stopped.startswith("token budget"):
        raise BudgetExhausted(
            f"{screened.stopped} while screening: {screened.pending_left} pair(s) wait for the screen; "
            f"run `{job.again}` again to go on"
        )
    if screened.unavailable:  # nothing listens, or the server keeps failing: as the judge says it
        waiting = f"{screened.pending_left} pair(s) wait for it"
        raise JudgeError(f"{screened.unavailable} (the LLM screen; {waiting})")
    if screened.failed_papers and not screened.papers:
        first = f"; first error: {screened.errors[0][:200]}" if screened.errors else ""
        raise JudgeError(
            f"the LLM screen answered none of the {screened.failed_papers} paper(s) it was asked about"
            f"{first}; {screened.pending_left} pair(s) wait for it"
        )


def judge(job: Job, _done: dict[str, Any]) -> JudgeSummary:
    """Judge the scope's pending pairs, then their second looks, within what the run has left of its
    token budget; what it spent is the budget's from then on (replay judges once per period)."""
    from monitor.judge.runner import judge_pending

    scope, budget = job.scope, job.budget
    summary = judge_pending(
        job.store,
        job.settings,
        job.judge_in_use(),
        job.run_id,
        job.should_stop,
        force=scope.force,
        claim_ids=scope.claim_ids,
        since=scope.since,
        progress=job.progress,
        retry_parked=scope.retry_parked,
        budget=budget,
    )
    job.budget = budget.after(summary.tokens)
    return summary


def check_judged(job: Job, summary: JudgeSummary) -> None:
    """Raise when judging did not finish: BudgetExhausted (7) for a spent token budget, JudgeError (6)
    when the judge answered none of the pairs it was asked. What was judged is kept either way; verdicts
    and digests must wait, so they are never computed on half the evidence (docs/operations.md). A batch
    whose pairs are still at the Batch API says so: they are neither judged nor left pending."""
    if summary.budget_exhausted:
        done = f"{summary.judged} pair(s) judged and kept"
        if summary.submitted and summary.batches_waiting:  # `--batch` without `--wait` collecting it
            sent = f"{summary.submitted} pair(s) submitted in a batch (`{job.again}` collects it once done)"
            done = f"{done}, {sent}" if summary.judged else sent
        raise BudgetExhausted(
            f"token budget {job.budget.limit} reached: {done}, {summary.not_attempted} left pending; "
            f"run `{job.again}` again to go on"
        )
    if summary.judge_unavailable:  # e.g. nothing listens at base_url: stop before verdicts and digest
        raise JudgeError(summary.unavailable_reason)
    if summary.errors and not summary.judged:
        first = f"; first error: {summary.error_messages[0]}" if summary.error_messages else ""
        raise JudgeError(f"the judge answered none of {summary.errors} pair(s){first}")


def verdicts(job: Job, _done: dict[str, Any]) -> Any:
    """The verdicts as of the scope's day; with a period, the digest's outcomes settled on the same load
    of the evidence (`VerdictRun.outcomes`, which the outcomes stage takes as they are)."""
    from monitor.verdicts.rollup import compute_verdicts

    period = job.scope.period
    days = period.verdict_days if period is not None else ()
    return compute_verdicts(job.store, job.settings, job.scope.as_of, job.run_id, digest_days=days)


def outcomes(job: Job, done: dict[str, Any]) -> Any:
    """The verdicts stage's outcomes at the dates the digest shows, computed where the evidence changed
    since they were stored: the one settle of a run, before the ask stage, the digest, its mail and
    its webhooks read them (none of them computes one). What the verdicts stage of this flow settled at
    those dates, nothing having changed since, is taken as it is rather than loading the evidence again."""
    from monitor.report.gather import settle_period

    period = _period(job)
    settled = done["verdicts"].outcomes if "verdicts" in done else None
    if settled is not None and set(settled.days) == set(period.verdict_days):
        return settled
    return settle_period(job.store, job.settings, period, job.run_id)


def ask(job: Job, _done: dict[str, Any]) -> Any:
    """The LLM work the digest shows (proposed wordings, research questions), before it is written, so
    the digest is a pure reader."""
    from monitor.report.asks import ask_before_digest

    return ask_before_digest(job.store, job.settings, _period(job), job.run_id)


def report(job: Job, done: dict[str, Any]) -> Any:
    """Write the digest with what the ask stage got; never mails it (the deliver stage does, so a crash
    between writing and sending is caught up)."""
    from monitor.report.digest import write_digest

    period, asked = _period(job), done.get("ask")
    return write_digest(
        job.store, job.settings, period=period, run_id=job.run_id, asked=asked, formats=job.formats
    )


def deliver(job: Job, done: dict[str, Any], step: Steps) -> Any:
    """Mail and post the digests due, each channel one step (`email`, `webhooks`); a failure of one does
    not keep the other from going out (report/channels.py). Reads the outcomes this flow settled as they
    are; another digest's period is settled once first."""
    from monitor.report.channels import SettledPeriods, channels
    from monitor.report.channels import deliver as deliver_digests

    order = job.delivery
    settled = SettledPeriods(
        job.store, job.settings, job.run_id, [done["outcomes"]] if "outcomes" in done else []
    )
    only = [done["report"].digest_id] if order.this_digest else None
    chosen = channels(job.settings, order.email, order.notify)
    return deliver_digests(job.store, chosen, settled, only, order.force, step)


def _period(job: Job) -> Period:
    period = job.scope.period
    assert period is not None, "the report stages need the scope's period"
    return period


@dataclass(frozen=True)
class Stage:
    """A stage of the flow: its work, and its own check of what it returned (raises to end the run)."""

    name: str
    work: Callable[..., Any]
    policy: Callable[[Job, Any], None] | None = None
    steps_itself: bool = False  # runs its parts as steps of their own (deliver: one per channel)


STAGES: tuple[Stage, ...] = (
    Stage("claims", sync_claims),
    Stage("fetch", fetch),
    Stage("relevance", relevance),
    Stage("screen", screen, check_screened),
    Stage("judge", judge, check_judged),
    Stage("verdicts", verdicts),
    Stage("outcomes", outcomes),
    Stage("ask", ask),
    Stage("report", report),
    Stage("deliver", deliver, steps_itself=True),
)
_BY_NAME = {stage.name: stage for stage in STAGES}
JUDGING = ("relevance", "screen", "judge")
REPORTING = ("outcomes", "ask", "report", "deliver")


class Flow:
    """Runs a selection of the stages for one job, in the declared order; `done` keeps what each returned."""

    def __init__(self, job: Job, step: Steps, show: Show | None = None) -> None:
        self.job, self.step, self.show = job, step, show
        self.done: dict[str, Any] = {}

    def run(self, *names: str) -> dict[str, Any]:
        """Run the named stages in the order STAGES declares (an unknown name is a programming error)."""
        unknown = set(names) - set(_BY_NAME)
        if unknown:
            raise ValueError(f"no such stage: {', '.join(sorted(unknown))}")
        for stage in (s for s in STAGES if s.name in names):
            self.done[stage.name] = self._one(stage)
        return self.done

    def _one(self, stage: Stage) -> Any:
        job, done = self.job, self.done
        if stage.steps_itself:
            return stage.work(job, done, self.step)
        shown = (lambda result: self.show(stage.name, result)) if self.show is not None else None
        policy = (lambda result: stage.policy(job, result)) if stage.policy is not None else None
        return self.step(stage.name, lambda: stage.work(job, done), shown=shown, policy=policy)
