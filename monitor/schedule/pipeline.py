"""One pipeline: the steps `monitor run`, `retest`, `replay` and `judge` take, and `run_once` (monitor run).

claims -> fetch -> relevance -> judge -> verdicts -> report -> email -> webhooks. Every stage commits its
own work in small transactions and skips what is already done (fetch marks, relevance marks, assessment
cache keys, one digest per period, `sent_at`, webhook posts), so a run killed anywhere is finished by the
next one without losing or doubling anything. `Steps` runs each step with its test pause points, a progress
save, and the stop (SIGTERM/SIGINT) and lock checks; `assess` is the relevance-then-judge middle every command
shares; `judge_step` is the one budget-and-stop policy. The commands differ only in which steps they
take and for which claims or period (retest.py, replay.py, judging.py).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from monitor.config import Settings
from monitor.errors import BudgetExhausted, JudgeError, LockHeld
from monitor.schedule.lock import RunLock, locked_run
from monitor.schedule.signals import Interrupted, StopFlag
from monitor.store.db import Store
from monitor.store.digests import period_keys, unsent_digests
from monitor.store.models import utcnow
from monitor.store.runs import (
    RunRecord,
    StageCounts,
    StageNotes,
    partial_on_failure,
    partial_results,
    run_status,
    save_progress,
)
from monitor.testhooks import pause_at

if TYPE_CHECKING:
    from monitor.claims.changes import ImportReport
    from monitor.judge.base import Judge
    from monitor.judge.work import JudgeSummary
    from monitor.relevance import RelevanceSummary
    from monitor.report.period import Period
    from monitor.report.research import DigestAsks
    from monitor.sources.ingest import FetchSummary
    from monitor.verdicts.rollup import OutcomeRun, VerdictRun

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
    progress: bool = False  # on stderr for fetch, relevance and judge: bars at a terminal, else lines
    # Which pending pairs to judge: "all", or "period": those of papers published from the first day of
    # the period the digest reports. None: "period" when fetching the shipped sample (the quickstart:
    # a digest of its last week in a minute, not the whole sample judged; docs/operations.md), else "all".
    judge_scope: Literal["all", "period"] | None = None


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
    posted: list[int] = field(default_factory=list)  # digests posted to a webhook
    abandoned: list[int] = field(default_factory=list)
    seconds: float = 0.0


class Steps:
    """Runs named steps in order: pause hooks, stop checks and progress saves around each, and records
    on the run what each step's stage returned (StageCounts, StageNotes), or carried on failing.

    `run` is None where a command records no run (the relevance part of `monitor judge`).
    """

    def __init__(
        self, store: Store, run: RunRecord | None, stop: StopFlag, lock: RunLock | None = None
    ) -> None:
        self.store, self.run, self.stop, self.lock = store, run, stop, lock

    def __call__(self, name: str, work: Callable[[], Any], shown: Callable[[Any], None] | None = None) -> Any:
        """Run `work`; `shown` gets its result before the stop check, so what finished is printed."""
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
        self.check(name)
        return result

    def check(self, after: str) -> None:
        if self.lock is not None and self.lock.lost:
            raise LockHeld(f"the run lock was taken over by another run during {after}; stopping")
        self.stop.check(after)


@dataclass
class Assess:
    """Which pairs `assess` picks and judges, and how: what run, retest and replay differ in."""

    again: str  # the command that goes on after a stop or a spent budget
    provider: str | None = None  # local | openai; None: settings.judge.provider
    claim_ids: list[str] | None = None
    since: dt.date | None = None
    force: bool = False
    retry_parked: bool = False
    progress: bool = False
    spent: int = 0  # judge tokens this run spent already (replay judges once per period)
    judge: Judge | None = None  # made on first need and kept: loading the embedded model takes a while

    def judge_for(self, settings: Settings) -> Judge:
        from monitor.judge.factory import make_judge

        if self.judge is None:
            self.judge = make_judge(settings, self.provider)
        return self.judge


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
    if opts.report and settings.report.webhooks:
        from monitor.report.webhooks import resolve_hooks

        resolve_hooks(settings)  # a bad webhook is exit 2 before anything is fetched or paid for
    with locked_run(store, settings, opts.command, stop.event, lock) as (run, held, abandoned):
        outcome = RunOutcome(run_id=run.id, status="running", abandoned=abandoned)
        _pipeline(store, settings, opts, run, Steps(store, run, stop, held), outcome)
    outcome.counts, outcome.tokens = dict(run.counts), run.tokens
    outcome.status = run_status(store, outcome.run_id)
    outcome.seconds = round(time.monotonic() - started, 2)
    return outcome


def _pipeline(
    store: Store, settings: Settings, opts: RunOptions, run: RunRecord, step: Steps, outcome: RunOutcome
) -> None:
    if opts.import_claims:
        step("claims", lambda: sync_claims(store, settings))
    if opts.fetch:
        window = {"since": opts.since, "until": opts.until, "progress": opts.progress}
        step("fetch", lambda: fetch_step(store, settings, opts.source, **window))
    # On a spent token budget (BudgetExhausted) or a judge that answered nothing (JudgeError), what
    # was judged is kept and verdicts and the digest wait for a run that can finish judging, so a
    # digest is never frozen on half the evidence.
    period = _scoped_period(store, settings, opts)
    scope = JudgeScope(period.key, period.start) if period is not None else None
    if scope is not None:
        run.record(scope)
    if opts.report and period is None:
        from monitor.report.digest import choose_period

        period = choose_period(store, settings.report.period)  # the papers are in: judging moves it not
    if period is not None:  # before judging: what it spends is the digest's cost even if it stops there
        run.record(DigestPeriod(period.key))
    plan = Assess(again="monitor run", provider=opts.judge, progress=opts.progress)
    plan.since = scope.judged_from if scope is not None else None
    assess(step, store, settings, plan)
    if scope is not None:
        scope.count_unjudged(store, settings, plan.judge_for(settings))
        run.record(scope)
    # The verdicts step settles the digest's dates too, on its one load of the evidence.
    report_period = period if opts.report else None
    verdicts = step("verdicts", lambda: verdicts_step(store, settings, run, period=report_period))
    if period is None or not opts.report:
        return
    settled = step("outcomes", lambda: outcomes_step(store, settings, run.id, period, verdicts.outcomes))
    asked = step("ask", lambda: ask_step(store, settings, run.id, period))
    digest = step("report", lambda: report_step(store, settings, run.id, period, asked))
    outcome.digest_id = digest.digest_id
    outcome.digest_paths = [str(p) for p in digest.paths.values()]
    email = settings.report.email if opts.email is None else opts.email
    deliver(step, store, settings, outcome, email, SettledPeriods(store, settings, run.id, [settled]))
    check_final(digest)


def deliver(
    step: Steps, store: Store, settings: Settings, outcome: RunOutcome, email: bool, settled: SettledPeriods
) -> None:
    """Mail the digests due (with `email`), then post them to the configured webhooks: a failure of one
    does not keep the other from going out; DeliveryError (8) after both were tried. `settled`: what
    this run's outcomes step settled, read as it is; another digest's period is settled once first."""
    from monitor.report.delivery import DeliveryError, raise_failures

    failures: list[DeliveryError] = []
    if email:
        try:
            outcome.emailed = step("email", lambda: email_step(store, settings, settled=settled)).digest_ids
        except DeliveryError as exc:
            failures.append(exc)
    if settings.report.webhooks:
        try:
            outcome.posted = step("webhooks", lambda: webhook_step(store, settings, settled)).digest_ids
        except DeliveryError as exc:
            failures.append(exc)
    raise_failures(failures)


class SettledPeriods:
    """The digest periods whose outcomes this run settled on the evidence as it still is (its outcomes
    step): mail and webhooks read those as they are. A digest of another period they deliver (an
    earlier run's, not yet sent; or one delivered on its own) has its period settled here first, once,
    and only when it is about to be read: the readers never settle (report/gather.py)."""

    def __init__(
        self, store: Store, settings: Settings, run_id: int | None, done: list[OutcomeRun] | None = None
    ) -> None:
        self.store, self.settings, self.run_id = store, settings, run_id
        self.days = [frozenset(run.days) for run in done or []]

    def ensure(self, period: Period | None) -> None:
        """Settle `period`'s outcomes unless this run did (None: no digest of it is read)."""
        if period is None or frozenset(period.verdict_days) in self.days:
            return
        from monitor.report.gather import settle_period

        settle_period(self.store, self.settings, period, self.run_id)
        self.days.append(frozenset(period.verdict_days))


def check_final(digest: Any) -> None:
    """Raise JudgeError (6) when the digest just written rests on a minority of its period's pairs
    (most failed or were parked): it is written and says so, but not mailed or posted, and the run fails, so a
    judge that answered almost nothing never passes for a quiet week (docs/operations.md)."""
    if digest.stats.get("final", True):
        return
    tally = digest.stats["judging"]
    screen = f", {tally['awaiting_screen']} awaiting the LLM screen" if tally.get("awaiting_screen") else ""
    raise JudgeError(
        f"the judge answered only {tally['judged']} of the {tally['pairs']} candidate pairs of "
        f"{digest.period.key} ({tally['failed']} failed, {tally['parked']} parked{screen}): the digest says "
        "so and is not mailed or posted; a run with a working judge rewrites it "
        "(`monitor retest` asks parked pairs again)"
    )


@dataclass
class DigestPeriod:
    """The period whose digest `monitor run` writes, recorded on the run as `period` before it judges,
    so the digest's cost line counts every token the run spent for it, failed and invalid answers
    included, even when the run stopped before writing it (store/digests.py `period_runs`)."""

    stage: ClassVar[str] = "period"

    key: str

    def stage_counts(self) -> dict[str, Any]:
        return {"key": self.key}


@dataclass
class JudgeScope:
    """Which papers `monitor run` judged (`RunOptions.judge_scope`): recorded on the run as `scope`,
    with the candidate pairs (and papers) published earlier that were left pending."""

    stage: ClassVar[str] = "scope"

    period: str
    judged_from: dt.date
    unjudged: tuple[int, int] | None = None  # (pairs, papers), counted after judging

    def count_unjudged(self, store: Store, settings: Settings, judge: Judge) -> None:
        """The pairs published earlier left pending for the judge that ran (not those below a
        triage-only judge's cut: not its work)."""
        from monitor.judge.work import count_unjudged

        self.unjudged = count_unjudged(store, settings, judge, self.judged_from - dt.timedelta(days=1))

    def stage_counts(self) -> dict[str, Any]:
        counts: dict[str, Any] = {"period": self.period, "judged_from": self.judged_from.isoformat()}
        if self.unjudged is not None:
            counts |= {"unjudged_pairs": self.unjudged[0], "unjudged_papers": self.unjudged[1]}
        return counts


def _scoped_period(store: Store, settings: Settings, opts: RunOptions) -> Period | None:
    """The period whose papers `monitor run` judges, which its digest then reports (RunOptions.judge_scope);
    None: every pending pair is judged.

    Relevance still scans every paper (its marks are by row, not by day), so the pairs left out stay
    pending for `monitor judge`, which judges them all. Recorded in the run's counts as "scope".
    """
    from monitor.report.digest import reported_period

    scope = opts.judge_scope or ("period" if opts.fetch and opts.source == "sample" else "all")
    if scope == "all" or not opts.report:
        return None
    return reported_period(store, settings.report.period)


def assess(
    step: Steps, store: Store, settings: Settings, plan: Assess
) -> tuple[RelevanceSummary, JudgeSummary]:
    """Relevance, then judging under `judge_step`'s policy, for the claims `plan` names."""
    from monitor.relevance import select_candidates

    run = step.run
    assert run is not None  # judging is always recorded
    picked = step(
        "relevance",
        lambda: select_candidates(
            store,
            settings,
            run.id,
            run.should_stop,
            claim_ids=plan.claim_ids,
            progress=plan.progress,
            since=plan.since,
        ),
    )
    check_screened(picked, settings, plan.again)
    which = {"force": plan.force, "claim_ids": plan.claim_ids, "since": plan.since, "progress": plan.progress}
    judged = step(
        "judge",
        lambda: judge_step(
            store,
            settings,
            plan.judge_for(settings),
            run,
            plan.again,
            plan.spent,
            retry_parked=plan.retry_parked,
            **which,
        ),
    )
    return picked, judged


# --- the steps ----------------------------------------------------------------------------------


def sync_claims(store: Store, settings: Settings) -> ImportReport | StageNotes:
    """Import the claim files, or, when there are none, go on with the claims already stored (and say
    so in the run's warnings)."""
    from monitor.claims.importer import default_paths, import_claims

    # Claims may have been imported by hand (`monitor seeds import FILE`) with no seeds directory
    # configured; then run, retest and replay work with what the store holds.
    if not any(Path(p).exists() for p in default_paths(settings)):
        missing = "no seeds directory or claims file found; using the claims already stored"
        return StageNotes(warnings=[missing])
    return import_claims(store, settings)


def fetch_step(store: Store, settings: Settings, source: str, **window: Any) -> FetchSummary:
    """Fetch from `source`; `window` is since, until and progress."""
    from monitor.sources.ingest import fetch

    return fetch(store, settings, source=source, **window)


def judge_step(
    store: Store,
    settings: Settings,
    judge: Judge,
    run: RunRecord,
    again: str,
    spent: int = 0,
    shown: Callable[[JudgeSummary], None] | None = None,
    **which: Any,
) -> JudgeSummary:
    """Judge what is pending under the one budget-and-stop policy of run, retest, replay and judge.

    Raises as `check_judged` says, or Interrupted (130) when a stop was asked for meanwhile; the
    caller then writes no verdicts or digest, and a rerun resumes where this one stopped.

    `spent`: tokens this run already spent judging (replay judges once per period, and the budget is
    the run's). `shown` gets the summary before any of that raises. `which` goes to `judge_pending`
    (force, claim_ids, since, progress, retry_parked).
    """
    from monitor.judge.runner import judge_pending

    budget = settings.llm.token_budget
    scoped = settings
    if budget is not None and spent:
        left = settings.llm.model_copy(update={"token_budget": max(0, budget - spent)})
        scoped = settings.model_copy(update={"llm": left})
    summary = judge_pending(store, scoped, judge, run.id, run.should_stop, **which)
    if shown is not None:
        shown(summary)
    with partial_on_failure(summary):  # a judge that stops or fails still has its work recorded
        _check_finished(summary, settings, run, again)
    return summary


def _check_finished(summary: JudgeSummary, settings: Settings, run: RunRecord, again: str) -> None:
    """LockHeld for a run that lost its lock, as `check_judged` says, or Interrupted for a stop."""
    if run.lost_lock():  # suspended past the staleness limit and taken over: the taker judges the rest
        raise LockHeld(
            f"the run lock was taken over by another run while judging; stopped before the next call "
            f"({summary.judged} pair(s) judged and kept)"
        )
    check_judged(summary, settings, again)
    if run.should_stop():  # SIGTERM/SIGINT: the judge started no further call; the rest stays pending
        raise Interrupted(f"stopped while judging; finished work is kept, run `{again}` again to go on")


def check_screened(picked: RelevanceSummary, settings: Settings, again: str) -> None:
    """Raise when the LLM screen did not finish, as `check_judged` does for the judge: BudgetExhausted (7)
    for a spent budget, JudgeError (6) for a server that refused or answered none of its calls. The
    pairs it did not answer stay pending, and verdicts and digests wait: a screen that failed must never
    read as "no paper bears on a claim"."""
    screened = picked.screened
    if screened is None:
        return
    if screened.stopped and screened.stopped.startswith("token budget"):
        raise BudgetExhausted(
            f"{screened.stopped} while screening: {screened.pending_left} pair(s) wait for the screen; "
            f"run `{again}` again to go on"
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


def check_judged(summary: JudgeSummary, settings: Settings, again: str) -> None:
    """Raise when judging did not finish: BudgetExhausted (7) for a spent token budget, JudgeError (6)
    when the judge answered none of the pairs it was asked. What was judged is kept either way; verdicts
    and digests must wait, so they are never computed on half the evidence (docs/operations.md).
    """
    if summary.budget_exhausted:
        raise BudgetExhausted(
            f"token budget {settings.llm.token_budget} reached: {summary.judged} pair(s) judged and kept, "
            f"{summary.not_attempted} left pending; run `{again}` again to go on"
        )
    if summary.judge_unavailable:  # e.g. nothing listens at base_url: stop before verdicts and digest
        raise JudgeError(summary.unavailable_reason)
    if summary.errors and not summary.judged:
        first = f"; first error: {summary.error_messages[0]}" if summary.error_messages else ""
        raise JudgeError(f"the judge answered none of {summary.errors} pair(s){first}")


def verdicts_step(
    store: Store,
    settings: Settings,
    run: RunRecord,
    as_of: dt.date | None = None,
    period: Period | None = None,
) -> VerdictRun:
    """The verdicts at `as_of`; with `period`, the run's digest's outcomes settled on the same load of
    the evidence (`VerdictRun.outcomes`, which `outcomes_step` then takes as they are)."""
    from monitor.verdicts.rollup import compute_verdicts

    days = period.verdict_days if period is not None else ()
    return compute_verdicts(store, settings, as_of=as_of, run_id=run.id, digest_days=days)


def outcomes_step(
    store: Store,
    settings: Settings,
    run_id: int | None,
    period: Period,
    settled: OutcomeRun | None = None,
) -> OutcomeRun:
    """The verdicts stage's outcomes at the dates the digest of `period` shows, computed where the
    evidence changed since they were stored: the one settle of a run, before the ask step, the digest,
    its mail and its webhooks read them (none of them computes one); recorded on the run as `outcomes`.
    `settled`: what the verdicts step just before settled at those dates (`VerdictRun.outcomes`),
    nothing having changed since, taken as it is rather than loading the evidence again."""
    from monitor.report.gather import settle_period

    if settled is not None and set(settled.days) == set(period.verdict_days):
        return settled
    return settle_period(store, settings, period, run_id)


def ask_step(store: Store, settings: Settings, run_id: int | None, period: Period) -> DigestAsks:
    """The LLM work the digest of `period` shows (proposed wordings, research questions), before it is
    written, so the digest is a pure reader; recorded on the run as `asks`."""
    from monitor.report.asks import ask_before_digest

    return ask_before_digest(store, settings, period, run_id)


def report_step(
    store: Store,
    settings: Settings,
    run_id: int | None,
    period: Period,
    asked: DigestAsks | None = None,
    formats: list[str] | None = None,
) -> Any:
    """Write the digest of `period` with what `ask_step` got; never mails it."""
    from monitor.report.digest import write_digest

    # Mail goes out in its own step (email_step), so a crash between writing and sending is caught up.
    return write_digest(store, settings, period=period, run_id=run_id, asked=asked, formats=formats)


@dataclass
class Emailed:
    """The digests `email_step` mailed: recorded on the run as `email` (printed by `monitor run`)."""

    stage: ClassVar[str] = "email"

    digest_ids: list[int]
    periods: list[str]

    def stage_counts(self) -> dict[str, Any]:
        return {"sent": len(self.digest_ids), "periods": self.periods}


@dataclass
class Posted:
    """The digests `webhook_step` posted: recorded on the run as `webhooks` (printed by `monitor run`),
    with a warning for each post not made again because an earlier one may have been delivered."""

    stage: ClassVar[str] = "webhooks"

    digest_ids: list[int]
    periods: list[str]
    unconfirmed: list[str] = field(default_factory=list)

    def stage_counts(self) -> dict[str, Any]:
        counts: dict[str, Any] = {"posted": len(self.digest_ids), "periods": self.periods}
        return counts | ({"unconfirmed": len(self.unconfirmed)} if self.unconfirmed else {})

    def stage_notes(self) -> StageNotes:
        return StageNotes(warnings=list(self.unconfirmed))


def email_step(
    store: Store,
    settings: Settings,
    digest_ids: list[int] | None = None,
    force: bool = False,
    settled: SettledPeriods | None = None,
) -> Emailed:
    """The one place a digest is mailed from. Sends `digest_ids` (`monitor report --email`; `force`
    resends one already sent), or else this run's digest and any recent one an earlier, killed run
    wrote but did not send. A digest's period is settled before it is read unless `settled` has it."""
    from monitor.report.delivery import mail_due, send_digest

    settled = settled or SettledPeriods(store, settings, None)
    sent: list[int] = []
    for digest_id in pending_deliveries(store) if digest_ids is None else digest_ids:
        settled.ensure(mail_due(store, digest_id, force))
        if send_digest(store, settings, digest_id, force=force):
            sent.append(digest_id)
    with store.session() as s:
        return Emailed(sent, period_keys(s, sent))


def webhook_step(store: Store, settings: Settings, settled: SettledPeriods | None = None) -> Posted:
    """Post this run's digest, and any recent one not yet posted to every webhook, to report.webhooks.
    DeliveryError (8) after all were tried, carrying what was posted. A digest's period is settled
    before it is read unless `settled` has it."""
    from monitor.report.delivery import DeliveryError, raise_failures
    from monitor.report.webhooks import notify_digest, posts_due, unconfirmed_posts

    settled = settled or SettledPeriods(store, settings, None)
    since = utcnow() - RESEND_WINDOW
    with store.session() as s:
        due = unsent_digests(s, since, ("run", "daemon:digest"), mailed_too=True)
    posted: list[int] = []
    unconfirmed: list[str] = []
    failures: list[DeliveryError] = []
    for digest_id in due:
        try:
            settled.ensure(posts_due(store, settings, digest_id))
            if notify_digest(store, settings, digest_id):
                posted.append(digest_id)
            unconfirmed += unconfirmed_posts(store, settings, digest_id)
        except DeliveryError as exc:  # the next digest is still tried
            failures.append(exc)
    with store.session() as s:
        result = Posted(posted, period_keys(s, posted), unconfirmed)
    with partial_on_failure(result):
        raise_failures(failures)
    return result


def report_sends_or_spends(settings: Settings, email: bool, notify: bool) -> bool:
    """Whether `monitor report` mails, posts or may call an LLM (proposed wordings, research questions):
    then it takes the run lock, as every command that sends or spends does, so a second report or a
    run beside it cannot mail or post the digest again, or pay for the same answers twice."""
    return email or notify or settings.llm_configured()


def deliver_digest(
    store: Store,
    settings: Settings,
    run: RunRecord | None,
    digest_id: int,
    email: bool,
    notify: bool,
    force: bool,
    settled: SettledPeriods | None = None,
) -> tuple[bool | None, list[str] | None]:
    """`monitor report --email/--notify`: mail and post one digest; (sent, the webhooks posted to), None
    where not asked. `settled`: what the run's outcomes step settled (else its period is settled once).
    A failure of one does not keep the other from going out; DeliveryError (8) after both were tried."""
    from monitor.report.delivery import DeliveryError, raise_failures
    from monitor.report.webhooks import notify_digest, posts_due, unconfirmed_posts

    settled = settled or SettledPeriods(store, settings, run.id if run is not None else None)
    sent: bool | None = None
    posted: list[str] | None = None
    failures: list[DeliveryError] = []
    if email:
        try:
            emailed = email_step(store, settings, [digest_id], force=force, settled=settled)
            if run is not None:
                run.record(emailed)
            sent = emailed.digest_ids != []
        except DeliveryError as exc:
            failures.append(exc)
    if notify:
        try:
            settled.ensure(posts_due(store, settings, digest_id, force))
            posted = notify_digest(store, settings, digest_id, force=force)
            if run is not None:
                with store.session() as s:
                    done = [digest_id] if posted else []
                    left = [] if force else unconfirmed_posts(store, settings, digest_id)
                    run.record(Posted(done, period_keys(s, done), left))
        except DeliveryError as exc:
            failures.append(exc)
    raise_failures(failures)
    return sent, posted


def pending_deliveries(store: Store) -> list[int]:
    """Digests written by `run` (or the daemon) in the last two weeks and never accepted by the mail server.

    Replayed digests are history, not news: they are never mailed.
    """
    since = utcnow() - RESEND_WINDOW
    with store.session() as s:
        return unsent_digests(s, since, ("run", "daemon:digest"))
